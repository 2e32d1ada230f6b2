// The dsh SDK wire vocabulary: protocol version, method and notification names, error codes and
// the params/result shape of every method. Shared by the server and every client; the Python SDK
// mirrors these names by hand (python/dsh_sdk/protocol.py).

/**
 * The protocol version. A client sends the version it speaks in `initialize`; the server accepts
 * only versions it lists in SUPPORTED_PROTOCOL_VERSIONS and answers with the one it will speak.
 * Any change that an existing client could misread bumps it.
 */
export const PROTOCOL_VERSION = 1
export const SUPPORTED_PROTOCOL_VERSIONS: readonly number[] = [1]

export const Method = {
  initialize: 'initialize',
  sessionCreate: 'session/create',
  sessionResume: 'session/resume',
  sessionPrompt: 'session/prompt',
  sessionCancel: 'session/cancel',
  sessionList: 'session/list',
  sessionHistory: 'session/history',
  /** Full-text search over stored and live sessions (needs a session-query row). */
  sessionSearch: 'session/search',
  approvalRespond: 'approval/respond',
  shutdown: 'shutdown',
} as const
export type MethodName = (typeof Method)[keyof typeof Method]

export const Notification = {
  sessionEvent: 'session/event',
  sessionStatus: 'session/status',
  approvalRequested: 'approval/requested',
  /** A subagent of a client's session (or of one of its descendants) started. */
  subagentStarted: 'subagent/started',
  /** A subagent of a client's session (or of one of its descendants) ended. */
  subagentFinished: 'subagent/finished',
} as const
export type NotificationName = (typeof Notification)[keyof typeof Notification]

/**
 * Stable error identities. Each is sent as a JSON-RPC error whose numeric `code` is ERROR_CODES[x]
 * and whose `data.code` is the string itself; clients branch on `data.code`.
 */
export type ErrorCode =
  | 'PARSE_ERROR'
  | 'INVALID_REQUEST'
  | 'METHOD_NOT_FOUND'
  | 'INVALID_PARAMS'
  | 'INTERNAL'
  | 'NOT_INITIALIZED'
  | 'PROTOCOL_VERSION_MISMATCH'
  | 'SESSION_NOT_FOUND'
  | 'BUSY'
  | 'PERSISTENCE_UNAVAILABLE'
  | 'SESSION_LOCKED'
  | 'MODEL_NOT_FOUND'
  | 'APPROVAL_NOT_FOUND'
  | 'SHUTTING_DOWN'

export const ERROR_CODES: Readonly<Record<ErrorCode, number>> = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  PROTOCOL_VERSION_MISMATCH: -32001,
  NOT_INITIALIZED: -32002,
  SESSION_NOT_FOUND: -32010,
  BUSY: -32011,
  PERSISTENCE_UNAVAILABLE: -32012,
  SESSION_LOCKED: -32013,
  MODEL_NOT_FOUND: -32014,
  APPROVAL_NOT_FOUND: -32020,
  SHUTTING_DOWN: -32030,
}

// ---- JSON-RPC 2.0 envelopes ----

export type JsonRpcId = number | string

export interface JsonRpcRequest {
  jsonrpc: '2.0'
  id: JsonRpcId
  method: string
  params?: unknown
}
export interface JsonRpcNotification {
  jsonrpc: '2.0'
  method: string
  params?: unknown
}
export interface JsonRpcErrorObject {
  code: number
  message: string
  data?: { code: ErrorCode | string; [key: string]: unknown }
}
export interface JsonRpcSuccess {
  jsonrpc: '2.0'
  id: JsonRpcId
  result: unknown
}
export interface JsonRpcFailure {
  jsonrpc: '2.0'
  id: JsonRpcId | null
  error: JsonRpcErrorObject
}
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcSuccess | JsonRpcFailure

// ---- payloads ----

/** One session event as it is on the wire: exactly the logged `{type, seq, time, data}`. */
export interface WireEvent {
  type: string
  seq: number
  time: number
  data: unknown
}

export interface WireUsage {
  input: number
  output: number
  cacheRead?: number
  cacheWrite?: number
  reasoning?: number
  [key: string]: unknown
}

export interface WireTurnResult {
  turn: number
  /** completed | cancelled | error | max-tokens | blocked | interrupted */
  reason: string
  /** Text of the last assistant message of the turn ('' when none). */
  text: string
  error?: { code: string; message: string }
  usage: WireUsage
  steps: number
}

export interface WireModel {
  provider: string
  model: string
}

export type SessionStatus = 'idle' | 'running' | 'waiting-approval'

export interface InitializeParams {
  protocolVersion: number
  clientInfo?: { name: string; version?: string }
}
export interface InitializeResult {
  protocolVersion: number
  serverInfo: { name: string; version: string }
  capabilities: {
    /** session/resume and stored rows in session/list work (a persistence row is mounted). */
    persistence: boolean
    /** approval/requested is forwarded (an approval service is mounted). */
    approval: boolean
    /** session/search works (a session-query row is mounted). Absent from older servers. */
    search?: boolean
  }
}

export interface SessionCreateParams {
  cwd: string
  /** `provider/model` or a model id of the default provider; default: the deployment default. */
  model?: string
}
export interface SessionCreateResult {
  sessionId: string
  cwd: string
  model: WireModel
}

export interface SessionResumeParams {
  sessionId: string
}
export interface SessionResumeResult {
  sessionId: string
  cwd: string
  model: WireModel
  /** seq of the next event; history is available through session/history. */
  nextSeq: number
  /** true when the session was loaded from storage, false when it was already live here. */
  loaded: boolean
}

