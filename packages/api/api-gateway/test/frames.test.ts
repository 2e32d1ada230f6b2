// FrameLog (each log event serialised once, shared by every client) and SseClient's raw writes,
// the latter over a real node:http server on 127.0.0.1.
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { FrameLog, RUN_MAX_CHARS, RUN_MAX_EVENTS, SseClient, formatFrame } from '../src/sse.ts'
import { logEvents, parseFrames } from './sse-reader.ts'

const event = (seq: number, text = `event ${seq}`) => ({
  type: 'user/message',
  seq,
  time: 1_700_000_000_000 + seq,
  data: { text },
})

describe('FrameLog', () => {
  it('holds each event as the frame formatFrame writes, and slices replays after any seq', () => {
    const events = Array.from({ length: 50 }, (_, i) => event(i, 'ünïcode ✓ '.repeat(i % 7)))
    const log = FrameLog.of(events)
    expect(log.length).toBe(50)
    const text = (after: number) =>
      events
        .slice(after + 1)
        .map((e) => formatFrame(undefined, e, e.seq))
        .join('')
    for (const after of [-1, 0, 1, 17, 48, 49, 60]) expect(log.since(after).bytes.toString('utf8')).toBe(text(after))
    expect(log.since(-1).complete).toBe(true)
    expect(log.bytes).toBe(Buffer.byteLength(text(-1)))
    for (const seq of [0, 1, 30, 49])
      expect(log.frame(seq)!.toString('utf8')).toBe(formatFrame(undefined, events[seq], seq))
    expect(log.frame(50)).toBeUndefined()
    expect(log.frame(-1)).toBeUndefined()
  })

  it('keeps the frames it handed out intact while it grows', () => {
    const log = new FrameLog(1024)
    const first = log.append(event(0, 'x'.repeat(600)))
    const copy = Buffer.from(first)
    for (let seq = 1; seq < 200; seq++) log.append(event(seq, 'y'.repeat(300)))
    expect(first.equals(copy)).toBe(true)
    expect(log.since(-1).bytes.subarray(0, copy.length).equals(copy)).toBe(true)
  })

  it('refuses an event out of seq order, and stays as it was', () => {
    const log = FrameLog.of([event(0), event(1)])
    expect(() => log.append(event(3))).toThrow(/expected seq 2, got 3/)
    expect(() => log.append(event(1))).toThrow(/expected seq 2, got 1/)
    expect(log.length).toBe(2)
    expect(log.append(event(2)).toString()).toBe(formatFrame(undefined, event(2), 2))
  })

  it('cuts a replay at the last whole frame under a byte limit', () => {
    const events = Array.from({ length: 10 }, (_, i) => event(i))
    const log = FrameLog.of(events)
    const frames = events.map((e) => formatFrame(undefined, e, e.seq))
    const limit = Buffer.byteLength(frames[3] + frames[4] + frames[5]) + 5
    const cut = log.since(2, limit)
    expect(cut.complete).toBe(false)
    expect(cut.bytes.toString()).toBe(frames[3] + frames[4] + frames[5])
    expect(log.since(2, 3).bytes.length).toBe(0)
    expect(log.since(8, limit)).toMatchObject({ complete: true })
  })
})

const delta = (seq: number, text: string, kind = 'reasoning-delta', extra: object = {}) => ({
  type: 'assistant/chunk',
  seq,
  time: 1_700_000_000_000 + (seq >> 3),
  data: { chunk: { kind, text, ...extra } },
})

/** A log of deltas in runs of both kinds, broken by other events, a delta with a signature, a long run and long texts. */
function mixedLog() {
  const events: object[] = []
  const push = (make: (seq: number) => object) => events.push(make(events.length))
  push((s) => event(s))
  for (let i = 0; i < 700; i++) push((s) => delta(s, i % 5 ? 'x ' : 'ünï ✓'))
  push((s) => delta(s, 'signed', 'reasoning-delta', { signature: 'sig' }))
  push((s) => delta(s, 'alone'))
  push((s) => event(s))
  for (let i = 0; i < 40; i++) push((s) => delta(s, `word ${i} `, i < 20 ? 'reasoning-delta' : 'text-delta'))
  for (let i = 0; i < 6; i++) push((s) => delta(s, 'L'.repeat(RUN_MAX_CHARS / 2 - 1), 'text-delta'))
  push((s) => ({ type: 'assistant/chunk', seq: s, time: 1, data: { chunk: { kind: 'usage', usage: { input: 1 } } } }))
  push((s) => event(s))
  return events as Array<{ seq: number }>
}

