// Public vocabulary of the tool registry: definitions, call context, outputs, and the payloads of
// the four pipeline events. Everything a tool returns to the model is lossless JSON.
import type { JsonSchema, ToolMessage, ToolResultContentBlock, ToolSchema } from '@dsh/llm'
import type { JsonValue, JsonObject } from '@dsh/brand'

export type { JsonSchema, ToolMessage, ToolResultContentBlock, ToolSchema }

/** A JSON value as it may be logged. */
export type { JsonValue, JsonObject }

/**
 * How tools are presented to the model: `native` (every tool as a function schema), `code` (only
 * the Code Mode entry tool, e.g. `run_code`; every other tool is reached from inside its programs)
 * or `both`.
 */
export type ToolMode = 'native' | 'code' | 'both'

/**
 * Who issued a call: the model directly (`model`, the default), or a Code Mode program through the
 * entry tool (`code`). A `code` call resolves every tool except entry tools, whatever the mode.
 */
export type ToolCallOrigin = 'model' | 'code'

/** A stable, machine-readable error attached to an error result. */
export interface ToolError {
  code: string
  message: string
}

/** What a tool body (or a pipeline listener) produces. */
export interface ToolOutput {
  /** A string becomes one text block. */
  content: string | ToolResultContentBlock[]
  isError?: boolean
  /** Setting `error` implies `isError`. */
  error?: ToolError
  /** Logged with the result, never shown to the model. */
  meta?: JsonObject
}

/** The per-call context handed to `execute` and `finalizeContent`. */
export interface ToolCallContext {
  callId: string
  name: string
  sessionId?: string
  agentId?: string
  /** Agent scope the call resolved in (undefined: global only). */
  scope?: string
  cwd: string
  turn?: number
  step?: number
  /** `code`: issued by a Code Mode program (absent: by the model). */
  origin?: ToolCallOrigin
  /** For a `code` call: the call id of the entry tool call whose program issued it. */
  parentCallId?: string
  /** Aborted when the caller aborts or a `tools/execute` listener calls `abort()`. */
  signal: AbortSignal
}

export interface ToolDefinition<A = any> {
  /** `^[a-zA-Z0-9_-]{1,64}$` */
  name: string
  description: string
  /** JSON Schema of the arguments object (`type: 'object'`): checked at registration, compiled at first call. */
  parameters: JsonSchema
  execute(args: A, call: ToolCallContext): ToolOutput | Promise<ToolOutput>
  /** May the call run in parallel with other concurrency-safe calls of the same step? Default false. */
  concurrencySafe?: boolean | ((args: A) => boolean)
  /** Advisory budget for a timeout plugin wrapping `tools/execute`; the registry itself does not enforce it. */
  timeoutMs?: number
  /** Definition-owned last word on the output, after `tools/post-execute`. */
  finalizeContent?(output: ToolOutput, call: ToolCallContext): ToolOutput
  /** Agent scope: the tool exists only for that scope and shadows a global tool of the same name. */
  scope?: string
  /**
   * Marks the Code Mode entry tool (`run_code`): presented only in `code` and `both` modes, hidden
   * (and unknown) in `native` mode, and never callable from inside a program.
   */
  codeEntry?: boolean
  /**
   * Whether the schema may be held back from the model until it asks for it (see `ToolDeferral`):
   * `true` for a rarely needed tool, `false` for one that must always be sent in full; absent, the
   * deferral policy decides. Without a deferral policy every tool is sent in full.
   */
  defer?: boolean
  /**
   * One sentence for the catalogue line a deferred tool is shown as. Default: the first sentence
   * of `description` (at most 120 characters).
   */
  summary?: string
}

/**
 * A deferral policy (one at a time, `tools.setDeferral`): which tools an agent scope sees as one
 * catalogue line inside the loader tool instead of their full schema. Applies only to
 * `schemas(scope)` with an agent scope; calls, `list`, `presented` and `programTools` ignore it.
 */
