// The gateway and session host in a real tree (agent loop, DeepSeek adapter against
// @dsh/llm-mock-server, approval service, JSONL persistence in a temp dir), spoken to over real
// HTTP on 127.0.0.1 with real SSE streams.
import { createServer, type Server } from 'node:http'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import type { Context } from 'cordis'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import * as DeepSeek from '@dsh/llm-deepseek'
import ApprovalService from '@dsh/user-approval'
import DurableSessions from '@dsh/session-persistence'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import ApiGateway from '../src/index.ts'
import { logEvents, SseReader as BaseReader, seqs, turnEnds } from './sse-reader.ts'

vi.setConfig({ testTimeout: 30_000 })

const ENV = 'DSH_TEST_API_GATEWAY_KEY'
const MODEL = 'deepseek-official/deepseek-v4-flash'

const guardedTool = {
  name: 'guarded-tool',
  inject: ['tools', 'approval'],
  apply(ctx: Context) {
    const c = ctx as unknown as {
      tools: { register(def: unknown): () => void }
      approval: { request(i: unknown, o: unknown): Promise<{ decision: string }> }
    }
    c.tools.register({
      name: 'guarded',
      description: 'Does something that needs approval.',
      parameters: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'] },
      async execute(args: { what: string }, call: { sessionId?: string; signal: AbortSignal }) {
        const outcome = await c.approval.request(
          {
            sessionId: call.sessionId,
            kind: 'tool',
            title: `guarded: ${args.what}`,
            action: { what: args.what },
            options: ['allowed-once', 'rejected'],
          },
          { signal: call.signal },
        )
        return { content: `decision: ${outcome.decision}` }
      },
    })
  },
}

interface Host {
  harness: Harness
  server: Server
  url: string
  close(): Promise<void>
}
const cleanup: Array<() => Promise<void> | void> = []
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!()
})

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-api-gateway-'))
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function mockModel(steps: MockStep[]): Promise<MockServer> {
  const mock = await startMockServer({ steps })
  process.env[ENV] = 'sk-test'
  cleanup.push(() => mock.close())
  return mock
}

async function boot(
  mock: MockServer,
  home: string,
  gateway: Record<string, unknown> = {},
  options: { approvalLast?: boolean } = {},
): Promise<Host> {
  const approval = [ApprovalService, {}]
  const harness = await createHarness({
    plugins: [
      [DeepSeek, { baseURL: mock.baseURL, apiKeyEnv: ENV }],
      [JsonlPersistence, { root: join(home, 'sessions'), fsync: false, batchWindowMs: 1 }],
      [DurableSessions, { origin: 'web' }],
      ...(options.approvalLast ? [] : [approval]),
      [guardedTool],
      [ApiGateway, { metaFile: join(home, 'web', 'sessions.json'), heartbeatMs: 0, ...gateway }],
      // Provided after the host started (a profile's rows may load in another order).
      ...(options.approvalLast ? [approval] : []),
    ] as never,
  })
  const ctx = harness.ctx as Context & { api: ApiGateway }
  const server = createServer((req, res) => void ctx.api.handleHttp(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    // What @dsh/app-boot does on a graceful stop: app/stopping while every row is active, then dispose.
    await harness.ctx.parallel('app/stopping' as never, { reason: 'test' } as never)
    await harness.dispose()
  }
  cleanup.push(close)
  return { harness, server, url, close }
}

async function post(
  host: Host,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${host.url}/api/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof params === 'string' ? params : JSON.stringify(params),
  })
  return { status: res.status, body: await res.json() }
}

async function call(host: Host, method: string, params: unknown): Promise<any> {
  const { status, body } = await post(host, method, params)
  if (status !== 200) throw new Error(`${method}: ${status} ${JSON.stringify(body)}`)
  return body.result
}

/** The shared reader, closed after each test. */
class SseReader extends BaseReader {
  constructor(url: string, headers: Record<string, string> = {}) {
    super(url, headers, (reader) => cleanup.push(() => reader.close()))
  }
}

