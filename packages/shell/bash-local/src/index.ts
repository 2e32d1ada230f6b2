// @dsh/bash-local: `ctx.shell` as `bash -c <command>` per call, each a managed process group of
// `ctx.subprocess`. Owns the bash-shaped decisions: command caps, timeout defaulting and capping,
// timeout-versus-cancel classification and the non-interactive environment. Group mechanics
// (retention, spill, scrub, kill escalation) belong to the subprocess provider.
import { existsSync, statSync } from 'node:fs'
import { isAbsolute, join, resolve as resolvePath } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import {
  ShellError,
  ShellExecutor,
  type ShellLimits,
  type ShellOutput,
  type ShellOutputBudget,
  type ShellRequest,
  type ShellResult,
  type ShellRunOptions,
  type ShellSpec,
} from '@dsh/shell'
import { decodeOutput, type ProcessExit, type ProcessLauncher, type RetainedOutput } from '@dsh/subprocess'
import { plainService } from '@dsh/plain-service'
import { DEFAULT_SPILL_CAP_BYTES, dshRunDir, processTempSubdir, systemTempDir, type PrivateDir } from '@dsh/spill-files'

export const EXECUTOR = 'bash-local'

/**
 * The kernel refuses a single argv string longer than 128 KiB (MAX_ARG_STRLEN on Linux), so a
 * longer `bash -c` command could never start; it is refused up front with a usable message.
 */
export const MAX_COMMAND_BYTES = 128 * 1024 - 1

/** Variables that keep tools from paging, colouring or prompting. */
export const MODEL_FRIENDLY_ENV: Readonly<Record<string, string>> = {
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  MANPAGER: 'cat',
  NO_COLOR: '1',
  TERM: 'dumb',
  CI: '1',
  GIT_TERMINAL_PROMPT: '0',
  DEBIAN_FRONTEND: 'noninteractive',
}

export interface BashLocalConfig {
  bash: string
  defaultTimeoutMs: number
  maxTimeoutMs: number
  killGraceMs: number
  drainMs: number
  output: { maxBytes: number; headBytes: number; tailBytes: number }
  spillDir: string
  spillMaxBytes: number
  environment: Record<string, string>
}

/**
 * The configured value that stands for bash-local's default spill dir: at run time a private
 * directory of this process (`<system temp>/dsh-<pid>-XXXXXX/shell-output`, from @dsh/spill-files),
 * never this guessable path. bash-sandbox replaces it with a per-session dir in the protected dsh home.
 */
export const DEFAULT_SPILL_DIR = join(systemTempDir(), 'dsh-shell-output')

export class BashLocalExecutor extends ShellExecutor {
  static inject = ['subprocess']

  static Config: Schema<BashLocalConfig> = Schema.object({
    bash: Schema.string()
      .default('bash')
      .description('The bash executable: an absolute path or a name looked up on PATH.'),
    defaultTimeoutMs: Schema.natural()
      .min(1)
      .default(120_000)
      .description('Timeout of a call that does not ask for one.'),
    maxTimeoutMs: Schema.natural()
      .min(1)
      .default(600_000)
      .description('Upper bound of a requested timeout; larger requests are capped.'),
    killGraceMs: Schema.natural()
      .default(3_000)
      .description('Time between SIGTERM and SIGKILL of the process group on timeout or cancel.'),
    drainMs: Schema.natural()
      .default(250)
      .description(
        'After bash exits, how long to keep reading output that background descendants still write before the group is ended.',
      ),
    output: Schema.object({
      maxBytes: Schema.natural()
        .default(1 << 20)
        .description(
          'Output kept whole in memory; past it only head and tail stay in memory and the whole output goes to a spill file.',
        ),
      headBytes: Schema.natural()
        .default(256 << 10)
        .description('Bytes of the beginning kept in memory once output passes maxBytes.'),
      tailBytes: Schema.natural()
        .default(256 << 10)
        .description('Bytes of the end kept in memory once output passes maxBytes.'),
    }).default({ maxBytes: 1 << 20, headBytes: 256 << 10, tailBytes: 256 << 10 }),
    spillDir: Schema.string()
      .default(DEFAULT_SPILL_DIR)
      .description(
        'Directory of spill files holding the complete output of long commands (a private directory: real, owned by this user, 0700). The default stands for a private directory of this process.',
      ),
    spillMaxBytes: Schema.natural()
      .default(DEFAULT_SPILL_CAP_BYTES)
      .description(
        'Most bytes spilled into one spill directory (one session under bash-sandbox) by this process; past it the rest of the output is dropped and the result says so (head and tail are still kept).',
      ),
    environment: Schema.dict(String)
      .default({ ...MODEL_FRIENDLY_ENV })
      .description('Variables set for every command (replaces the whole default set when given).'),
  })

