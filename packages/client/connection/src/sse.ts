// Server-Sent Events over fetch (not EventSource): the caller picks the resume point (`?after=`)
// and the retry policy itself, and sees the end of a stream as an ordinary return.
import { Utf8Decoder } from './utf8.ts'

/** Longest stretch (ms) of frame handling before the reader yields to the page (input, paint). */
const SLICE_MS = 5
/** A read at least this large that waited for the network is handled in a fresh task. */
const BIG_READ = 32 * 1024
/** Bytes decoded and cut into lines at a time. */
const PIECE_BYTES = 16 * 1024

/** Resolves on a fresh task (after input and rendering had their turn), not a microtask. */
function yieldToPage(): Promise<void> {
  const scheduler = (globalThis as { scheduler?: { yield?: () => Promise<void> } }).scheduler
  if (typeof scheduler?.yield === 'function') return scheduler.yield()
  if (typeof MessageChannel === 'function') {
    return new Promise((resolve) => {
      const channel = new MessageChannel()
      channel.port1.onmessage = () => {
        channel.port1.close()
        resolve()
      }
      channel.port2.postMessage(null)
    })
  }
  return new Promise((resolve) => setTimeout(resolve, 0))
}

export interface SseFrame {
  event: string
  data: string
  id?: string
}

/**
 * Reads one SSE response, calling `onFrame` per dispatched event. Resolves when the stream ends;
 * rejects on a network error or a non-200 answer (with the host's JSON error message when given).
 */
export async function readSse(
  url: string,
  options: {
    signal: AbortSignal
    onOpen?: () => void /** May return the work the frame took beyond one line, in lines' worth (a frame carrying many events), so the reader yields in time. */
    onFrame: (frame: SseFrame) => number | void
    fetch?: typeof fetch /** Clock for the slices (tests); default `performance.now`. */
    now?: () => number /** How the reader yields to the page (tests); default a fresh task. */
    yield?: () => Promise<void>
  },
): Promise<void> {
  const response = await (options.fetch ?? fetch)(url, {
    headers: { accept: 'text/event-stream' },
    signal: options.signal,
    credentials: 'same-origin',
    cache: 'no-store',
  })
  if (!response.ok || !response.body) {
    let message = `${response.status}`
    let code = 'HTTP_' + response.status
    try {
      const body = await response.json()
      if (body?.error?.message) message = body.error.message
      if (body?.error?.code) code = body.error.code
    } catch {
      // not JSON: keep the status
    }
    throw new StreamError(code, message, response.status)
  }
  options.onOpen?.()
  // Bytes are decoded in script (see utf8.ts: the browser's decoders make strings that cost a
  // long finalizer task after a major GC), a piece of at most PIECE_BYTES at a time, so the
  // string being cut into lines stays small however much one network read holds.
  const reader = response.body.getReader()
  const decoder = new Utf8Decoder()
  let buffer = ''
  let event = ''
  let data: string[] = []
  let id: string | undefined
  const dispatch = () => {
    if (data.length) {
      const frame: SseFrame = { event: event || 'message', data: data.length === 1 ? data[0] : data.join('\n') }
      if (id !== undefined) frame.id = id
      const more = options.onFrame(frame)
      if (typeof more === 'number' && more > 0) work += more
    }
    event = ''
    data = []
    id = undefined
  }
  // A network read can hold thousands of frames (a replay, a fast stream): handle them in slices
  // of at most SLICE_MS so one read never becomes one long main-thread task.
  const now = options.now ?? (typeof performance === 'object' ? () => performance.now() : () => Date.now())
  const pause = options.yield ?? yieldToPage
  let sliceStart = now()
  // Work since the slice was last checked: one per line, plus one per KB of a long line (a frame
  // of a few hundred KB, e.g. a committed message holding a long reasoning, is not one line's
  // worth of work: the slice is checked before it is handled).
  let work = 0
  // Decoded pieces of a line that has not ended yet (no newline in them): joined once when it
  // ends, not appended and rescanned piece after piece (quadratic in the line's length).
  let pending: string[] = []
  for (;;) {
    const before = now()
    const { value, done } = await reader.read()
    if (done) break
    // A read that was already buffered resolves as a microtask of the same task: the slice goes
    // on (resetting it here let a burst of reads become one long task). A read that waited for
    // the network starts a fresh slice.
    if (now() - before > SLICE_MS) {
      sliceStart = now()
      // The task that delivered a large read already spent a while receiving it (in traces of a
      // fast stream, reads of 0.5-1 MB cost the delivering task 5-8 ms before this code ran):
      // handle it in a fresh task, so receiving and handling are not one long task.
      if (value.length >= BIG_READ) {
        await pause()
        if (options.signal.aborted) return
        sliceStart = now()
      }
    }
    for (let at = 0; at < value.length; at += PIECE_BYTES) {
      const piece = decoder.decode(value.subarray(at, at + PIECE_BYTES), { stream: true })
      if (!piece.includes('\n')) {
        pending.push(piece)
        continue
      }
      // Everything before `piece` holds no newline (it was searched already).
      let from = buffer.length
      if (pending.length) {
        const held = pending.join('')
        pending = []
        from += held.length
        buffer += held
      }
      buffer += piece
      let start = 0
      for (;;) {
        const nl = buffer.indexOf('\n', Math.max(start, from))
        if (nl < 0) break
        work += 1 + ((nl - start) >> 10)
        if (work >= 64) {
          work = 0
          if (now() - sliceStart > SLICE_MS) {
            await pause()
            if (options.signal.aborted) return
            sliceStart = now()
          }
        }
        let line = buffer.slice(start, nl)
        start = nl + 1
        if (line.endsWith('\r')) line = line.slice(0, -1)
        if (line === '') {
          dispatch()
          continue
        }
        if (line.startsWith(':')) continue
        const colon = line.indexOf(':')
        const field = colon < 0 ? line : line.slice(0, colon)
        let rest = colon < 0 ? '' : line.slice(colon + 1)
        if (rest.startsWith(' ')) rest = rest.slice(1)
        if (field === 'data') data.push(rest)
        else if (field === 'event') event = rest
        else if (field === 'id') id = rest
      }
      buffer = buffer.slice(start)
    }
  }
}

export class StreamError extends Error {
  override name = 'StreamError'
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message)
  }
}