export interface ToolDeferral {
  /** The loader tool: presented only while something is deferred, its description followed by the catalogue. */
  loader: string
  /** Whether `def` (a global, non-entry tool visible from `scope`) is held back from `scope` now. */
  deferred(def: ToolDefinition, scope: string): boolean
  /**
   * A direct model call from `context.scope` resolved to a tool that is deferred there (the model
   * called it without loading it). The registry runs the call as usual; the policy may load it.
   */
  calledDeferred?(def: ToolDefinition, context: ExecuteContext): void
}

/** The raw call as the model produced it (the session's `tool/call` payload). */
export interface ToolCallRequest {
  callId: string
  name: string
  /** Raw JSON string; may be empty or malformed. */
  arguments: string
}

/** Caller-side context of an `execute`/`executeAll` call. */
export interface ExecuteContext {
  sessionId?: string
  agentId?: string
  scope?: string
  cwd: string
  turn?: number
  step?: number
  signal?: AbortSignal
  /** `code` for calls issued by a Code Mode program; default `model`. */
  origin?: ToolCallOrigin
  /** For a `code` call: the entry tool call that issued it. */
  parentCallId?: string
}

/** Exactly the session's `tool/result` payload. */
export interface ToolResultPayload {
  message: ToolMessage
  error?: ToolError
  meta?: JsonObject
}

/** A deny decision of `tools/pre-execute` or a guard. `code` defaults to `DENIED`. */
export interface ToolDenial {
  deny: string
  code?: string
}

/** Shared shape of the pipeline payloads once a call is resolved and validated. */
export interface ResolvedCall<A = unknown> {
  readonly call: ToolCallRequest
  /** Validated arguments. `tools/pre-execute` listeners may replace fields; they are not re-validated. */
  args: A
  readonly tool: ToolDefinition<A>
  readonly context: ToolCallContext
}

/**
 * `tools/pre-execute` payload. To deny, a listener sets `decision` and returns without calling
 * `next()`; the registry reads `decision` after the waterfall settles (its return value is ignored),
 * so an outer listener may also clear an inner denial after `await next()`.
 */
export interface PreExecutePayload<A = unknown> extends ResolvedCall<A> {
  decision?: ToolDenial
}

/** `tools/execute` payload: listeners wrap `next()` (timeout, retry, metrics). */
export interface ExecutePayload<A = unknown> extends ResolvedCall<A> {
  /** Aborts the per-call signal; the tool body sees it and the call resolves `CANCELLED`. */
  abort(reason?: string): void
}

/** `tools/post-execute` payload: listeners may replace `output`. */
export interface PostExecutePayload<A = unknown> extends ResolvedCall<A> {
  output: ToolOutput
}

/** Second argument of the observe-only `tools/result` event. */
export interface ToolResultInfo {
  call: ToolCallRequest
  context: ExecuteContext
  /** Absent when the call never resolved to a tool (`UNKNOWN_TOOL`, `INVALID_JSON`). */
  tool?: ToolDefinition
}

export interface ToolGuard {
  name: string
  /** Only calls in this agent scope are checked; absent: every call. */
  scope?: string
  /** Return `{deny}` to refuse the call. Guards run in registration order; the first denial wins. */
  check(
    call: Readonly<ResolvedCall>,
  ): ToolDenial | { deny?: undefined } | void | Promise<ToolDenial | { deny?: undefined } | void>
}

/** Stable error codes the registry itself produces. */
export const TOOL_ERROR_CODES = [
  'INVALID_JSON',
  'UNKNOWN_TOOL',
  'INVALID_ARGUMENTS',
  'DENIED',
  'TOOL_ERROR',
  'CANCELLED',
  'INTERNAL_ERROR',
] as const
export type ToolErrorCode = (typeof TOOL_ERROR_CODES)[number]

declare module 'cordis' {
  interface Context {
    tools: import('./registry.ts').ToolRegistry
  }
  interface Events {
    'tools/pre-execute'(payload: PreExecutePayload, next: () => Promise<void>): Promise<void>
    'tools/execute'(payload: ExecutePayload, next: () => Promise<ToolOutput>): Promise<ToolOutput>
    'tools/post-execute'(payload: PostExecutePayload, next: () => Promise<void>): Promise<void>
    'tools/result'(result: ToolResultPayload, info: ToolResultInfo): void
  }
}