  readonly dialect = 'bash'
  readonly limits: ShellLimits

  constructor(
    ctx: Context,
    private readonly config: BashLocalConfig,
  ) {
    super(ctx)
    this.limits = { defaultTimeoutMs: config.defaultTimeoutMs, maxTimeoutMs: config.maxTimeoutMs }
    if (config.maxTimeoutMs < config.defaultTimeoutMs) {
      throw new TypeError(
        `bash-local: maxTimeoutMs (${config.maxTimeoutMs}) must be at least defaultTimeoutMs (${config.defaultTimeoutMs})`,
      )
    }
    const { maxBytes, headBytes, tailBytes } = config.output
    if (headBytes + tailBytes > maxBytes) {
      throw new TypeError(
        `bash-local: output.headBytes + output.tailBytes (${headBytes + tailBytes}) must not exceed output.maxBytes (${maxBytes})`,
      )
    }
    if (!isAbsolute(config.spillDir))
      throw new TypeError(`bash-local: spillDir must be an absolute path, got ${JSON.stringify(config.spillDir)}`)
    ctx.effect(() => () => this.mergeStartup.dispose(), 'bash-local: stderr startup file')
    this.subprocess = plainService(ctx.subprocess)
  }

  /**
   * `ctx.subprocess` as its plain object, read once: reaching a service through the context builds
   * an Error and tracing proxies on every read. It is a required inject, so Cordis restarts this
   * plugin (a new instance) whenever the service changes; the reference never goes stale.
   */
  protected readonly subprocess: Context['subprocess']

  /** The BASH_ENV file that points bash's stderr at its stdout pipe (see `runShellProcess`). */
  protected readonly mergeStartup = new MergeStartupFile()

