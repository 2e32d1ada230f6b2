// The downlink: Server-Sent Events frames of the session and host streams. Browser-safe.
import type { SessionRow, SessionStatus, WireEvent, WireQuestionAnswer } from './sessions.ts'

/** Path of a session's stream; `?after=<seq>` or `Last-Event-ID: <seq>` resumes after that seq. */
export const sessionStreamPath = (sessionId: string): string => `/api/events/session/${encodeURIComponent(sessionId)}`
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
 */
export type SessionStreamEvent =
  | { event: 'message'; id: number; data: WireEvent }
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

/** Host stream payloads (default event name, JSON data with a `type`). */
export type HostStreamEvent =
  | { type: 'session/added'; session: SessionRow }
  | { type: 'session/removed'; sessionId: string }
  | { type: 'session/status'; sessionId: string; status: SessionStatus; queued: number }
  | { type: 'session/changed'; session: SessionRow }
  | { type: 'workspace/changed'; [key: string]: unknown }
  | { type: string; [key: string]: unknown }

export type { WireQuestionAnswer }