describe('api-gateway over real HTTP', () => {
  it('answers bad input with a JSON error naming the problem', async () => {
    const host = await boot(await mockModel([]), tempDir())
    expect(await post(host, 'sessions.nope', {})).toMatchObject({
      status: 404,
      body: { error: { code: 'UNKNOWN_METHOD', message: expect.stringContaining('sessions.nope') } },
    })
    const missing = await post(host, 'sessions.prompt', { sessionId: 'x' })
    expect(missing).toMatchObject({ status: 400, body: { error: { code: 'INVALID_PARAMS', field: 'text' } } })
    expect(missing.body.error.message).toContain('sessions.prompt: text')
    expect(await post(host, 'sessions.history', { sessionId: 'x', limit: -2 })).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', field: 'limit' } },
    })
    expect(await post(host, 'sessions.prompt', '{"sessionId": ')).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_JSON' } },
    })
    expect(await post(host, 'sessions.list', 'x'.repeat(2 * 1024 * 1024))).toMatchObject({
      status: 413,
      body: { error: { code: 'PAYLOAD_TOO_LARGE' } },
    })
    const unknown = '3f1c0c1e-0000-4000-8000-000000000000'
    expect(await post(host, 'sessions.prompt', { sessionId: unknown, text: 'hi' })).toMatchObject({
      status: 404,
      body: { error: { code: 'SESSION_NOT_FOUND', message: expect.stringContaining(unknown) } },
    })
    expect(await post(host, 'sessions.history', { sessionId: unknown })).toMatchObject({
      status: 404,
      body: { error: { code: 'SESSION_NOT_FOUND' } },
    })
    const stream = await fetch(`${host.url}/api/events/session/${unknown}`)
    expect(stream.status).toBe(404)
    expect(await stream.json()).toMatchObject({ error: { code: 'SESSION_NOT_FOUND' } })
    expect(await post(host, 'sessions.create', { cwd: join(tempDir(), 'missing'), model: MODEL })).toMatchObject({
      status: 400,
      body: { error: { code: 'NOT_A_DIRECTORY', field: 'cwd' } },
    })
    expect(await post(host, 'sessions.create', { cwd: tempDir(), model: 'deepseek-official/none' })).toMatchObject({
      status: 400,
      body: { error: { code: 'MODEL_NOT_FOUND', field: 'model' } },
    })

    const cwd = tempDir()
    const { session } = await call(host, 'sessions.create', { cwd, model: MODEL })
    await call(host, 'sessions.archive', { sessionId: session.sessionId })
    expect(await post(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'hi' })).toMatchObject({
      status: 409,
      body: { error: { code: 'SESSION_ARCHIVED', field: 'sessionId' } },
    })
    expect((await call(host, 'sessions.list', { cwd })).sessions).toEqual([])
    expect((await call(host, 'sessions.list', { cwd, includeArchived: true })).sessions).toMatchObject([
      { sessionId: session.sessionId, archived: true },
    ])
  })

  it('a stream dropped mid-turn resumes from Last-Event-ID with no gap or duplicate; the approval is answered over the wire', async () => {
    const mock = await mockModel([
      { toolCalls: [{ name: 'guarded', arguments: { what: 'deploy' } }] },
      { text: 'deployed' },
    ])
    const host = await boot(mock, tempDir())
    const { session } = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL, title: 'deploy things' })
    const id = session.sessionId
    const first = new SseReader(`${host.url}/api/events/session/${id}`)
    await first.until((f) => f.some((x) => x.event === 'status'))
    expect(await call(host, 'sessions.prompt', { sessionId: id, text: 'please deploy' })).toEqual({
      disposition: 'started',
      queued: 0,
    })
    await first.until((f) => f.some((x) => x.event === 'approval'))
    const approval = first.frames.find((x) => x.event === 'approval')!.data
    expect(approval.request).toMatchObject({ title: 'guarded: deploy', options: ['allowed-once', 'rejected'] })
    first.close()
    const lastId = seqs(first.frames).at(-1)!

    const second = new SseReader(`${host.url}/api/events/session/${id}`, { 'last-event-id': String(lastId) })
    // The pending approval is re-sent to the new connection.
    await second.until((f) => f.some((x) => x.event === 'approval'))
    expect(second.frames.find((x) => x.event === 'status')!.data.status).toBe('waiting')
    expect(await call(host, 'approvals.respond', { requestId: approval.requestId, decision: 'allowed-once' })).toEqual(
      {},
    )
    expect(
      await post(host, 'approvals.respond', { requestId: approval.requestId, decision: 'allowed-once' }),
    ).toMatchObject({ status: 404, body: { error: { code: 'REQUEST_NOT_FOUND' } } })
    await second.until((f) => turnEnds(f) === 1)

    const all = [...seqs(first.frames), ...seqs(second.frames)]
    expect(all).toEqual(all.map((_, i) => i))
    const history = await call(host, 'sessions.history', { sessionId: id })
    expect(history.end).toBe(true)
    expect(history.events.map((e: any) => e.seq)).toEqual(all)
    expect([...first.events, ...second.events].map((f) => f.data)).toEqual(history.events)
    const result = history.events.find((e: any) => e.type === 'tool/result')
    expect(JSON.stringify(result.data)).toContain('decision: allowed-once')
    expect(second.frames.find((x) => x.event === 'approval/resolved')!.data).toEqual({
      requestId: approval.requestId,
      decision: 'allowed-once',
    })
  })

  it('answers approvals of a service provided after the host started', async () => {
    const mock = await mockModel([
      { toolCalls: [{ name: 'guarded', arguments: { what: 'ship' } }] },
      { text: 'shipped' },
    ])
    const host = await boot(mock, tempDir(), {}, { approvalLast: true })
    const { session } = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL })
    const reader = new SseReader(`${host.url}/api/events/session/${session.sessionId}`)
    await reader.until((f) => f.some((x) => x.event === 'status'))
    await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'please ship' })
    // Without the bridge the request is refused at once ("no approval answerer") and the turn ends.
    await reader.until((f) => f.some((x) => x.event === 'approval') || turnEnds(f) === 1)
    const asked = reader.frames.find((x) => x.event === 'approval')
    expect(asked, 'the approval reached the web clients').toBeDefined()
    await call(host, 'approvals.respond', { requestId: asked!.data.requestId, decision: 'allowed-once' })
    await reader.until((f) => turnEnds(f) === 1)
    const history = await call(host, 'sessions.history', { sessionId: session.sessionId })
    expect(JSON.stringify(history.events.find((e: any) => e.type === 'tool/result').data)).toContain(
      'decision: allowed-once',
    )
  })

  it('50 concurrent stream clients of one session receive identical streams', async () => {
    const host = await boot(
      await mockModel([{ text: 'a fairly long answer streamed as several deltas', chunkDelayMs: 1 }]),
      tempDir(),
    )
    const { session } = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL })
    const readers = Array.from(
      { length: 50 },
      () => new SseReader(`${host.url}/api/events/session/${session.sessionId}`),
    )
    await Promise.all(readers.map((r) => r.until((f) => f.some((x) => x.event === 'status'))))
    await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'go' })
    await Promise.all(readers.map((r) => r.until((f) => turnEnds(f) === 1)))
    const history = (await call(host, 'sessions.history', { sessionId: session.sessionId })).events
    expect(history.filter((e: any) => e.type === 'assistant/chunk').length).toBeGreaterThan(1)
    for (const reader of readers) expect(reader.events.map((f) => f.data)).toEqual(history)
  })

  it('clients resuming from many Last-Event-IDs each get exactly the log after their id, then every live event once', async () => {
    const host = await boot(
      await mockModel([
        { text: 'the first answer, in several deltas', chunkDelayMs: 1 },
        { text: 'the second answer' },
      ]),
      tempDir(),
    )
    const { session } = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL })
    const id = session.sessionId
    const warm = new SseReader(`${host.url}/api/events/session/${id}`)
    await call(host, 'sessions.prompt', { sessionId: id, text: 'one' })
    await warm.until((f) => turnEnds(f) === 1)
    const before = (await call(host, 'sessions.history', { sessionId: id })).events
    expect(before.length).toBeGreaterThan(8)
    // Half resume by header, half by ?after=, from every point of the log (and past none of it).
    const afters = Array.from({ length: 40 }, (_, i) => (i % before.length) - 1)
    const readers = afters.map((after, i) =>
      i % 2
        ? new SseReader(`${host.url}/api/events/session/${id}`, { 'last-event-id': String(after) })
        : new SseReader(`${host.url}/api/events/session/${id}?after=${after}`),
    )
    await Promise.all(readers.map((r) => r.until((f) => f.some((x) => x.event === 'status'))))
    readers.forEach((r, i) => {
      expect(r.events.map((f) => f.data)).toEqual(before.slice(afters[i] + 1))
    })
    await call(host, 'sessions.prompt', { sessionId: id, text: 'two' })
    // Each reader has seen the second turn end once the ends it read plus those before its id make two.
    const endsUpTo = (after: number) => before.slice(0, after + 1).filter((e: any) => e.type === 'turn/end').length
    await Promise.all(readers.map((r, i) => r.until((f) => turnEnds(f) + endsUpTo(afters[i]) === 2)))
    const after = (await call(host, 'sessions.history', { sessionId: id })).events
    readers.forEach((r, i) => {
      expect(r.events.map((f) => f.data)).toEqual(after.slice(afters[i] + 1))
    })
    // Log frames written in bursts still come before the state frames that follow them: the
    // idle status after the second turn's end.
    for (const r of readers) {
      await r.until((f) =>
        f.some(
          (x) =>
            x.event === 'status' &&
            x.data.status === 'idle' &&
            f.indexOf(x) > f.findIndex((y) => y.data?.type === 'turn/end' && y.data.data.turn === 1),
        ),
      )
      const kinds = r.frames.map((f) =>
        f.event === 'status'
          ? `status:${f.data.status}`
          : f.data?.type === 'turn/start' || f.data?.type === 'turn/end'
            ? `${f.data.type}:${f.data.data.turn}`
            : '',
      )
      const end = kinds.indexOf('turn/end:1')
      expect(end).toBeGreaterThanOrEqual(0)
      expect(kinds.indexOf('status:idle', end)).toBeGreaterThan(end)
    }
    // The same bytes as a frame of each event written on its own.
    const raw = await fetch(`${host.url}/api/events/session/${id}?after=2`)
    const reader = raw.body!.getReader()
    let text = ''
    while (!text.includes('event: status')) text += new TextDecoder().decode((await reader.read()).value)
    await reader.cancel()
    expect(text.slice(0, text.indexOf('event: status'))).toBe(
      after
        .slice(3)
        .map((e: any) => `id: ${e.seq}\ndata: ${JSON.stringify(e)}\n\n`)
        .join(''),
    )
  })

  it('a client asking for chunk runs gets streamed deltas in runs: the same events in a fraction of the bytes, and a resume from any seq gets exactly the rest', async () => {
    const deltas = (n: number, text: (i: number) => string) =>
      Array.from({ length: n }, (_, i) => ({ reasoning: text(i) }))
    const host = await boot(
      await mockModel([
        {
          events: [
            ...deltas(3000, (i) => (i % 7 ? 'r ' : 'ünï ✓ ')),
            { text: 'the answer, ' },
            { text: 'in two deltas' },
          ],
        },
      ]),
      tempDir(),
    )
    const { session } = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL })
    const path = `${host.url}/api/events/session/${session.sessionId}`
    const bad = await fetch(`${path}?chunks=yes`)
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({
      error: { code: 'INVALID_PARAMS', field: 'chunks', message: 'chunks: expected "runs", got "yes"' },
    })
    const runs = new SseReader(`${path}?chunks=runs`)
    const plain = new SseReader(path)
    await Promise.all([runs, plain].map((r) => r.until((f) => f.some((x) => x.event === 'status'))))
    await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'think' })
    await Promise.all([runs, plain].map((r) => r.until((f) => turnEnds(f) === 1)))
    const history = (await call(host, 'sessions.history', { sessionId: session.sessionId, limit: 5000 })).events
    expect(history.filter((e: any) => e.type === 'assistant/chunk').length).toBeGreaterThan(3000)
    expect(plain.events.map((f) => f.data)).toEqual(history)
    expect(plain.frames.some((f) => f.event === 'chunks')).toBe(false)
    // The live stream came in runs (the deltas arrive from the model in bursts) and expands to the log.
    expect(logEvents(runs.frames)).toEqual(history)
    expect(runs.frames.filter((f) => f.event === 'chunks').length).toBeGreaterThan(0)
    expect(runs.bytes * 5).toBeLessThan(plain.bytes)
    // A replay from every kind of point: before the log, mid-run, at a run's edge, the last event.
    const afters = [-1, 0, 1, 2, 3, 5, 100, 257, 258, 1000, 2999, 3001, ...history.slice(-4).map((e: any) => e.seq)]
    const readers = afters.map((after, i) =>
      i % 2
        ? new SseReader(`${path}?chunks=runs`, { 'last-event-id': String(after) })
        : new SseReader(`${path}?after=${after}&chunks=runs`),
    )
    await Promise.all(readers.map((r) => r.until((f) => f.some((x) => x.event === 'status'))))
    readers.forEach((r, i) => {
      expect(logEvents(r.frames)).toEqual(history.slice(afters[i] + 1))
    })
  })

  it('a chunk-runs stream dropped mid-answer resumes from its last id with exactly the remaining text', async () => {
    const deltas = (n: number, from: number) => Array.from({ length: n }, (_, i) => ({ reasoning: `${from + i} ` }))
    const host = await boot(
      await mockModel([{ events: [...deltas(2000, 0), { delayMs: 1500 }, ...deltas(2000, 2000), { text: 'done' }] }]),
      tempDir(),
    )
    const { session } = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL })
    const path = `${host.url}/api/events/session/${session.sessionId}?chunks=runs`
    const first = new SseReader(path)
    await first.until((f) => f.some((x) => x.event === 'status'))
    await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'count' })
    // Dropped while the model pauses after its first 2000 deltas.
    await first.until(() => logEvents(first.frames).filter((e) => e.type === 'assistant/chunk').length >= 2000)
    first.close()
    const held = logEvents(first.frames)
    expect(turnEnds(first.frames)).toBe(0)
    const lastId = first.frames.filter((f) => f.id !== undefined).at(-1)!.id!
    expect(lastId).toBe(held.at(-1)!.seq)
    const second = new SseReader(path, { 'last-event-id': String(lastId) })
    await second.until((f) => turnEnds(f) === 1)
    const all = [...held, ...logEvents(second.frames)]
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i))
    expect(all).toEqual((await call(host, 'sessions.history', { sessionId: session.sessionId, limit: 5000 })).events)
    const reasoning = all
      .filter((e: any) => e.type === 'assistant/chunk' && e.data.chunk.kind === 'reasoning-delta')
      .map((e: any) => e.data.chunk.text)
      .join('')
    expect(reasoning).toBe(Array.from({ length: 4000 }, (_, i) => `${i} `).join(''))
    expect(second.frames.filter((f) => f.event === 'chunks').length).toBeGreaterThan(0)
  })

  it('sessions.history pages a stored session from one read while its log is unchanged, and reads it again after a write', async () => {
    const home = tempDir()
    const host = await boot(await mockModel([]), home)
    const persistence = host.harness.ctx.get('sessionPersistence') as InstanceType<typeof JsonlPersistence>
    // A session written by another writer (as another dsh process would), not live in this host.
    const other = await createHarness({
      plugins: [[JsonlPersistence, { root: join(home, 'sessions'), fsync: false, batchWindowMs: 1 }]] as never,
    })
    cleanup.push(() => other.dispose())
    const writer = other.ctx.get('sessionPersistence') as InstanceType<typeof JsonlPersistence>
    const id = '0b7f5c1e-1111-4000-8000-000000000001'
    const ev = (seq: number) => ({
      type: 'session/title',
      seq,
      time: 1_700_000_000_000 + seq,
      data: { title: `title ${seq}`, source: 'test' },
    })
    await writer.create({ id, cwd: home })
    await writer.append(id, Array.from({ length: 30 }, (_, i) => ev(i)) as never)
    await writer.close(id)
    const reads = vi.spyOn(persistence, 'readFrom')
    const page = async (fromSeq: number, limit: number) =>
      call(host, 'sessions.history', { sessionId: id, fromSeq, limit })
    expect(await page(0, 10)).toMatchObject({ nextSeq: 10, end: false })
    expect((await page(10, 10)).events.map((e: any) => e.seq)).toEqual(Array.from({ length: 10 }, (_, i) => 10 + i))
    expect(await page(25, 10)).toMatchObject({ nextSeq: 30, end: true })
    expect(await page(40, 10)).toEqual({ events: [], nextSeq: 30, end: true })
    expect(reads).toHaveBeenCalledTimes(1)
    // Another writer appends: the stored copy is not trusted any more.
    await writer.load(id)
    await writer.append(id, [ev(30), ev(31)] as never)
    await writer.close(id)
    const grown = await page(25, 10)
    expect(grown.events.map((e: any) => e.data.title)).toEqual([25, 26, 27, 28, 29, 30, 31].map((n) => `title ${n}`))
    expect(grown).toMatchObject({ nextSeq: 32, end: true })
    expect(reads).toHaveBeenCalledTimes(2)
    expect(await post(host, 'sessions.history', { sessionId: '0b7f5c1e-1111-4000-8000-000000000009' })).toMatchObject({
      status: 404,
      body: { error: { code: 'SESSION_NOT_FOUND' } },
    })
  })

  it('a second prompt while a turn runs is queued and runs after it', async () => {
    const host = await boot(
      await mockModel([{ text: 'first answer', delayMs: 150 }, { text: 'second answer' }]),
      tempDir(),
    )
    const { session } = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL })
    const reader = new SseReader(`${host.url}/api/events/session/${session.sessionId}`)
    expect((await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'one' })).disposition).toBe(
      'started',
    )
    expect(await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'two' })).toEqual({
      disposition: 'queued',
      queued: 1,
    })
    await reader.until((f) => turnEnds(f) === 2)
    const users = reader.events.filter((f) => f.data.type === 'user/message').map((f) => f.data.data.content[0].text)
    expect(users).toEqual(['one', 'two'])
    await reader.until((f) => f.some((x) => x.event === 'status' && x.data.status === 'idle' && x.data.queued === 0))
  })

  it('after a restart on the same home the session lists and reads the same history', async () => {
    const home = tempDir()
    const mock = await mockModel([{ text: 'remembered answer' }, { text: 'after restart' }])
    const host = await boot(mock, home)
    const cwd = tempDir()
    const { session } = await call(host, 'sessions.create', { cwd, model: MODEL })
    const id = session.sessionId
    const reader = new SseReader(`${host.url}/api/events/session/${id}`)
    await call(host, 'sessions.prompt', { sessionId: id, text: 'remember this' })
    await reader.until((f) => turnEnds(f) === 1)
    await call(host, 'sessions.rename', { sessionId: id, title: 'Memory test' })
    const before = (await call(host, 'sessions.history', { sessionId: id })).events
    await host.close()

    const again = await boot(mock, home)
    const listed = await call(again, 'sessions.list', { query: 'memory' })
    expect(listed).toMatchObject({
      total: 1,
      sessions: [{ sessionId: id, title: 'Memory test', status: 'stored', cwd }],
    })
    expect((await call(again, 'sessions.history', { sessionId: id })).events).toEqual(before)
    // Paged by seq.
    const page = await call(again, 'sessions.history', { sessionId: id, fromSeq: 2, limit: 3 })
    expect(page.events.map((e: any) => e.seq)).toEqual([2, 3, 4])
    expect(page.nextSeq).toBe(5)
    // Prompting resumes it (agent created on first use) and continues the same log.
    const resumed = new SseReader(`${again.url}/api/events/session/${id}?after=${before.length - 1}`)
    await call(again, 'sessions.prompt', { sessionId: id, text: 'still there?' })
    await resumed.until((f) => turnEnds(f) === 1)
    expect(resumed.events[0].id).toBe(before.length)
  })

  it('a client that stops reading gets resync and is closed; appends never wait for it', async () => {
    const host = await boot(await mockModel([]), tempDir(), { clientBufferBytes: 64 * 1024 })
    const { session } = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL })
    const reader = new SseReader(`${host.url}/api/events/session/${session.sessionId}`)
    await reader.until((f) => f.some((x) => x.event === 'status'))
    reader.res!.pause()
    const live = host.harness.ctx.sessions.get(session.sessionId)!
    const title = 'x'.repeat(4096)
    for (let i = 0; i < 2000; i++) live.append('session/title', { title, source: 'test' })
    expect(live.length).toBeGreaterThanOrEqual(2000)
    reader.res!.resume()
    await reader.until((f) => f.some((x) => x.event === 'resync'))
    expect(reader.frames.at(-1)!.event).toBe('resync')
    const got = seqs(reader.frames)
    expect(got.length).toBeLessThan(live.length)
    expect(got).toEqual(got.map((_, i) => i))
  })

  it('a replay larger than the client buffer is sent up to the bound, then resync', async () => {
    const host = await boot(await mockModel([]), tempDir(), { clientBufferBytes: 64 * 1024 })
    const { session } = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL })
    const live = host.harness.ctx.sessions.get(session.sessionId)!
    for (let i = 0; i < 500; i++) live.append('session/title', { title: 'y'.repeat(4096), source: 'test' })
    const reader = new SseReader(`${host.url}/api/events/session/${session.sessionId}`)
    await reader.until((f) => f.some((x) => x.event === 'resync'))
    const got = seqs(reader.frames)
    expect(got.length).toBeGreaterThan(0)
    expect(got.length).toBeLessThan(live.length)
    expect(got).toEqual(got.map((_, i) => i))
    expect(reader.frames.at(-1)!.event).toBe('resync')
    // A replay within the bound arrives whole, followed by the state frames.
    const small = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL, title: 'small' })
    const whole = new SseReader(`${host.url}/api/events/session/${small.session.sessionId}`)
    await whole.until((f) => f.some((x) => x.event === 'status'))
    expect(seqs(whole.frames)).toEqual(host.harness.ctx.sessions.get(small.session.sessionId)!.events.map((e) => e.seq))
  })

  it('stopping the host mid-turn cancels the turn and logs its end before the tree goes away', async () => {
    const home = tempDir()
    const mock = await mockModel([
      { events: [{ text: 'thinking about it' }, { stall: true }] },
      { text: 'after restart' },
    ])
    const host = await boot(mock, home)
    const cwd = tempDir()
    const { session } = await call(host, 'sessions.create', { cwd, model: MODEL })
    const reader = new SseReader(`${host.url}/api/events/session/${session.sessionId}`)
    await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'take your time' })
    await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'queued behind it' })
    await reader.until((f) => f.some((x) => x.data?.type === 'assistant/chunk'))
    await host.close()

    const again = await boot(mock, home)
    const events = (await call(again, 'sessions.history', { sessionId: session.sessionId })).events
    expect(events.at(-2)).toMatchObject({ type: 'turn/end', data: { turn: 0, reason: 'cancelled' } })
    // The queued prompt never ran: the log says so, for the client to show.
    expect(events.at(-1)).toMatchObject({
      type: 'web/interrupted',
      data: { reason: 'stopped', queued: ['queued behind it'], approvals: [], questions: [] },
    })
    expect(events.filter((e: any) => e.type === 'turn/start')).toHaveLength(1)
    // Nothing is reported twice: loading it again adds nothing.
    const reader2 = new SseReader(`${again.url}/api/events/session/${session.sessionId}?after=${events.length - 1}`)
    await reader2.until((f) => f.some((x) => x.event === 'status'))
    expect((await call(again, 'sessions.history', { sessionId: session.sessionId })).events).toHaveLength(events.length)
  })

  it('an approval pending at the stop is reported in the log as interrupted work', async () => {
    const home = tempDir()
    const host = await boot(
      await mockModel([{ toolCalls: [{ name: 'guarded', arguments: { what: 'deploy' } }] }, { text: 'never reached' }]),
      home,
    )
    const { session } = await call(host, 'sessions.create', { cwd: tempDir(), model: MODEL })
    const reader = new SseReader(`${host.url}/api/events/session/${session.sessionId}`)
    await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'deploy it' })
    await reader.until((f) => f.some((x) => x.event === 'approval'))
    const requestId = reader.frames.find((x) => x.event === 'approval')!.data.requestId
    // While pending, the metadata holds it (what a host that dies leaves behind).
    const metaOf = () => {
      try {
        return JSON.parse(readFileSync(join(home, 'web', 'sessions.json'), 'utf8')).sessions[session.sessionId]
      } catch {
        return undefined
      }
    }
    // The metadata file is rewritten in the background: wait for it, with room for a loaded machine.
    await vi.waitFor(() => expect(metaOf()?.pending).toBeDefined(), { timeout: 15_000, interval: 25 })
    expect(metaOf().pending).toEqual({
      queued: [],
      approvals: [{ requestId, kind: 'tool', title: 'guarded: deploy' }],
      questions: [],
    })
    await host.close()
    expect(
      JSON.parse(readFileSync(join(home, 'web', 'sessions.json'), 'utf8')).sessions[session.sessionId].pending,
    ).toBeUndefined()
    const again = await boot(await mockModel([]), home)
    const events = (await call(again, 'sessions.history', { sessionId: session.sessionId })).events
    expect(events.at(-1)).toMatchObject({
      type: 'web/interrupted',
      data: { reason: 'stopped', queued: [], approvals: [{ requestId, title: 'guarded: deploy' }] },
    })
  })
})

