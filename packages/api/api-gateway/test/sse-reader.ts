// A real Server-Sent Events reader over node:http for the tests: parses frames as they arrive.
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { expandChunkRun, type WireEvent } from '@dsh/web-protocol'

export interface Frame {
  id?: number
  event: string
  data: any
}

export class SseReader {
  frames: Frame[] = []
  /** Bytes of the body received so far. */
  bytes = 0
  res?: IncomingMessage
  status = 0
  ended = false
  private waiters: Array<() => void> = []
  private buffer = ''
  private readonly req

  constructor(url: string, headers: Record<string, string> = {}, onCreate?: (reader: SseReader) => void) {
    this.req = httpRequest(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      this.res = res
      this.status = res.statusCode ?? 0
      res.setEncoding('utf8')
      res.on('data', (text: string) => this.feed(text))
      res.on('end', () => ((this.ended = true), this.notify()))
      res.on('close', () => ((this.ended = true), this.notify()))
    })
    this.req.on('error', () => ((this.ended = true), this.notify()))
    this.req.end()
    onCreate?.(this)
  }

  private feed(text: string): void {
    this.bytes += Buffer.byteLength(text)
    this.buffer += text
    let end: number
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const frame = parseBlock(this.buffer.slice(0, end))
      this.buffer = this.buffer.slice(end + 2)
      if (frame) this.frames.push(frame)
    }
    this.notify()
  }

  private notify(): void {
    for (const waiter of this.waiters.splice(0)) waiter()
  }

  /** The log events (frames with an id). */
  get events(): Frame[] {
    return this.frames.filter((f) => f.id !== undefined)
  }

  /**
   * Waits until `test` holds; rejects if the stream ends first, or after `timeoutMs` (naming the
   * frames seen, so a hang in a slow CI run says where it stopped instead of timing out the test).
   */
  async until(test: (frames: Frame[]) => boolean, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    const seen = () =>
      JSON.stringify(this.frames.map((f) => f.event + (f.id ?? '') + (f.data?.type ? `:${f.data.type}` : '')))
    while (!test(this.frames)) {
      if (this.ended) throw new Error(`the stream ended first; frames: ${seen()}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no matching frame within ${timeoutMs} ms; frames: ${seen()}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.waiters.push(() => (clearTimeout(timer), resolve()))
      })
    }
  }

  close(): void {
    this.req.destroy()
    this.res?.destroy()
  }
}

export const turnEnds = (frames: Frame[]) => frames.filter((f) => f.data?.type === 'turn/end').length
export const seqs = (frames: Frame[]) => frames.filter((f) => f.id !== undefined).map((f) => f.id!)

/** The frames of a whole SSE text (the same parsing as the reader's). */
export function parseFrames(text: string): Frame[] {
  return text.split('\n\n').flatMap((block) => parseBlock(block) ?? [])
}

/** One SSE block (the lines between two blank lines) as a frame; undefined when it has no data. */
function parseBlock(block: string): Frame | undefined {
  const frame: Frame = { event: 'message', data: undefined }
  let data = ''
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue
    const [field, ...rest] = line.split(': ')
    const value = rest.join(': ')
    if (field === 'id') frame.id = Number(value)
    else if (field === 'event') frame.event = value
    else if (field === 'data') data += value
  }
  if (data === '') return undefined
  frame.data = JSON.parse(data)
  return frame
}

/**
 * The log events a stream carried, in order: `message` frames as they are and `chunks` frames
 * (runs of deltas) expanded; throws when a run's id is not its last seq or a run is malformed.
 */
export function logEvents(frames: Frame[]): WireEvent[] {
  const events: WireEvent[] = []
  for (const frame of frames) {
    if (frame.id === undefined) continue
    if (frame.event === 'chunks') {
      const run = expandChunkRun(frame.data)
      if (!run) throw new Error(`a malformed chunks frame: ${JSON.stringify(frame.data).slice(0, 200)}`)
      if (run.at(-1)!.seq !== frame.id)
        throw new Error(`a chunks frame with id ${frame.id} ends at seq ${run.at(-1)!.seq}`)
      events.push(...run)
    } else events.push(frame.data)
  }
  return events
}
