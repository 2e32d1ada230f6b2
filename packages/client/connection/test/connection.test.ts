// ctx.remote and ctx.connection against a scripted HTTP server speaking the host's wire format
// (JSON methods, SSE with `id: <seq>`). The real host never sends a duplicate or skips a seq on
// purpose, so those edges are scripted here; the browser tests run the same code against the
// real `dsh web`.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Context } from 'cordis'
import { Connection, DELTA_PUBLISH_MS, Remote, RemoteError } from '../src/index.ts'

interface Script {
  /** Answers one session stream request (the n-th, with its `after`). */
  session?: (res: ServerResponse, n: number, after: number | undefined) => void
  host?: (res: ServerResponse, n: number) => void
}

let server: Server | undefined
let root: Context | undefined
const requests: string[] = []

afterEach(async () => {
  await root?.fiber.dispose()
  root = undefined
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  server = undefined
  requests.length = 0
})

const event = (seq: number, type = 'assistant/chunk') =>
  `id: ${seq}\ndata: ${JSON.stringify({ seq, type, time: 0, data: { n: seq } })}\n\n`
const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' })

async function start(script: Script): Promise<Context> {
  let sessionN = 0
  let hostN = 0
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url!, 'http://x')
    requests.push(url.pathname + url.search)
    if (url.pathname === '/api/events/host')
      return script.host ? script.host(res, hostN++) : (sse(res), res.write('data: {"type":"hello"}\n\n'))
    if (url.pathname.startsWith('/api/events/session/')) {
      const after = url.searchParams.get('after')
      return script.session?.(res, sessionN++, after === null ? undefined : Number(after))
    }
    if (url.pathname === '/api/sessions.list') return res.end(JSON.stringify({ result: { sessions: [], total: 0 } }))
    if (url.pathname === '/api/sessions.cancel') {
      res.writeHead(404, { 'content-type': 'application/json' })
      return res.end(
        JSON.stringify({ error: { code: 'SESSION_NOT_FOUND', message: 'no session "x"', field: 'sessionId' } }),
      )
    }
    res.writeHead(404, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ error: { code: 'UNKNOWN_METHOD', message: 'no such method' } }))
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`
  // The two services as @dsh/client-runtime's createRuntime() starts them (remote first).
  root = new Context()
  await root.plugin(Remote, { baseUrl: base })
  await root.plugin(Connection, { retryMs: 20, maxRetryMs: 80, lingerMs: 50 })
  return root
}

describe('ctx.remote', () => {
  it('returns results, maps host errors to RemoteError with code and field, and an unreachable host to NETWORK', async () => {
    const ctx = await start({})
    expect(await ctx.remote.call('sessions.list', {})).toEqual({ sessions: [], total: 0 })
    const failure = await ctx.remote.call('sessions.cancel', { sessionId: 'x' }).catch((e) => e)
    expect(failure).toBeInstanceOf(RemoteError)
    expect(failure).toMatchObject({
      code: 'SESSION_NOT_FOUND',
      status: 404,
      field: 'sessionId',
      message: 'no session "x"',
    })
    server!.closeAllConnections()
    await new Promise((resolve) => server!.close(resolve))
    const offline = await ctx.remote.call('sessions.list', {}).catch((e) => e)
    expect(offline).toMatchObject({ code: 'NETWORK' })
    expect(ctx.connection.state.get()).toBe('offline')
  })
})

describe('ctx.connection.session(id)', () => {
  it('replays, follows, resumes after its last seq on a dropped stream, and drops duplicates', async () => {
    const ctx = await start({
      session(res, n, after) {
        sse(res)
        if (n === 0) {
          for (let seq = 0; seq < 3; seq++) res.write(event(seq))
          res.write('event: status\ndata: {"sessionId":"s1","status":"running","queued":0}\n\n')
          res.end() // dropped mid-turn
        } else {
          // The resumed stream repeats seq 2 (a duplicate) before the new ones.
          for (let seq = after ?? -1; seq < 6; seq++) if (seq >= 0) res.write(event(seq))
          res.write('event: status\ndata: {"sessionId":"s1","status":"idle","queued":0}\n\n')
        }
      },
    })
    const feed = ctx.connection.session('s1')
    await vi.waitFor(() => expect(feed.get().lastSeq).toBe(5), { timeout: 5000 })
    expect(feed.get().events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5])
    expect(requests.filter((r) => r.startsWith('/api/events/session/'))).toEqual([
      '/api/events/session/s1?chunks=runs',
      '/api/events/session/s1?chunks=runs&after=2',
    ])
    await vi.waitFor(() => expect(feed.get()).toMatchObject({ status: 'idle', loaded: true, live: true }))
    feed.release()
  })

  it('expands chunks frames (runs of deltas) into the log events, skips what it holds, and resumes after the last whole frame', async () => {
    const text = (seq: number) => `t${seq} ü`
    // A run of deltas seq..seq+n-1 as the host writes it (`cut`: only the first bytes, a dropped stream).
    const run = (seq: number, n: number, cut?: number) => {
      const frame = `id: ${seq + n - 1}\nevent: chunks\ndata: ${JSON.stringify({ seq, kind: 'reasoning-delta', text: Array.from({ length: n }, (_, i) => text(seq + i)), time: [1000 + seq, ...Array.from({ length: n - 1 }, () => 1)] })}\n\n`
      return cut === undefined ? frame : frame.slice(0, cut)
    }
    const ctx = await start({
      session(res, n) {
        sse(res)
        if (n === 0) {
          res.write(event(0, 'turn/start'))
          res.write(run(1, 4))
          res.end(run(5, 5, 40)) // dropped inside the next run
        } else if (n === 1) {
          // Repeats 3 and 4 inside a run; a malformed run is skipped; then a gap (11 missing).
          res.write(run(3, 5))
          res.write('id: 9\nevent: chunks\ndata: {"seq":8,"kind":"reasoning-delta","text":["a"],"time":[1,2]}\n\n')
          res.write(run(8, 2))
          res.write(event(10))
          res.write(run(12, 2))
        } else {
          res.write(run(11, 3))
          res.write('event: status\ndata: {"sessionId":"s8","status":"idle","queued":0}\n\n')
        }
      },
    })
    const feed = ctx.connection.session('s8')
    const seen: number[] = []
    feed.onEvent((e) => seen.push(e.seq))
    await vi.waitFor(() => expect(feed.get()).toMatchObject({ lastSeq: 13, status: 'idle' }), { timeout: 5000 })
    expect(requests.filter((r) => r.startsWith('/api/events/session/'))).toEqual([
      '/api/events/session/s8?chunks=runs',
      '/api/events/session/s8?chunks=runs&after=4',
      '/api/events/session/s8?chunks=runs&after=10',
    ])
    expect(seen).toEqual(Array.from({ length: 14 }, (_, i) => i))
    const events = feed.get().events
    expect(events.map((e) => e.seq)).toEqual(seen)
    const deltas = events.filter((e) => e.seq !== 0 && e.seq !== 10)
    expect(deltas).toEqual(
      deltas.map((e) => ({
        seq: e.seq,
        type: 'assistant/chunk',
        time: 1000 + e.seq,
        data: { chunk: { kind: 'reasoning-delta', text: text(e.seq) } },
      })),
    )
    expect(feed.get().withoutDeltas.map((e) => e.seq)).toEqual([0])
    feed.release()
  })

  it('publishes streamed deltas (assistant/chunk) within DELTA_PUBLISH_MS, any other event within a frame, and hands every event to onEvent at once', async () => {
    let stream: ServerResponse | undefined
    const ctx = await start({
      session(res) {
        sse(res)
        res.write('event: status\ndata: {"sessionId":"s9","status":"running","queued":0}\n\n')
        stream = res
      },
    })
    const feed = ctx.connection.session('s9')
    await vi.waitFor(() => expect(feed.get()).toMatchObject({ loaded: true, live: true }), { timeout: 5000 })
    const seen: number[] = []
    feed.onEvent((e) => seen.push(e.seq))
    let published = 0
    feed.subscribe(() => published++)
    // Timers from here on are driven by hand (the runtime's frame batcher uses setTimeout outside a browser).
    const realTimeout = setTimeout
    const until = async (done: () => boolean) => {
      for (let i = 0; i < 500 && !done(); i++) await new Promise((resolve) => realTimeout(resolve, 10))
      expect(done()).toBe(true)
    }
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      for (let seq = 0; seq < 300; seq++) stream!.write(event(seq))
      await until(() => seen.length === 300)
      expect(seen).toEqual(Array.from({ length: 300 }, (_, i) => i))
      vi.advanceTimersByTime(20) // a frame: deltas alone are not published yet
      expect(published).toBe(0)
      expect(feed.get().lastSeq).toBe(-1)
      vi.advanceTimersByTime(DELTA_PUBLISH_MS)
      expect(published).toBe(1)
      expect(feed.get().lastSeq).toBe(299)
      expect(feed.get().events).toHaveLength(300)
      // Any other event is published within a frame.
      stream!.write(event(300, 'turn/end'))
      await until(() => seen.length === 301)
      vi.advanceTimersByTime(20)
      expect(published).toBe(2)
      expect(feed.get().lastSeq).toBe(300)
    } finally {
      vi.useRealTimers()
    }
    feed.release()
  })

  it('feed.settled skips publishes of streamed deltas alone and follows every other change', async () => {
    let stream: ServerResponse | undefined
    const ctx = await start({
      session(res) {
        sse(res)
        res.write('event: status\ndata: {"sessionId":"s8","status":"running","queued":0}\n\n')
        stream = res
      },
    })
    const feed = ctx.connection.session('s8')
    await vi.waitFor(() => expect(feed.get()).toMatchObject({ loaded: true, live: true }), { timeout: 5000 })
    await vi.waitFor(() => expect(feed.settled.get()).toBe(feed.get()), { timeout: 5000 })
    const seen: number[] = []
    feed.onEvent((e) => seen.push(e.seq))
    let published = 0
    let settled = 0
    feed.subscribe(() => published++)
    feed.settled.subscribe(() => settled++)
    const before = feed.settled.get()
    const realTimeout = setTimeout
    const until = async (done: () => boolean) => {
      for (let i = 0; i < 500 && !done(); i++) await new Promise((resolve) => realTimeout(resolve, 10))
      expect(done()).toBe(true)
    }
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      // Three separate delta publishes: the full feed hears each, the settled one none.
      for (let round = 0; round < 3; round++) {
        for (let seq = round * 10; seq < round * 10 + 10; seq++) stream!.write(event(seq))
        await until(() => seen.length === round * 10 + 10)
        vi.advanceTimersByTime(DELTA_PUBLISH_MS + 20)
        expect(published).toBe(round + 1)
        expect(feed.get().lastSeq).toBe(round * 10 + 9)
      }
      expect(settled).toBe(0)
      expect(feed.settled.get()).toBe(before)
      // Held events keep their content (the feed shares one string per type and chunk kind).
      expect(feed.get().events[7]).toEqual({ seq: 7, type: 'assistant/chunk', time: 0, data: { n: 7 } })
      // The log array is shared (appended in place), so a settled reader still finds every event.
      expect(feed.settled.get().events).toHaveLength(30)
      // Any other event settles: the settled state is the published state of that frame.
      stream!.write(event(30, 'turn/end'))
      await until(() => seen.length === 31)
      vi.advanceTimersByTime(20)
      expect(published).toBe(4)
      expect(settled).toBe(1)
      expect(feed.settled.get()).toBe(feed.get())
      expect(feed.settled.get().lastSeq).toBe(30)
      // The log without deltas holds only that event (the same object as in `events`).
      expect(feed.get().withoutDeltas).toEqual([feed.get().events[30]])
      expect(feed.get().withoutDeltas[0]).toBe(feed.get().events[30])
      // Deltas after it again leave the settled state alone; a status change settles.
      stream!.write(
        `id: 31\ndata: ${JSON.stringify({ seq: 31, type: 'assistant/chunk', time: 5, data: { chunk: { kind: 'reasoning-delta', text: 'hm' } } })}\n\n`,
      )
      await until(() => seen.length === 32)
      expect(feed.get().events[31]).toEqual({
        seq: 31,
        type: 'assistant/chunk',
        time: 5,
        data: { chunk: { kind: 'reasoning-delta', text: 'hm' } },
      })
      vi.advanceTimersByTime(DELTA_PUBLISH_MS + 20)
      expect([published, settled]).toEqual([5, 1])
      expect(feed.get().withoutDeltas.map((e) => e.seq)).toEqual([30])
      stream!.write('event: status\ndata: {"sessionId":"s8","status":"idle","queued":0}\n\n')
      await until(() => (vi.advanceTimersByTime(20), feed.get().status === 'idle'))
      expect(settled).toBe(2)
      expect(feed.settled.get()).toMatchObject({ status: 'idle', lastSeq: 31 })
    } finally {
      vi.useRealTimers()
    }
    feed.release()
  })

  it('reconnects from its last seq when a seq is skipped, and stops for good on a 404', async () => {
    const ctx = await start({
      session(res, n, after) {
        if (n === 0) {
          sse(res)
          res.write(event(0))
          res.write(event(1))
          res.write(event(5)) // a gap: 2..4 missing
          return
        }
        if (after === 1 && n === 1) {
          sse(res)
          for (let seq = 2; seq <= 5; seq++) res.write(event(seq))
          return
        }
        if (requests.at(-1)!.includes('/s4')) {
          // The control: a host error that is retried (with backoff).
          res.writeHead(500, { 'content-type': 'application/json' })
          return res.end(JSON.stringify({ error: { code: 'INTERNAL', message: 'try again' } }))
        }
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { code: 'SESSION_NOT_FOUND', message: 'gone' } }))
      },
    })
    const feed = ctx.connection.session('s2')
    await vi.waitFor(() => expect(feed.get().events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5]), { timeout: 5000 })
    const gone = ctx.connection.session('s3')
    await vi.waitFor(() => expect(gone.get().error).toEqual({ code: 'SESSION_NOT_FOUND', message: 'gone' }))
    const before = requests.length
    // Positive control through the same reconnect path: a feed opened after the 404 that the host
    // keeps failing retries with backoff; its third request comes after two backoff waits, each at
    // least as long as the first retry a 404 would have had, so a retry of s3 would be in by then.
    const control = ctx.connection.session('s4')
    await vi.waitFor(
      () => expect(requests.slice(before).filter((r) => r.includes('/s4')).length).toBeGreaterThanOrEqual(3),
      { timeout: 10_000, interval: 5 },
    )
    expect(requests.slice(before).filter((r) => r.includes('/s3'))).toEqual([])
    control.release()
    feed.release()
    gone.release()
  })

  it('resumes at once after a resync, and starts over (onReset) when the host twice will not resume after its seq', async () => {
    const ctx = await start({
      session(res, n, after) {
        sse(res)
        if (n === 0) {
          res.write(event(0, 'turn/start'))
          res.write(event(1))
          res.end('event: resync\ndata: {"reason":"the client fell behind its stream buffer"}\n\n')
        } else if (n === 1) {
          expect(after).toBe(1)
          res.write(event(2))
          res.end('event: resync\ndata: {"reason":"behind"}\n\n')
        } else if (after !== undefined) {
          // The log on the host is shorter than what the client holds (it was replaced).
          res.end('event: resync\ndata: {"reason":"after is past the end of the log"}\n\n')
        } else {
          res.write(event(0, 'turn/start'))
        }
      },
    })
    const feed = ctx.connection.session('s5')
    let resets = 0
    feed.onReset(() => resets++)
    await vi.waitFor(() => expect(resets).toBe(1), { timeout: 5000 })
    await vi.waitFor(() => expect(feed.get().events.map((e) => [e.seq, e.type])).toEqual([[0, 'turn/start']]))
    // The log without deltas starts over with it (the first connect's turn/start is not kept twice).
    expect(feed.get().withoutDeltas.map((e) => [e.seq, e.type])).toEqual([[0, 'turn/start']])
    expect(requests.filter((r) => r.includes('/s5'))).toEqual([
      '/api/events/session/s5?chunks=runs',
      '/api/events/session/s5?chunks=runs&after=1',
      '/api/events/session/s5?chunks=runs&after=2',
      '/api/events/session/s5?chunks=runs&after=2',
      '/api/events/session/s5?chunks=runs',
    ])
    feed.release()
  })

  it("takes the page's replay of the session once (loaded at once, streams after it); a stale one is put right by resync", async () => {
    // The page's data block as @dsh/frontend-static writes it; a minimal document holding it
    // (this file runs in node; the browser test in @dsh/client-web reads a real page's).
    const frames = (seqs: number) => [
      ...Array.from({ length: seqs }, (_, seq) => ['message', { seq, type: 'turn/start', time: 0, data: {} }]),
      ['status', { sessionId: 's7', status: 'idle', queued: 0 }],
    ]
    let blocks: Record<string, { text: string; removed: boolean }> = {}
    const doc = {
      getElementById: (id: string) => {
        const block = blocks[id]
        if (!block || block.removed) return null
        return {
          getAttribute: (name: string) => (name === 'type' ? 'application/json' : null),
          textContent: block.text,
          remove: () => void (block.removed = true),
        }
      },
    }
    vi.stubGlobal('document', doc)
    try {
      const ctx = await start({
        session(res, _n, after) {
          sse(res)
          // The host's log: seq 0 and 1 (a client past seq 1 holds a log this host does not have).
          if (after !== undefined && after >= 2)
            return void res.end('event: resync\ndata: {"reason":"after is past the end of the log"}\n\n')
          for (let seq = (after ?? -1) + 1; seq <= 1; seq++) res.write(event(seq, 'turn/start'))
          res.write('event: status\ndata: {"status":"idle","queued":0}\n\n')
        },
      })
      // A block naming another session is left for its own feed; this one streams from seq 0.
      blocks = {
        'dsh-session': { text: JSON.stringify({ version: 1, sessionId: 'other', frames: frames(1) }), removed: false },
      }
      const plain = ctx.connection.session('s6')
      expect(plain.get().loaded).toBe(false)
      await vi.waitFor(() => expect(plain.get().events.length).toBe(2))
      expect(blocks['dsh-session'].removed).toBe(false)
      plain.release()

      // The block fits the host's log: held before any request, the stream resumes after seq 1.
      blocks = {
        'dsh-session': { text: JSON.stringify({ version: 1, sessionId: 's7', frames: frames(2) }), removed: false },
      }
      const feed = ctx.connection.session('s7')
      expect(feed.get().loaded).toBe(true)
      expect(feed.get().status).toBe('idle')
      expect(feed.get().events.map((e) => e.seq)).toEqual([0, 1])
      expect(blocks['dsh-session'].removed).toBe(true)
      await vi.waitFor(() => expect(feed.get().live).toBe(true))
      expect(requests.filter((r) => r.includes('/s7'))).toEqual(['/api/events/session/s7?chunks=runs&after=1'])
      feed.release()
      feed.close()

      // A stale block (seq 0..3; the host's log ends at 1): resync twice, then the log from seq 0.
      blocks = {
        'dsh-session': { text: JSON.stringify({ version: 1, sessionId: 's8', frames: frames(4) }), removed: false },
      }
      const stale = ctx.connection.session('s8')
      let resets = 0
      stale.onReset(() => resets++)
      expect(stale.get().lastSeq).toBe(3)
      await vi.waitFor(() => expect(resets).toBe(1), { timeout: 5000 })
      await vi.waitFor(() => expect(stale.get().events.map((e) => e.seq)).toEqual([0, 1]))
      expect(requests.filter((r) => r.includes('/s8'))).toEqual([
        '/api/events/session/s8?chunks=runs&after=3',
        '/api/events/session/s8?chunks=runs&after=3',
        '/api/events/session/s8?chunks=runs',
      ])
      stale.release()
    } finally {
      vi.unstubAllGlobals()
    }
  })

  it('keeps pending approvals from the stream and drops them when resolved', async () => {
    // The host resolves the approval only once the feed has shown it (no race on a loaded machine).
    let resolveNow!: () => void
    const shown = new Promise<void>((resolve) => (resolveNow = resolve))
    const ctx = await start({
      session(res) {
        sse(res)
        res.write(event(0))
        res.write(
          `event: approval\ndata: ${JSON.stringify({ requestId: 'r1', sessionId: 's4', request: { kind: 'bash', title: 'Run ls', action: {}, options: [], time: 0 } })}\n\n`,
        )
        res.write('event: status\ndata: {"sessionId":"s4","status":"waiting","queued":0}\n\n')
        void shown.then(() =>
          res.write('event: approval/resolved\ndata: {"requestId":"r1","decision":"allowed-once"}\n\n'),
        )
      },
    })
    const feed = ctx.connection.session('s4')
    await vi.waitFor(() => expect(feed.get().approvals.map((a) => a.requestId)).toEqual(['r1']))
    expect(feed.get().status).toBe('waiting')
    resolveNow()
    await vi.waitFor(() => expect(feed.get().approvals).toEqual([]))
    feed.release()
  })
})

describe('ctx.connection online state', () => {
  it('goes offline when the host stream fails and online again with a connection/reset', async () => {
    const seen: string[] = []
    const ctx = await start({
      host(res, n) {
        if (n === 1 || n === 2) {
          res.writeHead(503, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'restarting' } }))
          return
        }
        sse(res)
        res.write('data: {"type":"hello"}\n\n')
        res.write(`data: ${JSON.stringify({ type: 'session/changed', n })}\n\n`)
        if (n === 0) setTimeout(() => res.end(), 50)
      },
    })
    ctx.connection.state.subscribe(() => seen.push(ctx.connection.state.get()))
    const events: string[] = []
    ctx.connection.onHost((e) => events.push(e.type))
    await vi.waitFor(() => expect(events).toContain('connection/reset'), { timeout: 5000 })
    expect(seen).toContain('offline')
    expect(ctx.connection.state.get()).toBe('online')
    expect(events.at(-1)).toBe('session/changed')
  })
})