export interface SessionPromptParams {
  sessionId: string
  prompt: string
}
export interface SessionPromptResult {
  /** The turn number the prompt opened (its `turn/start` event was already sent). */
  turn: number
}

export interface SessionCancelParams {
  sessionId: string
}
export interface SessionCancelResult {
  /** Whether a turn was running and was asked to stop. */
  cancelled: boolean
}

export interface SessionListParams {
  cwd?: string
}
export interface SessionInfo {
  sessionId: string
  cwd: string
  /** Held by an agent in this server process. */
  live: boolean
  status?: SessionStatus
  createdAt?: number
  updatedAt?: number
  title?: string
  firstPrompt?: string
  turns?: number
  events?: number
}
export interface SessionListResult {
  sessions: SessionInfo[]
}

export interface SessionHistoryParams {
  sessionId: string
  fromSeq?: number
  limit?: number
}
export interface SessionHistoryResult {
  events: WireEvent[]
  /** seq after the last returned event; equal to the log length when nothing was cut by `limit`. */
  nextSeq: number
}

export interface SessionSearchParams {
  /** Searched as one literal phrase (at least 3 characters); quotes and operators are plain text. */
  text: string
  /** Only sessions whose cwd is exactly this. */
  cwd?: string
  /** Sessions returned, at most (default 20). */
  limit?: number
}
/** One matching session, represented by its strongest matching event. */
export interface SessionSearchHit {
  sessionId: string
  cwd: string
  title?: string
  updatedAt: number
  live: boolean
  seq: number
  type: string
  /** Text around the match, the match in [brackets]. */
  snippet: string
  matches: number
}
export interface SessionSearchResult {
  hits: SessionSearchHit[]
}

/** The choices `@dsh/user-approval` offers an answerer (a request lists the ones it allows). */
export type ApprovalDecision = 'allowed-once' | 'allowed-always' | 'rejected'
export interface ApprovalRespondParams {
  requestId: string
  decision: ApprovalDecision
  /** Why (shown to the model on a rejection). */
  reason?: string
  /** Free text that should reach the model. */
  message?: string
}
export type ApprovalRespondResult = {}

export type ShutdownParams = Record<string, never>
export type ShutdownResult = {}

export interface SessionEventNotification {
  sessionId: string
  event: WireEvent
}
export interface SessionStatusNotification {
  sessionId: string
  status: SessionStatus
  /** The turn this status concerns, when there is one. */
  turn?: number
  /** Present on the `idle` status that ends a turn. */
  result?: WireTurnResult
}
export interface ApprovalRequestedNotification {
  requestId: string
  sessionId?: string
  /** What is to be approved, as the approval service describes it. */
  request: WireApprovalRequest
}

/** Fields both subagent notifications carry. */
export interface SubagentNotificationBase {
  /** The client's session the child belongs to: its parent, or the root of its parent's tree. */
  sessionId: string
  /** The session that started the child (equal to `sessionId` for a direct child). */
  parentSessionId: string
  /** The child id, unique among the children of `parentSessionId` (`sub-1`, ...). */
  id: string
  /** spawn | fork | acp | sdk | ... */
  provider: string
  description: string
  /** 1 for a child of a root session. */
  depth: number
  background: boolean
  /** The tool call that started the child. */
  callId?: string
  /** The child's own session, when its provider names one. */
  childSessionId?: string
  /** When the parent logged the start (or the end), ms since the epoch. */
  time: number
}
export interface SubagentStartedNotification extends SubagentNotificationBase {
  status: 'running'
}
export interface SubagentFinishedNotification extends SubagentNotificationBase {
  status: 'completed' | 'failed' | 'cancelled'
  /** The start of the child's final answer (at most SUBAGENT_TEXT_EXCERPT_CHARS characters). */
  text: string
  /** The answer was longer than `text`; the whole is the parent log's `subagent/finished` event. */
  textTruncated?: boolean
  error?: { code: string; message: string }
  /** Summed token usage of the child's turns, when its provider reports it. */
  usage?: WireUsage
}
/** Longest final-answer excerpt a `subagent/finished` notification carries. */
export const SUBAGENT_TEXT_EXCERPT_CHARS = 2000

export interface WireApprovalRequest {
  /** command | write | network | tool | ... */
  kind: string
  /** One line for the human. */
  title: string
  detail?: string
  /** Exactly the action being approved (JSON). */
  action: unknown
  /** The decisions this request accepts in approval/respond. */
  options: ApprovalDecision[]
  /** What a decision does here, in a few words (a button's text), when the request says. */
  labels?: Partial<Record<ApprovalDecision, string>>
  agentId?: string
  time: number
}

export interface MethodMap {
  initialize: [InitializeParams, InitializeResult]
  'session/create': [SessionCreateParams, SessionCreateResult]
  'session/resume': [SessionResumeParams, SessionResumeResult]
  'session/prompt': [SessionPromptParams, SessionPromptResult]
  'session/cancel': [SessionCancelParams, SessionCancelResult]
  'session/list': [SessionListParams | undefined, SessionListResult]
  'session/history': [SessionHistoryParams, SessionHistoryResult]
  'session/search': [SessionSearchParams, SessionSearchResult]
  'approval/respond': [ApprovalRespondParams, ApprovalRespondResult]
  shutdown: [ShutdownParams | undefined, ShutdownResult]
}
export type ParamsOf<M extends MethodName> = MethodMap[M][0]
export type ResultOf<M extends MethodName> = MethodMap[M][1]

export interface NotificationMap {
  'session/event': SessionEventNotification
  'session/status': SessionStatusNotification
  'approval/requested': ApprovalRequestedNotification
  'subagent/started': SubagentStartedNotification
  'subagent/finished': SubagentFinishedNotification
}
