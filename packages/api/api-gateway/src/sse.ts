// One Server-Sent Events client with a bounded buffer: when the bytes the socket has not taken
// yet pass `maxBufferedBytes`, the client gets a `resync` event and is closed, so a slow reader
// never makes the host hold (or the agent wait for) an unbounded backlog.
import type { IncomingMessage, ServerResponse } from 'node:http'

export interface SseOptions {
  maxBufferedBytes: number
  heartbeatMs: number
  onClose?: () => void
}

// Frames of log events, by event object: a log event is immutable once appended, so its frame is
// serialised once and then written to every client that streams it, live or in a replay. Held
// only as long as the event itself (the session in memory); state frames are not cached.
const logFrames = new WeakMap<object, string>()

/** `id:`/`event:`/`data:` lines of one SSE event (the data as one line of JSON). */
export function formatFrame(event: string | undefined, data: unknown, id?: number): string {
  const cacheable = id !== undefined && event === undefined && data !== null && typeof data === 'object'
  if (cacheable) {
    const cached = logFrames.get(data)
    if (cached !== undefined) return cached
  }
  let frame = ''
  if (id !== undefined) frame += `id: ${id}\n`
  if (event !== undefined && event !== 'message') frame += `event: ${event}\n`
  frame += `data: ${JSON.stringify(data)}\n\n`
  if (cacheable) logFrames.set(data as object, frame)
  return frame
}

export class SseClient {
  closed = false
  private heartbeat: NodeJS.Timeout | undefined

  constructor(readonly req: IncomingMessage, readonly res: ServerResponse, private readonly options: SseOptions) {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    })
    res.flushHeaders?.()
    const close = () => this.close()
    req.on('close', close)
    res.on('close', close)
    res.on('error', close)
    // The peer may have gone while the provider was loading the session: its close event has
    // fired already, so end this client right after the provider has attached it.
    if (req.destroyed || res.destroyed || res.writableEnded) queueMicrotask(close)
    if (options.heartbeatMs > 0) {
      this.heartbeat = setInterval(() => this.write(': ping\n\n'), options.heartbeatMs)
      this.heartbeat.unref?.()
    }
  }

  /** Sends one event; `id` is set only for log events. Returns false when the client is gone. */
  send(event: string | undefined, data: unknown, id?: number): boolean {
    if (this.closed) return false
    return this.write(formatFrame(event, data, id))
  }

  /**
   * Runs `fn` (a run of sends, such as a replay) collecting its frames, then writes them as one
   * string instead of one write per event. The buffer bound applies as usual: once the collected
   * bytes and what the socket still holds pass it, what was collected is written, then `resync`.
   */
  batch(fn: () => void): void {
    if (this.closed || this.collected) return fn()
    const collected = { parts: [] as string[], bytes: 0 }
    this.collected = collected
    try {
      fn()
    } finally {
      this.collected = undefined
      if (collected.parts.length && !this.closed) this.res.write(collected.parts.join(''))
      if (collected.bytes < 0 && !this.closed) this.resync('the client fell behind its stream buffer')
    }
  }

  private collected: { parts: string[]; bytes: number } | undefined

  private write(frame: string): boolean {
    if (this.closed) return false
    const collected = this.collected
    if (collected) {
      if (collected.bytes < 0) return false
      if (this.res.writableLength + collected.bytes > this.options.maxBufferedBytes) {
        collected.bytes = -1 // written, then resync, when the batch ends
        return false
      }
      collected.parts.push(frame)
      collected.bytes += frame.length
      return true
    }
    if (this.res.writableLength > this.options.maxBufferedBytes) {
      this.resync('the client fell behind its stream buffer')
      return false
    }
    this.res.write(frame)
    return true
  }

  /** Tells the client to refetch and closes the stream. */
  resync(reason: string): void {
    if (this.closed) return
    this.res.write(`event: resync\ndata: ${JSON.stringify({ reason })}\n\n`)
    this.close()
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    if (this.heartbeat) clearInterval(this.heartbeat)
    this.res.end()
    // A client that stopped reading would keep the socket (and its buffer) forever.
    if (this.res.writableLength > 0) setTimeout(() => this.res.destroy(), 1000).unref?.()
    this.options.onClose?.()
  }
}
