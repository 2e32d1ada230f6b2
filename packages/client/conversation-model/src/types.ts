// The conversation view model: what a chat view renders, folded from a session's stream.
// Browser-safe and React-free: plain objects; a node object is replaced (never mutated) when it
// changes, so a renderer may memoise on identity.
import type { SessionStatus, WireApprovalRequest, WireQuestion } from '@dsh/web-protocol'

export type JsonObject = { [key: string]: unknown }

/** A human message (source `human`). `pending` until the log has it (optimistic send). */
export interface UserNode {
  kind: 'user'
  key: string
  seq: number
  turn: number
  text: string
  /** The image blocks the message carried (an ACP client's prompt images, ...), in order. */
  images: readonly ImageView[]
  time: number
}

/**
 * An image block of a message or a tool result, as a view can draw it. `src` is a `data:` URL
 * built once, when the block is folded: later nodes and snapshots share that one string, so the
 * pixels are not copied per change or per render. Absent when the block cannot be shown safely
 * (its type is not a raster image type, its data is not base64, or it is over
 * `MAX_IMAGE_DATA_CHARS`); the image is then only counted.
 */
export interface ImageView {
  /** As the block gave it, e.g. `image/png`. */
  mediaType: string
  /** `data:<mediaType>;base64,<data>`. */
  src?: string
  /** Decoded size in bytes (from the base64 length). */
  bytes: number
}

/** Model-facing context a plugin or the system added (sandbox notes, instructions): muted. */
export interface ContextNode {
  kind: 'context'
  key: string
  seq: number
  turn: number
  text: string
  /** `plugin:<name>` or `system`. */
  origin: string
  label?: string
}

export interface ThinkingNode {
  kind: 'thinking'
  key: string
  turn: number
  step: number
  text: string
  /** The end of `text` (at most PREVIEW_CHARS characters), kept while it streams: a one-line preview that does not read the whole text. */
  preview?: string
  /** Still receiving deltas. */
  streaming: boolean
  /** Milliseconds between the first and the last reasoning delta (log times), when known. */
  durationMs?: number
}

export interface AssistantNode {
  kind: 'assistant'
  key: string
  turn: number
  step: number
  text: string
  /** Deltas so far; replaced by the committed message (same key) when it lands. */
  streaming: boolean
  /** The turn was cancelled while this text streamed; the prefix was kept. */
  interrupted: boolean
  /** The seq of the committed `assistant/message` event (absent while it streams). */
  seq?: number
}

export type ToolStatus = 'streaming' | 'running' | 'done' | 'error' | 'cancelled'

export interface ToolResultView {
  /** The text blocks joined (what the model saw). */
  text: string
  /** The image blocks of the result (see ImageView). */
  images: readonly ImageView[]
  isError: boolean
  error?: { code: string; message: string }
  meta?: JsonObject
}

export interface ToolNode {
  kind: 'tool'
  key: string
  turn: number
  step: number
  callId: string
  name: string
  /** The raw arguments JSON string as the model produced it (grows while streaming). */
  arguments: string
  /** Parsed arguments when `arguments` is a complete JSON object. */
  input?: JsonObject
  status: ToolStatus
  result?: ToolResultView
  /** Log time of the call and of its result. */
  startedAt?: number
  endedAt?: number
  /** The latest `tool/progress` the running call reported (e.g. an MCP server's progress notification). */
  progress?: ToolProgressView
}

export interface ToolProgressView {
  progress: number
  total?: number
  message?: string
}

/** The end of a turn that did not simply complete (cancelled, error, ...), or rejected input. */
export interface TurnEndNode {
  kind: 'turn-end'
  key: string
  turn: number
  reason: string
  error?: { code: string; message: string }
  /** Input the turn claimed but never sent to the model (kept so nothing typed is lost). */
  rejected: string[]
}

/** Something the log says happened that is not a message: compaction, a title, a seed. */
export interface NoticeNode {
  kind: 'notice'
  key: string
  seq: number
  /** Stable code for translation: `compacted`, `seeded`, `compaction-failed`, ... */
  code: string
  detail?: string
}

export type ConversationNode =
  | UserNode
  | ContextNode
  | ThinkingNode
  | AssistantNode
  | ToolNode
  | TurnEndNode
  | NoticeNode

export interface TodoItem {
  id?: string
  content: string
  status: string
}

export interface QueuedPrompt {
  /** Local id (the composer's). */
  id: string
  text: string
  mode: 'queue' | 'steer'
}

export interface PendingApproval {
  requestId: string
  request: WireApprovalRequest
}
export interface PendingQuestion {
  requestId: string
  questions: WireQuestion[]
  time?: number
}

export interface UsageTotals {
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  reasoning: number
}

export interface ConversationSnapshot {
  /** Increments on every change; equal versions mean equal snapshots. */
  version: number
  nodes: readonly ConversationNode[]
  /** The last log seq folded in (-1: none). A stream resumes after it. */
  lastSeq: number
  /** A log event arrived after a hole: the caller should refetch history from `gapFrom`. */
  gapFrom?: number
  /** Host status (status frames), refined by the log (`running` between turn/start and turn/end). */
  status: SessionStatus
  turnRunning: boolean
  /** Prompts waiting for the running turn (sent from this view, or counted by the host). */
  queued: readonly QueuedPrompt[]
  /** The host's count of queued prompts (may include prompts other tabs sent). */
  queuedOnHost: number
  approvals: readonly PendingApproval[]
  questions: readonly PendingQuestion[]
  todos?: readonly TodoItem[]
  title?: string
  model?: { provider: string; model: string }
  usage: UsageTotals
  /** Input tokens of the latest request (a context meter's numerator). */
  lastInputTokens?: number
}
