// @dsh/shell: the `ctx.shell` executor seam. A consumer turns a request into a resolved spec with
// `resolve()` (every default and cap applied there, visibly) and runs it with `run()`. Definition
// only: no I/O here; providers are bash-local, bash-sandbox, pwsh-local, ...
import { type Context, Service } from 'cordis'
import { CodedError } from '@dsh/brand'

declare module 'cordis' {
  interface Context {
    shell: ShellExecutor
  }
}

/** What a consumer asks for. */
export interface ShellRequest {
  /** Source text in the executor's dialect. */
  command: string
  /** Absolute base directory (usually the tool call's cwd). */
  cwd: string
  /** Working directory; a relative path resolves against `cwd`. Default: `cwd`. */
  workdir?: string
  /** Requested timeout; absent means the executor's default; above its maximum it is capped. */
  timeoutMs?: number
  /** Trusted variables for this call (e.g. `DSH_*` from ctx.shellEnv); they override the executor's own environment. */
  env?: Record<string, string>
  /**
   * How much output the consumer can show. Output up to `maxBytes` comes back whole; longer output
   * comes back as the first `headBytes` and the last `tailBytes`, with the whole of it in a spill
   * file of the executor's world. Absent: the executor's default; capped by the executor's maximum.
   */
  output?: ShellOutputBudget
}

export interface ShellOutputBudget {
  maxBytes: number
  headBytes: number
  tailBytes: number
}

/** The executor's timeout policy, for consumers that describe it (e.g. in a tool description). */
export interface ShellLimits {
  defaultTimeoutMs: number
  maxTimeoutMs: number
}

/** A request with every default applied. Plain data: loggable and inspectable before it runs. */
export interface ShellSpec {
  /** Name of the executor that resolved it (`bash-local`, ...); `run()` refuses specs of another executor. */
  executor: string
  dialect: string
  command: string
  /** Absolute, existing working directory. */
  cwd: string
  timeoutMs: number
  output: ShellOutputBudget
  /** Variables set on top of the executor's (scrubbed) base environment. */
  env: Record<string, string>
  /** Facts about defaulting worth telling the model (e.g. a capped timeout). */
  notes: string[]
}

/** A decoded output chunk, in arrival order. */
export interface ShellOutputChunk {
  stream: 'stdout' | 'stderr'
  text: string
}

export interface ShellRunOptions {
  /** Aborting terminates the command (status `cancelled`). */
  signal?: AbortSignal
  onOutput?(chunk: ShellOutputChunk): void
}

/**
 * stdout and stderr merged in arrival order, decoded as UTF-8 with replacement characters. When
 * `truncated`, `head` and `tail` are the retained ends and `omittedBytes` were not kept in memory;
 * `spillPath`, when present, names a file holding the whole output.
 */
export interface ShellOutput {
  head: string
  tail: string
  totalBytes: number
  truncated: boolean
  omittedBytes: number
  spillPath?: string
}

/**
 * `exited`: the command ended with `exitCode`. `signaled`: a signal not sent by the executor ended it.
 * `timeout` / `cancelled`: the executor terminated it. `failed`: it could not be started (`error`),
 * or (`error.started`) it started and its provider lost it, so its exit status is unknown.
 */
export type ShellStatus = 'exited' | 'signaled' | 'timeout' | 'cancelled' | 'failed'

export interface ShellResult {
  status: ShellStatus
  exitCode: number | null
  signal: string | null
  output: ShellOutput
  durationMs: number
  /** The strongest signal the executor sent to the process group, if it sent one. */
  escalation?: 'SIGTERM' | 'SIGKILL'
  error?: { code: string; message: string; started?: true }
}

export type ShellErrorCode =
  | 'INVALID_REQUEST'
  | 'WORKDIR_NOT_FOUND'
  | 'WORKDIR_NOT_DIRECTORY'
  | 'COMMAND_TOO_LONG'
  | 'FOREIGN_SPEC'

/** A request the executor refuses; `message` is a sentence a model can act on. */
export class ShellError extends CodedError<ShellErrorCode> {
  override name = 'ShellError'
}

export abstract class ShellExecutor extends Service {
  constructor(ctx: Context) {
    super(ctx, 'shell')
  }

  /** Source language of `command` (`bash`, `pwsh`). */
  abstract readonly dialect: string

  abstract readonly limits: ShellLimits

  /** Applies defaults and caps and checks the working directory. Throws `ShellError` for a bad request. */
  abstract resolve(request: ShellRequest): Promise<ShellSpec>

  /** Runs a resolved spec. Never rejects for the command's own failure; see `ShellResult.status`. */
  abstract run(spec: ShellSpec, options?: ShellRunOptions): Promise<ShellResult>
}

export const name = 'shell'
export default ShellExecutor
