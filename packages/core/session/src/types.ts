// The session log vocabulary. Other packages add event types by declaration merging:
//
//   declare module '@dsh/session' {
//     interface SessionEventMap { 'todo/write': { todos: Todo[] } }
//   }
import type {
  AssistantMessage,
  ContentBlock,
  FinishReason,
  Message,
  StreamChunk,
  TokenUsage,
  ToolMessage,
  ToolSchema,
  UserContentBlock,
} from '@dsh/llm'

declare const sessionIdBrand: unique symbol
/** Opaque session id (branded; mint with `asSessionId`). */
export type SessionId = string & { readonly [sessionIdBrand]: true }
export const asSessionId = (value: string): SessionId => value as SessionId

export type TurnEndReason = 'completed' | 'cancelled' | 'error' | 'max-tokens' | 'blocked' | 'interrupted'

/**
 * Something a client marked as picked context of a human message (the web composer's `@` menu):
 * a workspace file (relative to the session directory), another session, or an MCP server's resource.
 */
export type MessageReference =
  | { kind: 'file'; path: string }
  | { kind: 'session'; sessionId: string }
  | { kind: 'resource'; server: string; uri: string }

/**
 * Who produced a `user/message`. Context plugins use `{kind: 'plugin', plugin: <package name>}`.
 * A human message may carry `references`: when present (even empty) they are the only `@`
 * context the client asked for; absent, context plugins read mentions from the text.
 */
export type MessageSource =
  | { kind: 'human'; references?: MessageReference[] }
  | { kind: 'plugin'; plugin: string; label?: string }
  | { kind: 'system'; reason?: string }

export interface LoggedError {
  code: string
  message: string
}

export interface SessionEventMap {
  'turn/start': { turn: number }
  /**
   * `rejected`: input the turn had claimed but never entered (a pre-step rejection), kept here so
   * nothing the user sent is lost; it is not model-visible.
   */
  'turn/end': {
    turn: number
    reason: TurnEndReason
    error?: LoggedError
    rejected?: Array<{ content: UserContentBlock[]; source: MessageSource }>
  }
  'step/start': { turn: number; step: number }
  'step/end': { turn: number; step: number; finish?: FinishReason }
  'user/message': { content: UserContentBlock[]; source: MessageSource }
  /** Raw stream fidelity: every chunk as it arrived. Not message-producing. */
  'assistant/chunk': { chunk: StreamChunk }
  'assistant/message': { message: AssistantMessage; usage?: TokenUsage; interrupted?: boolean; finish?: FinishReason }
  /**
   * `arguments` is the raw JSON string the model produced. `callId` is the call's identity, unique
   * in the session (the agent loop assigns it as the call enters the log); `providerCallId` is the
   * provider's own id, present only when it was empty or already used in this session. Logs written
   * before identities were assigned have no `providerCallId` and may repeat a `callId`.
   */
  'tool/call': { callId: string; name: string; arguments: string; providerCallId?: string }
  'tool/result': { message: ToolMessage; error?: LoggedError; meta?: { [key: string]: unknown } }
  /** The full request header, appended when it differs from the last one. */
  'request/header': { provider: string; model: string; system: string; tools: ToolSchema[] }
  'session/title': { title: string; source: string }
  /** End of a resume/fork seed: events before it were copied from `fromSession`. */
  'seed/end': { fromSession?: string; boundary?: number }
  /**
   * Replaces the surface nodes produced by events with `fromSeq <= seq < toSeq` by `messages`
   * (the raw log keeps everything). Appended by `session.surface.replaceRange()`; compaction uses it.
   */
  'surface/replace': { fromSeq: number; toSeq: number; messages: Message[]; meta?: { [key: string]: unknown } }
}

export type SessionEventType = keyof SessionEventMap & string

export interface SessionEvent<K extends SessionEventType = SessionEventType> {
  readonly type: K
  /** Contiguous from 0 within one session. */
  readonly seq: number
  /** Epoch milliseconds at append. */
  readonly time: number
  readonly data: SessionEventMap[K]
}

/** Any event, discriminated on `type`. */
export type AnySessionEvent = { [K in SessionEventType]: SessionEvent<K> }[SessionEventType]

export type { ContentBlock }
