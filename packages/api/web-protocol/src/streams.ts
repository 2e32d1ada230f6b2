// The downlink: Server-Sent Events frames of the session and host streams. Browser-safe.
import type { SessionRow, SessionStatus, WireEvent, WireQuestionAnswer } from './sessions.ts'

/**
 * Path of a session's stream; `?after=<seq>` or `Last-Event-ID: <seq>` resumes after that seq,
 * and `?chunks=runs` (CHUNK_RUNS_PARAM) asks for runs of streamed deltas as `chunks` frames.
 */
export const sessionStreamPath = (sessionId: string): string => `/api/events/session/${encodeURIComponent(sessionId)}`
/** Query parameter (`chunks=runs`) by which a session stream client asks for `chunks` frames. */
export const CHUNK_RUNS_PARAM = 'chunks'
export const HOST_STREAM_PATH = '/api/events/host'
/** Path of a method call: `POST` with the params as a JSON body. */
export const methodPath = (name: string): string => `/api/${name}`

/**
 * SSE event names on a session stream. Log events use the default event name (`message`) and
 * carry `id: <seq>`, so `Last-Event-ID` is always the last log seq the client holds. The others
 * carry no id (they are state, re-sent on every connect) and are not in the log:
 * - `status`: `{sessionId, status, queued}`
 * - `approval`: `{requestId, sessionId, request}` (pending; re-sent on connect while pending)
 * - `approval/resolved`: `{requestId, decision}`
 * - `question`: `{requestId, sessionId, questions}` and `question/resolved`: `{requestId, status}`
 * - `resync`: `{reason}`: the client fell behind its buffer; the stream closes; refetch history.
 * A client that asked with `?chunks=runs` also gets `chunks` frames: a run of consecutive log
 * events that are streamed text or reasoning deltas, as one `WireChunkRun` whose `id` is the
 * seq of its last event (see `expandChunkRun`); everything else is as above.
 */
export type SessionStreamEvent =
  | { event: 'message'; id: number; data: WireEvent }
  | { event: 'chunks'; id: number; data: WireChunkRun }
  | { event: 'status'; data: { sessionId: string; status: SessionStatus; queued: number } }
  | { event: 'approval'; data: { requestId: string; sessionId: string; request: WireApprovalRequest } }
  | { event: 'approval/resolved'; data: { requestId: string; decision: string } }
  | { event: 'question'; data: { requestId: string; sessionId: string; questions: WireQuestion[] } }
  | { event: 'question/resolved'; data: { requestId: string; status: string } }
  | { event: 'resync'; data: { reason: string } }

export interface WireApprovalRequest {
  kind: string
  title: string
  detail?: string
  action: unknown
  options: string[]
  time: number
}

export interface WireQuestion {
  id: string
  question: string
  header?: string
  options?: Array<{ label: string; description?: string }>
  multiSelect?: boolean
}

/**
 * Host stream event: the host's command list changed (a command registered or removed, an MCP
 * server's prompts re-listed); `commands.list` answers the new list. Bursts are sent once.
 */
export const COMMANDS_CHANGED = 'commands/changed'

/** Host stream payloads (default event name, JSON data with a `type`). */
export type HostStreamEvent =
  | { type: 'session/added'; session: SessionRow }
  | { type: 'session/removed'; sessionId: string }
  | { type: 'session/status'; sessionId: string; status: SessionStatus; queued: number }
  | { type: 'session/changed'; session: SessionRow }
  | { type: 'workspace/changed'; [key: string]: unknown }
  | { type: typeof COMMANDS_CHANGED }
  | { type: string; [key: string]: unknown }

export type { WireQuestionAnswer }

/** The log event type of a streamed model delta. */
export const CHUNK_EVENT_TYPE = 'assistant/chunk'
type RunKind = 'text-delta' | 'reasoning-delta'

/**
 * Consecutive `assistant/chunk` log events, each `{seq, type, time, data: {chunk: {kind, text}}}`
 * with the same `kind` (`text-delta` or `reasoning-delta`) and nothing else, in one frame: the
 * same events in a fraction of the bytes (a delta of a few characters costs its text plus ~3
 * bytes instead of a ~130-byte JSON event). Event `i` has seq `seq + i`, chunk text `text[i]`
 * and time `time[0] + ... + time[i]` (the first time, then differences: mostly 0).
 */
export interface WireChunkRun {
  seq: number
  kind: RunKind
  text: string[]
  time: number[]
}

const isPlain = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Whether a log event can travel in a `WireChunkRun` (and come out of it equal); its chunk kind, else undefined. */
export function chunkRunKind(event: unknown): RunKind | undefined {
  if (!isPlain(event) || event.type !== CHUNK_EVENT_TYPE || !Number.isSafeInteger(event.time)) return undefined
  let keys = 0
  for (const key in event) {
    if (key !== 'seq' && key !== 'type' && key !== 'time' && key !== 'data') return undefined
    keys++
  }
  const data = event.data
  if (keys !== 4 || !isPlain(data)) return undefined
  for (const key in data) if (key !== 'chunk') return undefined
  const chunk = data.chunk
  if (
    !isPlain(chunk) ||
    typeof chunk.text !== 'string' ||
    (chunk.kind !== 'text-delta' && chunk.kind !== 'reasoning-delta')
  )
    return undefined
  for (const key in chunk) if (key !== 'kind' && key !== 'text') return undefined
  return chunk.kind
}

/** The run of `events` (consecutive seqs, each accepted by `chunkRunKind` with one kind). */
export function encodeChunkRun(events: readonly WireEvent[]): WireChunkRun {
  const first = events[0]
  if (!first) throw new RangeError('encodeChunkRun: no events')
  const kind = chunkRunKind(first)
  if (!kind) throw new TypeError(`encodeChunkRun: event ${first.seq} is not a plain text or reasoning delta`)
  const text: string[] = []
  const time: number[] = []
  let last = 0
  for (let i = 0; i < events.length; i++) {
    const event = events[i]
    if (event.seq !== first.seq + i || (i > 0 && chunkRunKind(event) !== kind))
      throw new TypeError(`encodeChunkRun: event ${event.seq} does not continue the run`)
    text.push((event.data as { chunk: { text: string } }).chunk.text)
    time.push(i === 0 ? event.time : event.time - last)
    last = event.time
  }
  return { seq: first.seq, kind, text, time }
}

/**
 * The log events of a run, or undefined when `run` is not a well-formed `WireChunkRun` (a client
 * treats that like a malformed frame). `kind` is the string every event shares.
 */
export function expandChunkRun(run: unknown): WireEvent[] | undefined {
  if (!isPlain(run)) return undefined
  const { seq, kind, text, time } = run
  if (!Number.isSafeInteger(seq) || (seq as number) < 0 || (kind !== 'text-delta' && kind !== 'reasoning-delta'))
    return undefined
  if (!Array.isArray(text) || !Array.isArray(time) || text.length === 0 || text.length !== time.length) return undefined
  const events: WireEvent[] = new Array(text.length)
  let at = 0
  for (let i = 0; i < text.length; i++) {
    const piece = text[i]
    const step = time[i]
    if (typeof piece !== 'string' || typeof step !== 'number' || !Number.isSafeInteger(step)) return undefined
    at = i === 0 ? step : at + step
    events[i] = { seq: (seq as number) + i, type: CHUNK_EVENT_TYPE, time: at, data: { chunk: { kind, text: piece } } }
  }
  return events
}
