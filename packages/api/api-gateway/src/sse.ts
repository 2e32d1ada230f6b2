// One Server-Sent Events client with a bounded buffer: when the bytes the socket has not taken
// yet pass `maxBufferedBytes`, the client gets a `resync` event and is closed, so a slow reader
// never makes the host hold (or the agent wait for) an unbounded backlog.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { chunkRunKind, encodeChunkRun, type WireEvent } from '@dsh/web-protocol'

export interface SseOptions {
  maxBufferedBytes: number
  heartbeatMs: number
  /** The client asked for `chunks` frames (`?chunks=runs`): runs of deltas are sent as one frame each. */
  chunkRuns?: boolean
  onClose?: () => void
}

/** `id:`/`event:`/`data:` lines of one SSE event (the data as one line of JSON). */
export function formatFrame(event: string | undefined, data: unknown, id?: number): string {
  let frame = ''
  if (id !== undefined) frame += `id: ${id}\n`
  if (event !== undefined && event !== 'message') frame += `event: ${event}\n`
  frame += `data: ${JSON.stringify(data)}\n\n`
  return frame
}

/** Most deltas in one `chunks` frame, and most characters of text (a frame stays a small task for the page to expand). */
export const RUN_MAX_EVENTS = 256
export const RUN_MAX_CHARS = 16 * 1024

/**
 * The SSE frames of one session's log events (`id: <seq>` plus the event as JSON), each
 * serialised once into one growing buffer. A log event never changes once appended, so a replay
 * from any seq is a slice of that buffer and a live event is one frame: every client is written
 * the same bytes, with no per-client JSON or string encoding. Seqs are contiguous from 0.
 */
export class FrameLog {
  private buf: Buffer
  private used = 0
  /** `ends[seq]`: the byte offset just past the frame of `seq`. */
  private readonly ends: number[] = []
  /** `deltas[seq]`: the event when it can join a `chunks` frame (a plain text or reasoning delta). */
  private readonly deltas: (WireEvent | undefined)[] = []

  constructor(initialBytes = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(Math.max(1024, initialBytes))
  }

  /** A frame log of `events` (seq 0..n-1, in order). */
  static of(events: readonly { seq: number }[]): FrameLog {
    const log = new FrameLog()
    for (const event of events) log.append(event)
    return log
  }

  /** Number of frames (the next seq to append). */
  get length(): number {
    return this.ends.length
  }

  /** Bytes held by the frames. */
  get bytes(): number {
    return this.used
  }

