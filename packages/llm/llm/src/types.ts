// Provider-neutral LLM vocabulary. Every adapter translates its wire format into these shapes;
// the agent loop, the session log and every plugin speak only these.
//
// All of it is lossless JSON (no Dates, no undefined inside arrays, no class instances) so that
// it can be appended to the session log unchanged.

/** JSON Schema object as a tool's `parameters`. Kept structural: validators read it at runtime. */
export type JsonSchema = { [key: string]: unknown }

export interface TextBlock {
  type: 'text'
  text: string
}
export interface ReasoningBlock {
  type: 'reasoning'
  text: string
  /** Provider-opaque continuity token (e.g. a signature) that must be sent back unchanged. */
  signature?: string
}
export interface ToolCallBlock {
  type: 'tool-call'
  callId: string
  name: string
  /** The raw arguments JSON string exactly as the model produced it (may be malformed). */
  arguments: string
}
export interface ImageBlock {
  type: 'image'
  /** e.g. `image/png` */
  mediaType: string
  /** base64 payload */
  data: string
}
export type ContentBlock = TextBlock | ReasoningBlock | ToolCallBlock | ImageBlock
export type UserContentBlock = TextBlock | ImageBlock
export type ToolResultContentBlock = TextBlock | ImageBlock

export interface UserMessage {
  role: 'user'
  content: UserContentBlock[]
}
export interface AssistantMessage {
  role: 'assistant'
  content: ContentBlock[]
}
export interface ToolMessage {
  role: 'tool'
  callId: string
  name: string
  content: ToolResultContentBlock[]
  isError?: boolean
}
export type Message = UserMessage | AssistantMessage | ToolMessage

/** Token counts are disjoint: `input` excludes `cacheRead` and `cacheWrite`; `output` excludes `reasoning`. */
export interface TokenUsage {
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  reasoning: number
}

export type FinishReason = 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'refusal' | 'error' | 'other'

export type StreamChunk =
  | { kind: 'text-delta'; text: string }
  | { kind: 'reasoning-delta'; text: string; signature?: string }
  /** `index` identifies one tool call within a response; start/delta/end share it. */
  | { kind: 'tool-call-start'; index: number; callId: string; name: string }
  | { kind: 'tool-call-delta'; index: number; argumentsDelta: string }
  | { kind: 'tool-call-end'; index: number }
  | { kind: 'usage'; usage: TokenUsage }
  | { kind: 'finish'; reason: FinishReason }

export interface ToolSchema {
  name: string
  description: string
  parameters: JsonSchema
}

export type ReasoningEffort = 'off' | 'low' | 'high' | 'max'

export interface LlmRequest {
  /** Route name of a registered adapter, e.g. `deepseek-official`. */
  provider: string
  model: string
  /** The assembled system prompt. */
  system?: string
  messages: Message[]
  tools?: ToolSchema[]
  maxTokens?: number
  reasoningEffort?: ReasoningEffort
  /** Caller abort; adapters end the stream with an `ABORTED` LlmError. Not serialized. */
  signal?: AbortSignal
  /** Free-form correlation data (session id, turn, step); never sent to a provider. */
  metadata?: { [key: string]: unknown }
}

export interface ModelInfo {
  provider: string
  id: string
  displayName?: string
  /** Context window in tokens. */
  contextWindow: number
  maxOutputTokens?: number
  reasoning?: boolean
  supportsImages?: boolean
  supportsTools?: boolean
}

export interface LlmAdapter {
  /** The route this adapter serves. */
  readonly provider: string
  /** Streams one response. Errors are thrown (or raised mid-iteration) as LlmError. */
  stream(request: LlmRequest): AsyncIterable<StreamChunk>
  listModels(): ModelInfo[] | Promise<ModelInfo[]>
}

export const LLM_ERROR_CODES = [
  'RATE_LIMIT',
  'SERVER',
  'TIMEOUT',
  'TRANSPORT',
  'EMPTY_RESPONSE',
  'CONTEXT_OVERFLOW',
  'MISSING_CREDENTIAL',
  'INVALID_CREDENTIAL',
  'AUTH',
  'BAD_REQUEST',
  'ABORTED',
  'UNKNOWN_PROVIDER',
  'UNKNOWN_MODEL',
  'REFUSAL',
  'PROTOCOL',
  /** The response passed the route's byte cap (an endless or runaway body); not retried by default. */
  'RESPONSE_TOO_LARGE',
  /** The route's overall request deadline passed before the response finished; not retried by default. */
  'DEADLINE_EXCEEDED',
] as const
export type LlmErrorCode = (typeof LLM_ERROR_CODES)[number]

export class LlmError extends Error {
  override name = 'LlmError'
  readonly code: LlmErrorCode
  readonly status?: number
  readonly provider?: string
  /** Server-advised delay before a retry (from Retry-After), in milliseconds. */
  readonly retryAfterMs?: number
  constructor(
    code: LlmErrorCode,
    message: string,
    options: { status?: number; provider?: string; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = options.status
    this.provider = options.provider
    this.retryAfterMs = options.retryAfterMs
  }
  static is(value: unknown): value is LlmError {
    return value instanceof Error && (value as { name?: string }).name === 'LlmError' && 'code' in value
  }
  toJSON(): { code: LlmErrorCode; message: string; status?: number; provider?: string; retryAfterMs?: number } {
    return {
      code: this.code,
      message: this.message,
      status: this.status,
      provider: this.provider,
      retryAfterMs: this.retryAfterMs,
    }
  }
}

export const emptyUsage = (): TokenUsage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 })
export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    reasoning: a.reasoning + b.reasoning,
  }
}