  async resolve(request: ShellRequest): Promise<ShellSpec> {
    if (request === null || typeof request !== 'object')
      throw new ShellError('INVALID_REQUEST', 'expected a shell request object')
    const { command, cwd, workdir, timeoutMs, env } = request
    if (typeof command !== 'string' || command.trim() === '')
      throw new ShellError('INVALID_REQUEST', 'command must be a non-empty string')
    if (command.includes('\0')) throw new ShellError('INVALID_REQUEST', 'command must not contain NUL characters')
    const bytes = Buffer.byteLength(command)
    if (bytes > MAX_COMMAND_BYTES) {
      throw new ShellError(
        'COMMAND_TOO_LONG',
        `command is ${bytes} bytes; the limit is ${MAX_COMMAND_BYTES}. Write the script to a file and run the file instead.`,
      )
    }
    if (typeof cwd !== 'string' || !isAbsolute(cwd))
      throw new ShellError('INVALID_REQUEST', 'cwd must be an absolute path')
    if (workdir !== undefined && (typeof workdir !== 'string' || workdir === '' || workdir.includes('\0'))) {
      throw new ShellError('INVALID_REQUEST', 'workdir must be a non-empty path')
    }
    const dir = workdir === undefined ? cwd : resolvePath(cwd, workdir)
    // One local stat, synchronously: the spawn that follows stats the same directory synchronously
    // anyway, and an asynchronous stat cost a thread-pool round trip before every command.
    let isDir: boolean | undefined
    try {
      isDir = statSync(dir, { throwIfNoEntry: false })?.isDirectory()
    } catch {
      // ENOTDIR, EACCES: as unusable as a missing directory.
    }
    if (isDir === undefined) throw new ShellError('WORKDIR_NOT_FOUND', `working directory does not exist: ${dir}`)
    if (!isDir) throw new ShellError('WORKDIR_NOT_DIRECTORY', `working directory is not a directory: ${dir}`)

    const notes: string[] = []
    let timeout = this.config.defaultTimeoutMs
    if (timeoutMs !== undefined) {
      if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1)
        throw new ShellError('INVALID_REQUEST', 'timeoutMs must be a positive integer')
      timeout = timeoutMs
      if (timeout > this.config.maxTimeoutMs) {
        notes.push(`timeout capped at ${this.config.maxTimeoutMs} ms (requested ${timeoutMs} ms)`)
        timeout = this.config.maxTimeoutMs
      }
    }
    const output = this.resolveOutput(request.output, notes)
    const merged: Record<string, string> = { ...this.config.environment }
    for (const [name, value] of Object.entries(env ?? {})) {
      if (typeof value !== 'string')
        throw new ShellError('INVALID_REQUEST', `environment variable ${name} must be a string`)
      merged[name] = value
    }
    return {
      executor: EXECUTOR,
      dialect: this.dialect,
      command,
      cwd: dir,
      timeoutMs: timeout,
      output,
      env: merged,
      notes,
    }
  }

  private resolveOutput(budget: ShellOutputBudget | undefined, notes: string[]): ShellOutputBudget {
    const cap = this.config.output
    if (budget === undefined) return { ...cap }
    if (budget === null || typeof budget !== 'object')
      throw new ShellError('INVALID_REQUEST', 'output must be {maxBytes, headBytes, tailBytes}')
    for (const key of ['maxBytes', 'headBytes', 'tailBytes'] as const) {
      if (!Number.isSafeInteger(budget[key]) || budget[key] < 0)
        throw new ShellError('INVALID_REQUEST', `output.${key} must be a non-negative integer`)
    }
    if (budget.headBytes + budget.tailBytes > budget.maxBytes) {
      throw new ShellError('INVALID_REQUEST', 'output.headBytes + output.tailBytes must not exceed output.maxBytes')
    }
    if (budget.maxBytes <= cap.maxBytes)
      return { maxBytes: budget.maxBytes, headBytes: budget.headBytes, tailBytes: budget.tailBytes }
    // Scale head and tail down with the cap so their ratio survives.
    const ratio = cap.maxBytes / budget.maxBytes
    notes.push(`output budget capped at ${cap.maxBytes} bytes (requested ${budget.maxBytes})`)
    return {
      maxBytes: cap.maxBytes,
      headBytes: Math.floor(budget.headBytes * ratio),
      tailBytes: Math.floor(budget.tailBytes * ratio),
    }
  }

  async run(spec: ShellSpec, options: ShellRunOptions = {}): Promise<ShellResult> {
    if (spec?.executor !== EXECUTOR) {
      throw new ShellError(
        'FOREIGN_SPEC',
        `bash-local cannot run a spec resolved by ${JSON.stringify(spec?.executor)}; call ctx.shell.resolve() first`,
      )
    }
    const started = Date.now()
    if (options.signal?.aborted) return cancelledBeforeStart()

    return runShellProcess(this.subprocess, {
      file: this.config.bash,
      args: ['-c', spec.command],
      spec,
      settings: this.config,
      options,
      started,
      stderr: 'bash',
      mergeStartup: this.mergeStartup,
    })
  }
}

/** What the startup file runs: stderr onto stdout's pipe, then BASH_ENV is forgotten so nested bash scripts do not read it. */
export const MERGE_STARTUP_SCRIPT = 'exec 2>&1\nunset BASH_ENV\n'

/**
 * A private startup file for non-interactive bash (`BASH_ENV`) that merges stderr into stdout
 * before the `-c` command is parsed. Created on first use in a fresh private directory under
 * `$DSH_HOME/run` (@dsh/spill-files: 0700, and read-only inside the sandbox, so no confined command
 * can change what an unconfined bash sources), re-created when it was removed, removed on dispose. `path()` answers undefined when it cannot be written;
 * the caller then merges another way.
 */
export class MergeStartupFile {
  private dir: PrivateDir | undefined
  private file: string | undefined
  private failed = false