  /**
   * Serialises `event` (whose seq must be `length`) and returns its frame, a view that stays
   * valid (later appends never move bytes a view was handed).
   */
  append(event: { seq: number }): Buffer {
    if (event.seq !== this.ends.length)
      throw new RangeError(`FrameLog.append: expected seq ${this.ends.length}, got ${event.seq}`)
    const text = `id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`
    const size = Buffer.byteLength(text)
    if (this.used + size > this.buf.length) {
      // Grow into a new buffer: views already handed out keep the old one alive until written.
      const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + size))
      this.buf.copy(next, 0, 0, this.used)
      this.buf = next
    }
    const start = this.used
    this.buf.write(text, start, size, 'utf8')
    this.used += size
    this.ends.push(this.used)
    this.deltas.push(chunkRunKind(event) ? (event as WireEvent) : undefined)
    return this.buf.subarray(start, this.used)
  }

  /** The frame of `seq`, or undefined when there is none. */
  frame(seq: number): Buffer | undefined {
    if (!Number.isInteger(seq) || seq < 0 || seq >= this.ends.length) return undefined
    return this.buf.subarray(seq === 0 ? 0 : this.ends[seq - 1], this.ends[seq])
  }

  /**
   * The frames of every event after `after` (-1: all), at most `maxBytes` of them (whole frames
   * only); `complete` is false when some were left out for the limit.
   */
  since(after: number, maxBytes = Infinity, chunkRuns = false): { bytes: Buffer; complete: boolean } {
    if (chunkRuns) return this.runsSince(after, maxBytes)
    const first = Math.max(0, after + 1)
    const start = first === 0 ? 0 : first <= this.ends.length ? this.ends[first - 1] : this.used
    let end = this.used
    let complete = true
    if (end - start > maxBytes) {
      complete = false
      // The last frame that still fits: binary search over the frame ends.
      let lo = first
      let hi = this.ends.length - 1
      end = start
      while (lo <= hi) {
        const mid = (lo + hi) >> 1
        if (this.ends[mid] - start <= maxBytes) {
          end = this.ends[mid]
          lo = mid + 1
        } else hi = mid - 1
      }
    }
    return { bytes: this.buf.subarray(start, end), complete }
  }

  /**
   * As `since`, for a client that takes `chunks` frames: each run of two or more consecutive
   * deltas of one kind (at most RUN_MAX_EVENTS / RUN_MAX_CHARS) is one `chunks` frame whose id
   * is its last seq; every other event is its shared frame. Runs are cut from `after` on, so a
   * client resuming from any seq gets exactly the events after it.
   */
  private runsSince(after: number, maxBytes: number): { bytes: Buffer; complete: boolean } {
    const parts: Buffer[] = []
    let size = 0
    const n = this.ends.length
    let seq = Math.max(0, after + 1)
    // Start of a stretch of plain frames not yet taken (they are contiguous in the buffer).
    let plainFrom = seq
    const takePlain = (to: number): boolean => {
      if (to <= plainFrom) return true
      const start = plainFrom === 0 ? 0 : this.ends[plainFrom - 1]
      let end = this.ends[to - 1]
      let fits = true
      if (size + end - start > maxBytes) {
        fits = false
        // Whole frames only: the last one that still fits.
        let last = plainFrom - 1
        while (last + 1 < to && size + this.ends[last + 1] - start <= maxBytes) last++
        end = last < plainFrom ? start : this.ends[last]
      }
      if (end > start) parts.push(this.buf.subarray(start, end))
      size += end - start
      plainFrom = to
      return fits
    }
    let complete = true
    while (seq < n) {
      const first = this.deltas[seq]
      let length = 0
      if (first) {
        const kind = (first.data as { chunk: { kind: string } }).chunk.kind
        let chars = 0
        for (;;) {
          const event = this.deltas[seq + length]
          if (!event || length >= RUN_MAX_EVENTS) break
          const chunk = (event.data as { chunk: { kind: string; text: string } }).chunk
          if (chunk.kind !== kind || (length > 0 && chars + chunk.text.length > RUN_MAX_CHARS)) break
          chars += chunk.text.length
          length++
        }
      }
      if (length < 2) {
        seq++
        continue
      }
      if (!takePlain(seq)) {
        complete = false
        break
      }
      const last = seq + length - 1
      const frame = Buffer.from(
        `id: ${last}\nevent: chunks\ndata: ${JSON.stringify(encodeChunkRun(this.deltas.slice(seq, last + 1) as WireEvent[]))}\n\n`,
      )
      if (size + frame.length > maxBytes) {
        complete = false
        break
      }
      parts.push(frame)
      size += frame.length
      seq = last + 1
      plainFrom = seq
    }
    if (complete && !takePlain(n)) complete = false
    return { bytes: parts.length === 1 ? parts[0] : Buffer.concat(parts, size), complete }
  }
}

export class SseClient {
  closed = false
  private heartbeat: NodeJS.Timeout | undefined

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    private readonly options: SseOptions,
  ) {
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
    if (this.closed || this.collected) {
      fn()
      return
    }
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

  /**
   * Writes one pre-serialised log frame (the same bytes for every client). False when the client
   * is gone or has fallen behind its buffer (it then got `resync` and is closed).
   */
  writeFrame(frame: Uint8Array): boolean {
    if (this.closed) return false
    if (this.res.writableLength > this.options.maxBufferedBytes) {
      this.resync('the client fell behind its stream buffer')
      return false
    }
    this.res.write(frame)
    return true
  }

  /**
   * Writes the frames after `after` as one write of shared bytes. A replay larger than the buffer
   * bound writes what fits, then `resync` (the client refetches the history page by page).
   */
  replay(frames: FrameLog, after: number): boolean {
    if (this.closed) return false
    const { bytes, complete } = frames.since(
      after,
      Math.max(0, this.options.maxBufferedBytes - this.res.writableLength),
      this.options.chunkRuns,
    )
    if (bytes.length) this.res.write(bytes)
    if (!complete) {
      this.resync('the client fell behind its stream buffer')
      return false
    }
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
