// readSse: frames parsed exactly, and a burst of already-buffered network reads is handled in
// slices (the reader yields to the page) instead of one long task. The clock is injected (one
// millisecond per reading), so "long" does not depend on the machine's speed.
import { describe, expect, it } from 'vitest'
import { readSse } from '../src/index.ts'

/** A fetch whose body holds `chunks` already queued (as a fast stream or a replay arrives). */
const bufferedFetch =
  (chunks: string[]): typeof fetch =>
  async () => {
    const encoder = new TextEncoder()
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(encoder.encode(chunk))
        controller.close()
      },
    })
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } })
  }

describe('readSse', () => {
  const N = 3000
  const frames = Array.from({ length: N }, (_, i) => `id: ${i}\ndata: {"seq":${i}}\n\n`)

  it('dispatches every frame once, in order, across reads split anywhere', async () => {
    const whole = frames.join('')
    const pieces: string[] = []
    for (let at = 0; at < whole.length; at += 37) pieces.push(whole.slice(at, at + 37))
    const seen: string[] = []
    await readSse('http://x/', {
      signal: new AbortController().signal,
      fetch: bufferedFetch(pieces),
      onFrame: (f) => seen.push(`${f.event}:${f.id}:${f.data}`),
    })
    expect(seen).toEqual(Array.from({ length: N }, (_, i) => `message:${i}:{"seq":${i}}`))
  })

  it('yields to other tasks during a burst of small buffered reads (one frame per read)', async () => {
    let clock = 0
    let handled = 0
    let handledWhenTaskRan: number | undefined
    setTimeout(() => (handledWhenTaskRan = handled), 0)
    await readSse('http://x/', {
      signal: new AbortController().signal,
      fetch: bufferedFetch(frames),
      now: () => ++clock,
      onFrame: () => void handled++,
    })
    expect(handled).toBe(N)
    // Another task got its turn before the burst was through.
    expect(handledWhenTaskRan).toBeDefined()
    expect(handledWhenTaskRan!).toBeLessThan(N)
  })

  it('reads a frame of several hundred KB split across reads exactly, and checks the slice before handling it', async () => {
    // Multi-byte text too, so pieces end inside a character as well as inside the line.
    const long = JSON.stringify({ text: 'x '.repeat(120_000) + 'é€😀'.repeat(3000) + ' end' })
    const whole =
      `id: 1\ndata: {"seq":1}\n\n` + `id: 2\nevent: message\ndata: ${long}\n\n` + `id: 3\ndata: {"seq":3}\n\n`
    const bytes = new TextEncoder().encode(whole)
    const cuts: number[] = []
    for (let at = 0; at < bytes.length; ) {
      at += 1 + Math.floor(Math.random() * 50_000)
      cuts.push(Math.min(at, bytes.length))
    }
    const fetchBytes: typeof fetch = async () => {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          let from = 0
          for (const to of cuts) controller.enqueue(bytes.slice(from, to)), (from = to)
          controller.close()
        },
      })
      return new Response(body, { status: 200 })
    }
    let clock = 0
    let taskRan = false
    let taskRanBeforeLong: boolean | undefined
    setTimeout(() => (taskRan = true), 0)
    const seen: string[] = []
    await readSse('http://x/', {
      signal: new AbortController().signal,
      fetch: fetchBytes,
      // Five milliseconds per reading: the slice is spent by the time the long line is found.
      now: () => (clock += 5),
      onFrame: (f) => {
        if (f.id === '2') taskRanBeforeLong = taskRan
        seen.push(`${f.event}:${f.id}:${f.data}`)
      },
    })
    expect(seen).toEqual(['message:1:{"seq":1}', `message:2:${long}`, 'message:3:{"seq":3}'])
    // The reader yielded (another task ran) before it handled the long frame.
    expect(taskRanBeforeLong).toBe(true)
  })

  it('handles a large read that waited for the network in a fresh task, a small one at once', async () => {
    const small = `id: 1\ndata: {"seq":1}\n\n`
    const large = `id: 2\ndata: ${JSON.stringify({ text: 'y'.repeat(40_000) })}\n\n`
    const log: string[] = []
    let clock = 0
    await readSse('http://x/', {
      signal: new AbortController().signal,
      fetch: bufferedFetch([small, large]),
      // Every reading is 10 ms after the previous: each read looks like it waited for the network.
      now: () => (clock += 10),
      yield: async () => void log.push('yield'),
      onFrame: (f) => void log.push(`frame ${f.id}`),
    })
    expect(log).toEqual(['frame 1', 'yield', 'frame 2'])
  })

  it('counts the work a frame reports (a run of many events) and yields within the slice after such frames', async () => {
    const log: string[] = []
    let clock = 0
    await readSse('http://x/', {
      signal: new AbortController().signal,
      fetch: bufferedFetch([frames.slice(0, 200).join('')]),
      now: () => clock,
      yield: async () => void log.push('yield'),
      // Each frame stands for 100 events and takes 1 ms.
      onFrame: (f) => {
        log.push(`frame ${f.id}`)
        clock += 1
        return 100
      },
    })
    expect(log.filter((x) => x.startsWith('frame'))).toHaveLength(200)
    // The slice (5 ms) is checked after every such frame: never more than 6 frames between yields.
    const stretches = log
      .join(',')
      .split('yield')
      .map((part) => part.split(',').filter(Boolean).length)
    expect(stretches.length).toBeGreaterThan(30)
    expect(Math.max(...stretches)).toBeLessThanOrEqual(6)
  })
})
