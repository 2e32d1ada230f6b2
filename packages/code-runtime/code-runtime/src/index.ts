// @dsh/code-runtime: the Code Mode execution seam (`ctx.codeRuntime`). A provider runs one program
// (TypeScript or JavaScript, the body of an async function) in isolation, with host functions
// ("bindings") bridged in, and reports `{value, logs, error?}`. No I/O here: the vocabulary, plus
// the pieces every provider shares (type stripping, the program-side source, the host-side state).
import { isAbsolute } from 'node:path'
import { Service, type Context } from 'cordis'
import type { JsonValue } from '@dsh/brand'

/** A JSON value as a run result may carry it. */
export type { JsonValue }

/** Options a host function receives with each call from the program. */
export interface BindingCall {
  /** Aborted when the run ends (finished, timed out, cancelled) while the call is still pending. */
  signal: AbortSignal
}

/**
 * A host function callable from the program as `namespace.name(arg)`. Its argument arrives as a
 * structured clone of what the program passed; its resolved value is cloned back (JSON values). A
 * rejection is thrown in the program as an Error with the rejection's `message` (and `code`).
 */
export type Binding = (arg: unknown, call: BindingCall) => Promise<unknown> | unknown

/** Bindings by namespace: `{tools: {read: fn}}` is `await tools.read({...})` in the program. */
export type BindingNamespaces = Record<string, Record<string, Binding>>

export type CodeLanguage = 'typescript' | 'javascript'

export interface CodeRunRequest {
  /** The program: the body of an async function; `return` gives the run's value; top-level await works. */
  code: string
  /** Default `typescript` (type annotations are stripped host-side; plain JavaScript passes through). */
  language?: CodeLanguage
  bindings?: BindingNamespaces
  /** Plain JSON values visible to the program as global constants, by name. */
  globals?: Record<string, JsonValue>
  /** Wall-clock budget of the whole run (including pending binding calls). Default: the provider's. */
  timeoutMs?: number
  /** Heap cap of the isolate in MiB. Default: the provider's. */
  memoryMb?: number
  /** Aborting it ends the run `CANCELLED` and stops the program at once. */
  signal?: AbortSignal
  /** Name the program's stack frames carry. Default `program.ts`. */
  filename?: string
  /** Observes each console line as it is produced (they are also returned in `logs`). */
  onLog?: (log: CodeLog) => void
  /**
   * The session the program runs for: a confining provider runs it under that session's sandbox
   * policy (mode, writable roots, network). Absent: the policy of calls without a session.
   */
  sessionId?: string
  /** Absolute working directory of the program (the calling tool's cwd). Default: the provider's choice (the session's workspace root). */
  cwd?: string
}

/** A request after the provider's defaulting: what `run` executes. */
export interface ResolvedCodeRun
  extends Omit<CodeRunRequest, 'language' | 'timeoutMs' | 'memoryMb' | 'filename' | 'bindings' | 'globals'> {
  language: CodeLanguage
  bindings: BindingNamespaces
  globals: Record<string, JsonValue>
  timeoutMs: number
  memoryMb: number
  filename: string
}

export type CodeLogLevel = 'log' | 'info' | 'warn' | 'error' | 'debug'

export interface CodeLog {
  level: CodeLogLevel
  text: string
}

export const CODE_RUN_ERROR_CODES = [
  /** The source does not parse (after type stripping). */
  'SYNTAX',
  /** The program threw or its returned promise rejected. */
  'THROWN',
  /** The run exceeded its time budget; the program was stopped. */
  'TIMEOUT',
  /** The program exceeded its heap cap; the program was stopped. */
  'MEMORY',
  /** The caller aborted the run; the program was stopped. */
  'CANCELLED',
  /** The program returned something that is not representable as JSON (a function, a cycle, ...). */
  'UNSERIALIZABLE',
  /** The runtime itself failed (the isolate could not start, a protocol error). */
  'INTERNAL',
  /** The provider refused to run the program: it cannot confine it as the session's sandbox mode requires. */
  'REFUSED',
] as const
export type CodeRunErrorCode = (typeof CODE_RUN_ERROR_CODES)[number]

export interface CodeRunError {
  code: CodeRunErrorCode
  /** One line, e.g. `TypeError: x is not a function`. */
  message: string
  /**
   * Frames of the program's own code only (`at <fn> (program.ts:LINE:COL)`), with line and column
   * in the model's source; none of the runtime's frames.
   */
  stack?: string
}

export interface CodeRunResult {
  /** The returned value as JSON; absent when the program returned nothing (or failed). */
  value?: JsonValue
  logs: CodeLog[]
  /** Console output dropped past the provider's log cap, in characters. */
  droppedLogChars?: number
  error?: CodeRunError
  /** Binding calls the program made. */
  calls: number
  durationMs: number
}

/**
 * The seam. Providers implement `resolve` (defaulting, explicit) and `run`; `run` never rejects for
 * anything the program does: failures are `result.error`.
 */