describe('sessions.list index and sessions.remove', () => {
  /** Writes a finished one-turn session straight into the store, as another process would. */
  async function storeSession(ctx: Context, id: string, cwd: string, title: string, time: number): Promise<void> {
    const persistence = (
      ctx as unknown as {
        sessionPersistence: {
          create(h: unknown): Promise<unknown>
          append(id: string, e: unknown[]): Promise<void>
          close(id: string): Promise<void>
        }
      }
    ).sessionPersistence
    await persistence.create({ id, cwd, createdAt: time })
    await persistence.append(id, [
      { type: 'turn/start', seq: 0, time, data: { turn: 0 } },
      {
        type: 'user/message',
        seq: 1,
        time,
        data: { content: [{ type: 'text', text: `prompt of ${title}` }], source: { kind: 'human' } },
      },
      { type: 'session/title', seq: 2, time, data: { title, source: 'user' } },
      { type: 'turn/end', seq: 3, time: time + 1, data: { turn: 0, reason: 'completed' } },
    ])
    await persistence.close(id)
  }

  it('answers from an index: 300 stored sessions read once; live changes without a rescan; refresh finds outside writes; remove publishes session/removed', async () => {
    const home = tempDir()
    const mock = await mockModel([{ text: 'live answer' }, { events: [{ text: 'working' }, { stall: true }] }])
    const host = await boot(mock, home, { listRescanMs: 3_600_000 })
    const ctx = host.harness.ctx
    const cwd = tempDir()
    for (let i = 0; i < 300; i++)
      await storeSession(ctx, `stored-${String(i).padStart(3, '0')}`, cwd, `stored ${i}`, 1_700_000_000_000 + i * 10)
    // Count reads of the store's summaries.
    const persistence = ctx.get('sessionPersistence' as never) as unknown as { list(): Promise<unknown[]> }
    const original = persistence.list.bind(persistence)
    let scans = 0
    persistence.list = async () => (scans++, original())

    const first = await call(host, 'sessions.list', { cwd, limit: 500 })
    expect(first.total).toBe(300)
    expect(first.sessions[0]).toMatchObject({
      sessionId: 'stored-299',
      title: 'stored 299',
      firstPrompt: 'prompt of stored 299',
      turns: 1,
      events: 4,
      status: 'stored',
    })
    const page = await call(host, 'sessions.list', { cwd, offset: 50, limit: 50 })
    expect(page.sessions.map((s: any) => s.sessionId)).toEqual(
      Array.from({ length: 50 }, (_, i) => `stored-${String(249 - i).padStart(3, '0')}`),
    )
    expect(page.nextOffset).toBe(100)
    expect(
      (await call(host, 'sessions.list', { cwd, query: 'STORED 12' })).sessions.map((s: any) => s.title).sort(),
    ).toEqual([
      'stored 12',
      'stored 120',
      'stored 121',
      'stored 122',
      'stored 123',
      'stored 124',
      'stored 125',
      'stored 126',
      'stored 127',
      'stored 128',
      'stored 129',
    ])
    expect(scans).toBe(1)

    // A live session: created, prompted and renamed here; its row follows its events.
    const hostStream = new SseReader(`${host.url}/api/events/host`)
    const { session } = await call(host, 'sessions.create', { cwd, model: MODEL })
    const reader = new SseReader(`${host.url}/api/events/session/${session.sessionId}`)
    await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'hello from the index test' })
    await reader.until((f) => turnEnds(f) === 1)
    await call(host, 'sessions.rename', { sessionId: session.sessionId, title: 'Live one' })
    const top = (await call(host, 'sessions.list', { cwd, limit: 1 })).sessions[0]
    expect(top).toMatchObject({
      sessionId: session.sessionId,
      title: 'Live one',
      firstPrompt: 'hello from the index test',
      turns: 1,
    })
    expect(top.events).toBe((await call(host, 'sessions.history', { sessionId: session.sessionId })).events.length)
    expect((await call(host, 'sessions.list', { cwd })).total).toBe(301)

    // Remove a stored session: gone from the list, history and prompt; the host stream says so.
    expect(await call(host, 'sessions.remove', { sessionId: 'stored-150' })).toEqual({ sessionId: 'stored-150' })
    await hostStream.until((f) => f.some((x) => x.data?.type === 'session/removed'))
    expect(hostStream.frames.find((x) => x.data?.type === 'session/removed')!.data).toEqual({
      type: 'session/removed',
      sessionId: 'stored-150',
    })
    expect(
      (await call(host, 'sessions.list', { cwd, includeArchived: true, limit: 500 })).sessions.map(
        (s: any) => s.sessionId,
      ),
    ).not.toContain('stored-150')
    expect(await post(host, 'sessions.history', { sessionId: 'stored-150' })).toMatchObject({
      status: 404,
      body: { error: { code: 'SESSION_NOT_FOUND' } },
    })
    expect(await post(host, 'sessions.prompt', { sessionId: 'stored-150', text: 'hi' })).toMatchObject({
      status: 404,
      body: { error: { code: 'SESSION_NOT_FOUND' } },
    })
    expect(await post(host, 'sessions.remove', { sessionId: 'stored-150' })).toMatchObject({
      status: 404,
      body: { error: { code: 'SESSION_NOT_FOUND' } },
    })
    expect(await post(host, 'sessions.remove', { sessionId: 'never-was' })).toMatchObject({
      status: 404,
      body: { error: { code: 'SESSION_NOT_FOUND' } },
    })

    // A busy session is refused; once cancelled it is removed and its stream ends.
    await call(host, 'sessions.prompt', { sessionId: session.sessionId, text: 'keep going' })
    await reader.until((f) => f.filter((x) => x.data?.type === 'assistant/chunk').length >= 2)
    expect(await post(host, 'sessions.remove', { sessionId: session.sessionId })).toMatchObject({
      status: 409,
      body: { error: { code: 'SESSION_BUSY', field: 'sessionId' } },
    })
    await call(host, 'sessions.cancel', { sessionId: session.sessionId })
    await reader.until((f) => turnEnds(f) === 2)
    await reader.until((f) => f.some((x) => x.event === 'status' && x.data.status === 'idle'))
    await call(host, 'sessions.remove', { sessionId: session.sessionId })
    await reader.until(() => reader.ended)
    expect((await call(host, 'sessions.list', { cwd })).total).toBe(299)
    expect(scans).toBe(1)

    // A session written by another process appears with refresh (or at the next rescan).
    await storeSession(ctx, 'outside-1', cwd, 'from outside', 1_800_000_000_000)
    expect((await call(host, 'sessions.list', { cwd, limit: 1 })).sessions[0].sessionId).not.toBe('outside-1')
    expect((await call(host, 'sessions.list', { cwd, limit: 1, refresh: true })).sessions[0]).toMatchObject({
      sessionId: 'outside-1',
      title: 'from outside',
    })
    expect(scans).toBe(2)
    await host.close()

    // The removal is kept across a restart.
    const again = await boot(mock, home)
    const rows = (await call(again, 'sessions.list', { cwd, includeArchived: true, limit: 500 })).sessions.map(
      (s: any) => s.sessionId,
    )
    expect(rows).not.toContain('stored-150')
    expect(rows.filter((id: string) => !/^stored-|^outside-/.test(id))).toEqual([])
    const want = new Set([
      ...Array.from({ length: 300 }, (_, i) => `stored-${String(i).padStart(3, '0')}`).filter(
        (id) => id !== 'stored-150',
      ),
      'outside-1',
    ])
    expect(rows.filter((id: string) => !want.has(id))).toEqual([])
    expect(rows.filter((id: string, i: number) => rows.indexOf(id) !== i)).toEqual([])
    expect(rows).toHaveLength(300)
    expect(rows).not.toContain(session.sessionId)
    expect(await post(again, 'sessions.history', { sessionId: session.sessionId })).toMatchObject({ status: 404 })
  })
})
