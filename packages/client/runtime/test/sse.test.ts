// readSse: frames parsed exactly, and a burst of already-buffered network reads is handled in
// slices (the reader yields to the page) instead of one long task. The clock is injected (one
// millisecond per reading), so "long" does not depend on the machine's speed.
import { describe, expect, it } from 'vitest'
import { readSse } from '../src/index.ts'

/** A fetch whose body holds `chunks` already queued (as a fast stream or a replay arrives). */
const bufferedFetch = (chunks: string[]): typeof fetch => async () => {
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
    await readSse('http://x/', { signal: new AbortController().signal, fetch: bufferedFetch(pieces), onFrame: (f) => seen.push(`${f.event}:${f.id}:${f.data}`) })
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
})