export abstract class CodeRuntime extends Service {
  constructor(ctx: Context) {
    super(ctx, 'codeRuntime')
  }

  /** Fills every default of a request. Throws TypeError for a malformed request (a caller bug). */
  abstract resolve(request: CodeRunRequest): ResolvedCodeRun

  /** Runs one program. */
  abstract run(request: CodeRunRequest): Promise<CodeRunResult>
}

declare module 'cordis' {
  interface Context {
    codeRuntime: CodeRuntime
  }
}

/**
 * A provider's `resolve`: checks the request (TypeError naming the first problem) and fills the
 * defaults from the provider's config, with `timeoutMs` capped at `maxTimeoutMs`.
 */
export function resolveCodeRun(
  request: CodeRunRequest,
  defaults: { timeoutMs: number; maxTimeoutMs: number; memoryMb: number },
): ResolvedCodeRun {
  const problem = checkRequest(request)
  if (problem) throw new TypeError(`codeRuntime.run: ${problem}`)
  return {
    ...request,
    language: request.language ?? 'typescript',
    bindings: request.bindings ?? {},
    globals: request.globals ?? {},
    timeoutMs: Math.min(request.timeoutMs ?? defaults.timeoutMs, defaults.maxTimeoutMs),
    memoryMb: request.memoryMb ?? defaults.memoryMb,
    filename: request.filename ?? 'program.ts',
  }
}

/** Checks the shape of a request; returns a sentence naming the first problem, or undefined. */
export function checkRequest(request: CodeRunRequest): string | undefined {
  if (request === null || typeof request !== 'object') return 'expected a request object'
  if (typeof request.code !== 'string') return 'code must be a string'
  if (request.language !== undefined && request.language !== 'typescript' && request.language !== 'javascript') {
    return `language must be "typescript" or "javascript", not ${JSON.stringify(request.language)}`
  }
  for (const [key, value] of [
    ['timeoutMs', request.timeoutMs],
    ['memoryMb', request.memoryMb],
  ] as const) {
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value <= 0))
      return `${key} must be a positive number`
  }
  if (request.sessionId !== undefined && (typeof request.sessionId !== 'string' || request.sessionId === ''))
    return 'sessionId must be a non-empty string'
  if (request.cwd !== undefined && (typeof request.cwd !== 'string' || !isAbsolute(request.cwd)))
    return 'cwd must be an absolute path'
  const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/
  for (const [space, table] of Object.entries(request.bindings ?? {})) {
    if (!identifier.test(space)) return `binding namespace ${JSON.stringify(space)} is not a JavaScript identifier`
    if (table === null || typeof table !== 'object') return `bindings.${space} must be an object of functions`
    for (const [name, fn] of Object.entries(table))
      if (typeof fn !== 'function') return `bindings.${space}.${name} must be a function`
  }
  for (const name of Object.keys(request.globals ?? {})) {
    if (!identifier.test(name)) return `global ${JSON.stringify(name)} is not a JavaScript identifier`
    if (request.bindings && name in request.bindings)
      return `global ${JSON.stringify(name)} collides with a binding namespace`
  }
  return undefined
}

/** A one-paragraph rendering of a run for a model: logs, then the value or the error. */
export function formatRunResult(result: CodeRunResult, options: { maxChars?: number } = {}): string {
  const parts: string[] = []
  if (result.logs.length > 0) {
    const lines = result.logs.map((log) =>
      log.level === 'log' || log.level === 'info' ? log.text : `[${log.level}] ${log.text}`,
    )
    parts.push(`Console output:\n${lines.join('\n')}`)
    if (result.droppedLogChars)
      parts.push(`[... ${result.droppedLogChars} more characters of console output were dropped ...]`)
  }
  if (result.error) {
    parts.push(
      `Program failed (${result.error.code}): ${result.error.message}${result.error.stack ? `\n${result.error.stack}` : ''}`,
    )
  } else if (result.value === undefined) {
    parts.push('Program finished; it returned nothing.')
  } else {
    parts.push(
      `Return value:\n${typeof result.value === 'string' ? result.value : JSON.stringify(result.value, null, 2)}`,
    )
  }
  const text = parts.join('\n\n')
  const max = options.maxChars
  if (max !== undefined && text.length > max) {
    const head = Math.floor(max * 0.7)
    const tail = max - head
    return `${text.slice(0, head)}\n[... ${text.length - max} characters omitted ...]\n${text.slice(text.length - tail)}`
  }
  return text
}

export { stripTypes, TypeStripError } from './strip.ts'
export { PROGRAM_HOST_SOURCE, programSource } from './program-source.ts'
export {
  RunState,
  cancelledError,
  checkProgramMessage,
  memoryError,
  messageOf,
  reasonOf,
  timeoutError,
  type HostReply,
  type ProgramMessage,
  type ProgramStart,
  type RunOutcome,
} from './host.ts'

export const name = 'code-runtime'
