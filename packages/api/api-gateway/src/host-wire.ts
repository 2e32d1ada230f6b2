// What the session host keeps of a live session, and how it puts it on the wire: the frames of
// approvals and questions, the model, the SSE frame log. Shared by the host (session state) and its
// routes (host-routes.ts).
import type { Agent, ModelSelection } from '@dsh/agent'
import type { AnySessionEvent, MessageReference, Session } from '@dsh/session'
import type { SessionRow as IndexRow } from '@dsh/surface-kit'
import type { ApprovalRequest } from '@dsh/user-approval'
import type { QuestionsRequest } from '@dsh/user-questions'
import { ApiError, type SessionStatus, type WireModel } from '@dsh/web-protocol'
import type { StreamClient } from './gateway.ts'
import { FrameLog } from './sse.ts'

/** What a `web/interrupted` event reports (also kept in the session metadata while pending). */
export interface InterruptedWork {
  queued: string[]
  approvals: Array<{ requestId: string; kind: string; title: string }>
  questions: Array<{ requestId: string; questions: string[] }>
}

/** A human prompt as the host sends it: the text and, from a client that marks them, the picked references. */
export interface QueuedPrompt {
  text: string
  references?: MessageReference[]
}

/** The source a prompt enters the log with (references only when the client sent them). */
export const humanSource = (p: QueuedPrompt) =>
  p.references ? { kind: 'human' as const, references: p.references } : { kind: 'human' as const }

export const isEmptyWork = (w: InterruptedWork | undefined) =>
  !w || (!w.queued.length && !w.approvals.length && !w.questions.length)

export interface Live {
  id: string
  agent: Agent
  session: Session
  /** Prompts waiting for the running turn, each with the references its client marked. */
  queue: QueuedPrompt[]
  /** The host is driving a turn (from send until the agent is idle again). */
  driving: boolean
  approvals: Map<string, ApprovalRequest>
  questions: Map<string, QuestionsRequest>
  clients: Set<StreamClient>
  status: SessionStatus
  off(): void
  idleTimer?: NodeJS.Timeout
  /** The session's row of the list index, kept current by its events. */
  row: IndexRow
  /** JSON of the in-memory work last written to the metadata (see notePending). */
  pendingKey: string
  /**
   * The SSE frames of the log, built at the first stream client and then kept current by the
   * session's events: each event is serialised once for every client, live or replayed.
   */
  frames?: FrameLog
  /**
   * The first seq appended since the clients were last written: log frames appended in one turn
   * of the event loop (a burst of model deltas) go to each client as one write at its end.
   */
  pendingFrom?: number
  flushTimer?: NodeJS.Immediate
}

/** The live session's frame log, built from its events on first use. */
export function framesOf(live: Live): FrameLog {
  if (!live.frames || live.frames.length !== live.session.length) live.frames = FrameLog.of(live.session.events)
  return live.frames
}

/**
 * The frame of a just-appended event, added to the frame log when there is one (no log yet: no
 * stream client has asked for one). A log out of step with the session is rebuilt.
 */
export function frameOf(live: Live, event: AnySessionEvent): Uint8Array | undefined {
  const frames = live.frames
  if (!frames) return undefined
  if (event.seq === frames.length) return frames.append(event)
  return framesOf(live).frame(event.seq)
}

export const notFound = (sessionId: string) =>
  new ApiError('SESSION_NOT_FOUND', `no session ${JSON.stringify(sessionId)}`, { field: 'sessionId' })

/** The fields of a `sessions.list` row read from the index row, live or stored alike. */
export const listRowFields = (row: IndexRow) => ({
  sessionId: row.id,
  cwd: row.cwd,
  ...(row.title !== undefined ? { title: row.title } : {}),
  ...(row.firstPrompt !== undefined ? { firstPrompt: row.firstPrompt } : {}),
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
  turns: row.turns,
  events: row.events,
})

export const toWireModel = (model: ModelSelection): WireModel => ({
  provider: model.provider,
  model: model.model,
  ...(model.reasoningEffort !== undefined ? { reasoningEffort: model.reasoningEffort } : {}),
})

export function approvalFrame(request: ApprovalRequest) {
  return {
    requestId: String(request.id),
    sessionId: request.sessionId!,
    request: {
      kind: request.kind,
      title: request.title,
      ...(request.detail !== undefined ? { detail: request.detail } : {}),
      action: request.action,
      options: [...request.options],
      time: request.time,
    },
  }
}

export function questionFrame(request: QuestionsRequest) {
  return {
    requestId: String(request.id),
    sessionId: request.sessionId!,
    questions: request.questions.map((q) => ({ ...q })),
    time: request.time,
  }
}