  path(): string | undefined {
    if (this.failed) return undefined
    if (this.file && existsSync(this.file)) return this.file
    try {
      if (this.dir) {
        try {
          this.dir.verify()
        } catch {
          this.dir = undefined
        }
      }
      // In the dsh home, not the temp dir: a confined command (same user, temp dir writable) must
      // not be able to edit what the next unconfined bash sources.
      this.dir ??= dshRunDir().tempSubdir('bash-')
      this.file = this.dir.writeFile(`merge-stderr-${Date.now().toString(36)}.sh`, MERGE_STARTUP_SCRIPT)
      return this.file
    } catch {
      this.failed = true
      return undefined
    }
  }

  dispose(): void {
    this.dir?.remove()
    this.dir = this.file = undefined
  }
}

export interface ShellProcessRequest {
  file: string
  args: string[]
  spec: ShellSpec
  settings: { killGraceMs: number; spillDir?: string; spillMaxBytes?: number; drainMs: number }
  options: ShellRunOptions
  /** Epoch ms the run started (for durationMs). */
  started: number
  /**
   * `stdout` (default): the spawn puts stderr on stdout's pipe (a `sh` runs `exec ... 2>&1` in
   * front of the target). `pipe`: the argv already does it (a sandbox wrapper's init); stderr keeps
   * its own pipe, for the wrapper's own messages, and both are retained as one merged output.
   * `bash`: `file` is a bash running `-c <command>`; bash itself moves stderr onto stdout's pipe
   * before the command (the `mergeStartup` file, named by BASH_ENV), so one process runs instead
   * of sh then bash. Falls back to `stdout` when BASH_ENV is set for the command already or the
   * startup file cannot be written.
   */
  stderr?: 'stdout' | 'pipe' | 'bash'
  /** The startup file of `stderr: 'bash'`. */
  mergeStartup?: MergeStartupFile
  /** A faster way to start the same command (a sandbox's spawn server); see `SpawnSpec.launcher`. */
  launcher?: ProcessLauncher
}

/** How the spawn merges stderr, and the variables that go with it. */
function mergePlan(request: ShellProcessRequest): { stderr: 'stdout' | 'pipe'; env: Record<string, string> } {
  const env = request.spec.env ?? {}
  if (request.stderr !== 'bash') return { stderr: request.stderr ?? 'stdout', env }
  // A BASH_ENV of the user's or the caller's stays in charge; the sh wrapper merges instead.
  if (env.BASH_ENV !== undefined || process.env.BASH_ENV !== undefined) return { stderr: 'stdout', env }
  const file = request.mergeStartup?.path()
  if (!file) return { stderr: 'stdout', env }
  // stderr keeps its own pipe for what bash prints before the startup file ran; retained merged.
  return { stderr: 'pipe', env: { ...env, BASH_ENV: file } }
}

/**
 * Runs one resolved shell command as a process group: the spec's timeout and the caller's
 * signal abort it (TERM, grace, KILL of the group), stderr shares stdout's pipe so the merged
 * output keeps write order, output is retained head+tail with the rest spilled. Shared by every
 * bash provider (bash-local runs `bash -c`, bash-sandbox the confined argv).
 */
export async function runShellProcess(
  subprocess: Context['subprocess'],
  request: ShellProcessRequest,
): Promise<ShellResult> {
  const { spec, settings, options, started } = request
  const internal = new AbortController()
  let cause: 'timeout' | 'cancelled' | undefined
  const timer = setTimeout(() => {
    cause ??= 'timeout'
    internal.abort()
  }, spec.timeoutMs)
  const onAbort = () => {
    cause ??= 'cancelled'
    internal.abort()
  }
  options.signal?.addEventListener('abort', onAbort, { once: true })
  const merge = mergePlan(request)
  try {
    const handle = subprocess.spawn({
      file: request.file,
      args: request.args,
      cwd: spec.cwd,
      env: { base: 'scrubbed', set: merge.env },
      stdin: 'ignore',
      // One pipe for both streams: the merged output keeps the order the command wrote it in.
      stderr: merge.stderr,
      kill: { graceMs: settings.killGraceMs },
      signal: internal.signal,
      retention: {
        ...spec.output,
        ...spillDirOf(settings.spillDir, spec.notes),
        ...(settings.spillMaxBytes !== undefined ? { spillMaxBytes: settings.spillMaxBytes } : {}),
        spillPrefix: 'bash',
      },
      retentionMode: 'merged',
      drainMs: settings.drainMs,
      reapGroup: true,
      ...(request.launcher ? { launcher: request.launcher } : {}),
    })
    if (options.onOutput) {
      const listener = options.onOutput
      const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() }
      handle.onOutput((chunk) => {
        if (chunk.stream === 'terminal') return
        const text = decoders[chunk.stream].decode(chunk.data, { stream: true })
        if (text) listener({ stream: chunk.stream, text })
      })
    }
    const exit = await handle.exited
    const spillError = exit.output.merged?.spillError
    // The model learns that the complete output is not (all) on disk, and why.
    if (spillError) spec.notes.push(`the complete output could not be kept: ${spillError}`)
    return classify(exit, cause, Date.now() - started)
  } finally {
    clearTimeout(timer)
    options.signal?.removeEventListener('abort', onAbort)
  }
}