describe('FrameLog chunk runs', () => {
  it('sends runs of deltas as chunks frames that expand to exactly the log after any seq', () => {
    const events = mixedLog()
    const log = FrameLog.of(events)
    for (let after = -1; after <= events.length; after++) {
      const { bytes, complete } = log.since(after, Infinity, true)
      expect(complete).toBe(true)
      const frames = parseFrames(bytes.toString('utf8'))
      expect(logEvents(frames)).toEqual(events.slice(after + 1))
      for (const frame of frames.filter((f) => f.event === 'chunks')) {
        expect(frame.data.text.length).toBeGreaterThanOrEqual(2)
        expect(frame.data.text.length).toBeLessThanOrEqual(RUN_MAX_EVENTS)
        expect(frame.data.text.join('').length).toBeLessThanOrEqual(RUN_MAX_CHARS)
      }
    }
    const frames = parseFrames(log.since(-1, Infinity, true).bytes.toString('utf8'))
    // 700 deltas: three full runs and one of 700 - 3 * 256; the 40 words: one run per kind, the
    // text one going on with the first long text; then the long texts two a frame (the last
    // alone); everything else as its own frame.
    expect(frames.filter((f) => f.event === 'chunks').map((f) => f.data.text.length)).toEqual([
      256, 256, 188, 20, 21, 2, 2,
    ])
    expect(frames.filter((f) => f.event === 'message').map((f) => f.id)).toEqual([0, 701, 702, 703, 749, 750, 751])
    // Events outside runs are the shared frames, byte for byte.
    expect(
      log
        .since(700, Infinity, true)
        .bytes.toString()
        .startsWith(
          log
            .since(700)
            .bytes.subarray(0, log.frame(701)!.length + log.frame(702)!.length + log.frame(703)!.length)
            .toString(),
        ),
    ).toBe(true)
    // Without runs: the frames of each event as before.
    expect(log.since(-1).bytes.toString()).toBe(events.map((e) => formatFrame(undefined, e, e.seq)).join(''))
  })

  it('a run of short deltas costs a small part of the bytes of their frames', () => {
    const log = FrameLog.of(Array.from({ length: 2000 }, (_, i) => delta(i, 'x ')))
    const runs = log.since(-1, Infinity, true).bytes.length
    expect(runs * 10).toBeLessThan(log.since(-1).bytes.length)
  })

  it('cuts a replay with runs at the last whole frame under a byte limit', () => {
    const events = mixedLog()
    const log = FrameLog.of(events)
    for (const limit of [0, 100, 1500, 4000, 20_000, 40_000]) {
      for (const after of [-1, 0, 300, 702]) {
        const { bytes, complete } = log.since(after, limit, true)
        expect(bytes.length).toBeLessThanOrEqual(limit)
        const got = logEvents(parseFrames(bytes.toString()))
        expect(got).toEqual(events.slice(after + 1, after + 1 + got.length))
        expect(complete).toBe(got.length === events.length - after - 1)
        // The next frame would not have fitted.
        if (!complete)
          expect(log.since(after + got.length, Infinity, true).bytes.length + bytes.length).toBeGreaterThan(limit)
      }
    }
  })
})

describe('SseClient raw writes', () => {
  let server: Server | undefined
  afterEach(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined))
    server = undefined
  })

  /** A server whose one stream gets `act(client)`; resolves with the bytes the reader received. */
  async function stream(
    maxBufferedBytes: number,
    act: (client: SseClient) => void,
    chunkRuns = false,
  ): Promise<string> {
    server = createServer((req, res) => {
      const client = new SseClient(req, res, { maxBufferedBytes, heartbeatMs: 0, chunkRuns })
      act(client)
      client.close()
    })
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    return new Promise((resolve, reject) => {
      request(`http://127.0.0.1:${port}/`, (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => (text += c))
        res.on('end', () => resolve(text))
      })
        .on('error', reject)
        .end()
    })
  }

  it('writes a replay and live frames as the same bytes for every client', async () => {
    const events = Array.from({ length: 30 }, (_, i) => event(i))
    const log = FrameLog.of(events.slice(0, 20))
    const live = events.slice(20).map((e) => log.append(e))
    const expected = (after: number) =>
      events
        .slice(after + 1)
        .map((e) => formatFrame(undefined, e, e.seq))
        .join('')
    for (const after of [-1, 4, 19]) {
      const text = await stream(1 << 20, (client) => {
        expect(client.replay(FrameLog.of(events.slice(0, 20)), after)).toBe(true)
        for (const frame of live) expect(client.writeFrame(frame)).toBe(true)
      })
      expect(text).toBe(expected(after))
      await new Promise((resolve) => server!.close(resolve))
      server = undefined
    }
  })

  it('a replay over the buffer bound sends whole frames up to it, then resync', async () => {
    const events = Array.from({ length: 100 }, (_, i) => event(i, 'z'.repeat(200)))
    const log = FrameLog.of(events)
    let ok: boolean | undefined
    const text = await stream(4096, (client) => {
      ok = client.replay(log, -1)
      expect(client.closed).toBe(true)
      expect(client.writeFrame(log.frame(0)!)).toBe(false)
    })
    expect(ok).toBe(false)
    const [body, tail] = text.split('event: resync\n')
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(4096)
    expect(body).toBe(log.since(-1, 4096).bytes.toString())
    expect(body.endsWith('\n\n')).toBe(true)
    expect(tail).toContain('fell behind')
  })

  it('a client that asked for chunk runs is written runs; the others each event', async () => {
    const events = mixedLog()
    const log = FrameLog.of(events)
    const runs = await stream(1 << 20, (client) => expect(client.replay(log, 10)).toBe(true), true)
    expect(runs).toBe(log.since(10, Infinity, true).bytes.toString())
    expect(logEvents(parseFrames(runs))).toEqual(events.slice(11))
    await new Promise((resolve) => server!.close(resolve))
    server = undefined
    const plain = await stream(1 << 20, (client) => expect(client.replay(log, 10)).toBe(true))
    expect(plain).toBe(log.since(10).bytes.toString())
  })
})