/** The retention's spill dir: the configured one, or for the default this process's private `shell-output` dir. */
function spillDirOf(configured: string | undefined, notes: string[]): { spillDir?: string } {
  if (configured === undefined) return {}
  if (configured !== DEFAULT_SPILL_DIR) return { spillDir: configured }
  try {
    return { spillDir: processTempSubdir('shell-output').path }
  } catch (error) {
    notes.push(`long output cannot be spilled to a file: ${error instanceof Error ? error.message : String(error)}`)
    return {}
  }
}

/** Length of `bytes` without a trailing, incomplete UTF-8 sequence (a cut in the middle of a character). */
function completePrefix(bytes: Uint8Array): number {
  let i = bytes.byteLength - 1
  let continuation = 0
  while (i >= 0 && continuation < 3 && (bytes[i] & 0xc0) === 0x80) {
    i--
    continuation++
  }
  if (i < 0) return bytes.byteLength
  const lead = bytes[i]
  const need = lead >= 0xf0 && lead < 0xf8 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 0
  if (lead >= 0xc0 && need > continuation) return i
  return bytes.byteLength
}

/** Offset past leading UTF-8 continuation bytes (the rest of a character cut at the start). */
function completeStart(bytes: Uint8Array): number {
  let i = 0
  while (i < bytes.byteLength && i < 3 && (bytes[i] & 0xc0) === 0x80) i++
  return i
}

function toShellOutput(retained: RetainedOutput | undefined): ShellOutput {
  if (!retained) return { head: '', tail: '', totalBytes: 0, truncated: false, omittedBytes: 0 }
  // At a truncation cut a character may be split; the partial bytes count as omitted instead of
  // showing up as replacement characters. Invalid bytes elsewhere still decode to U+FFFD.
  const head = retained.truncated ? retained.head.subarray(0, completePrefix(retained.head)) : retained.head
  const tail = retained.truncated ? retained.tail.subarray(completeStart(retained.tail)) : retained.tail
  const out: ShellOutput = {
    head: decodeOutput(head),
    tail: decodeOutput(tail),
    totalBytes: retained.totalBytes,
    truncated: retained.truncated,
    omittedBytes: retained.truncated ? retained.totalBytes - head.byteLength - tail.byteLength : 0,
  }
  if (retained.spillPath && !retained.spillError) out.spillPath = retained.spillPath
  return out
}

function classify(exit: ProcessExit, cause: 'timeout' | 'cancelled' | undefined, durationMs: number): ShellResult {
  const result: ShellResult = {
    status: 'exited',
    exitCode: exit.code,
    signal: exit.signal,
    output: toShellOutput(exit.output.merged),
    durationMs,
  }
  if (exit.escalation) result.escalation = exit.escalation
  if (exit.spawnError) {
    result.status = 'failed'
    result.error = {
      code: exit.spawnError.code,
      message: exit.spawnError.message,
      ...(exit.spawnError.started ? { started: true as const } : {}),
    }
  } else if (exit.terminated === 'aborted' && cause) {
    result.status = cause
  } else if (exit.terminated === 'disposed') {
    result.status = 'cancelled'
  } else if (exit.signal !== null) {
    result.status = 'signaled'
  }
  return result
}

function cancelledBeforeStart(): ShellResult {
  return {
    status: 'cancelled',
    exitCode: null,
    signal: null,
    output: { head: '', tail: '', totalBytes: 0, truncated: false, omittedBytes: 0 },
    durationMs: 0,
  }
}

export const name = 'bash-local'
export default BashLocalExecutor
