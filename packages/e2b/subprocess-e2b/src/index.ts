// @dsh/subprocess-e2b: the `ctx.subprocess` seam served from the run's E2B sandbox. Every process
// a consumer starts (bash, search, jobs, language servers) runs in the sandbox of `ctx.e2b`
// through the SDK's commands API; output streams back chunk by chunk, stdin and signals go the
// other way, and a sandbox that dies under a command ends it with a result that says so.
import { createHash } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import {
  DEFAULT_SCRUB_DENY,
  SubprocessError,
  SubprocessService,
  type OutputChunk,
  type OutputStream,
  type ProcessExit,
  type ProcessHandle,
  type RetainedOutput,
  type RetentionSpec,
  type ScrubPolicy,
  type SpawnSpec,
  type TerminalHandle,
  type TerminalSpawnSpec,
} from '@dsh/subprocess'
import { CommandExitError, quote, REMOTE_STATE_DIR, type E2bService, type Sandbox } from '@dsh/e2b'

export interface E2bSubprocessConfig {
  /** Largest local `BASH_ENV` file mirrored into the sandbox. */
  maxBashEnvBytes: number
}

const encoder = new TextEncoder()

/** Head and tail retention of one stream (the remote world keeps no spill file). */
class Retained {
  private whole: Uint8Array[] = []
  private head: Uint8Array = new Uint8Array(0)
  private tail: Uint8Array = new Uint8Array(0)
  /** True once the stream passed `maxBytes` and only head and tail are kept. */
  private split = false
  total = 0
  constructor(private readonly spec: RetentionSpec | undefined) {}

  add(data: Uint8Array): void {
    this.total += data.byteLength
    const spec = this.spec
    if (!spec || this.total <= spec.maxBytes) {
      this.whole.push(data)
      return
    }
    if (!this.split) {
      // The chunk that crosses `maxBytes` (maybe the first one) belongs to the head or the tail too.
      const all = concat([...this.whole, data])
      this.split = true
      this.whole = []
      this.head = all.subarray(0, spec.headBytes)
      this.tail = all.subarray(Math.max(spec.headBytes, all.byteLength - spec.tailBytes))
      return
    }
    const joined = concat([this.tail, data])
    this.tail = joined.subarray(Math.max(0, joined.byteLength - spec.tailBytes))
  }

  snapshot(): RetainedOutput {
    if (!this.spec || this.total <= this.spec.maxBytes) {
      const head = concat(this.whole)
      return { totalBytes: this.total, truncated: false, head, tail: new Uint8Array(0), retainedBytes: head.byteLength }
    }
    return {
      totalBytes: this.total,
      truncated: true,
      head: this.head,
      tail: this.tail,
      retainedBytes: this.head.byteLength + this.tail.byteLength,
    }
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.byteLength
  }
  return out
}

type SignalName = 'SIGTERM' | 'SIGKILL'

/** The envd process RPC the SDK keeps internal; only `sendSignal` is used (SIGTERM has no public call). */
interface ProcessRpc {
  sendSignal(request: { process: { selector: { case: 'pid'; value: number } }; signal: number }): Promise<unknown>
}

/** One remote process: its output, retention, signals and exit record. */
class RemoteProcess {
  pid: number | undefined
  done = false
  sandbox: Sandbox | undefined
  readonly listeners = new Set<(chunk: OutputChunk) => void>()
  readonly retained = new Map<'merged' | OutputStream, Retained>()
  readonly exited: Promise<ProcessExit>
  private resolveExit!: (exit: ProcessExit) => void
  terminated: ProcessExit['terminated']
  escalation: ProcessExit['escalation']
  /** Writes and signals wait for the process to start; they run in order. */
  private queue: Promise<unknown> = Promise.resolve()
  private started!: () => void
  readonly ready = new Promise<void>((resolve) => (this.started = resolve))
  private terminating: Promise<ProcessExit> | undefined

  constructor(
    private readonly mode: 'merged' | 'separate' | 'none' | 'terminal',
    retention: RetentionSpec | undefined,
    private readonly graceMs: number,
  ) {
    this.exited = new Promise((resolve) => (this.resolveExit = resolve))
    if (mode === 'merged') this.retained.set('merged', new Retained(retention))
    if (mode === 'separate') {
      this.retained.set('stdout', new Retained(retention))
      this.retained.set('stderr', new Retained(retention))
    }
    if (mode === 'terminal') this.retained.set('terminal', new Retained(retention))
  }

  markStarted(sandbox: Sandbox, pid: number): void {
    this.sandbox = sandbox
    this.pid = pid
    this.started()
  }

  ingest(stream: OutputStream, data: Uint8Array): void {
    if (this.done || data.byteLength === 0) return
    const key = this.mode === 'merged' ? 'merged' : stream
    this.retained.get(key)?.add(data)
    for (const listener of [...this.listeners]) {
      try {
        listener({ stream, data })
      } catch {
        // a listener's failure is its own
      }
    }
  }

  snapshot(): ProcessExit['output'] {
    const out: ProcessExit['output'] = {}
    for (const [key, value] of this.retained) out[key] = value.snapshot()
    return out
  }

  settle(exit: Omit<ProcessExit, 'output'>): void {
    if (this.done) return
    this.done = true
    this.started()
    this.resolveExit({
      ...exit,
      ...(this.terminated ? { terminated: this.terminated } : {}),
      ...(this.escalation ? { escalation: this.escalation } : {}),
      output: this.snapshot(),
    })
  }

  /** Runs `work` once the process started (in order with earlier calls); skipped once it ended. */
  enqueue(work: (sandbox: Sandbox, pid: number) => Promise<unknown>): void {
    this.queue = this.queue
      .then(() => this.ready)
      .then(() => (this.done || !this.sandbox || this.pid === undefined ? undefined : work(this.sandbox, this.pid)))
      .catch(() => {})
  }

  sendSignal(signal: SignalName): void {
    if (this.done) return
    if (signal === 'SIGKILL' || this.escalation === undefined) this.escalation = signal
    this.enqueue(async (sandbox, pid) => {
      const rpc = (sandbox.commands as unknown as { rpc?: ProcessRpc }).rpc
      if (signal === 'SIGTERM' && typeof rpc?.sendSignal === 'function') {
        await rpc.sendSignal({ process: { selector: { case: 'pid', value: pid } }, signal: 15 })
      } else await sandbox.commands.kill(pid)
    })
  }

  terminate(reason: NonNullable<ProcessExit['terminated']>): Promise<ProcessExit> {
    if (this.done) return this.exited
    this.terminated ??= reason
    this.terminating ??= (async () => {
      this.sendSignal('SIGTERM')
      let timer: NodeJS.Timeout | undefined
      const graceOver = new Promise<'grace'>((resolve) => (timer = setTimeout(() => resolve('grace'), this.graceMs)))
      const first = await Promise.race([this.exited.then(() => 'exited' as const), graceOver])
      clearTimeout(timer)
      if (first === 'grace') this.sendSignal('SIGKILL')
      return this.exited
    })()
    return this.terminating
  }

  watchAbort(signal: AbortSignal | undefined): void {
    if (!signal) return
    if (signal.aborted) void this.terminate('aborted')
    else signal.addEventListener('abort', () => void this.terminate('aborted'), { once: true })
  }
}

export class E2bSubprocessService extends SubprocessService {
  static inject = ['e2b']
  static Config: Schema<Partial<E2bSubprocessConfig>, E2bSubprocessConfig> = Schema.object({
    maxBashEnvBytes: Schema.natural()
      .default(64 * 1024)
      .description('Largest local BASH_ENV startup file mirrored into the sandbox.'),
  })

  /**
   * Remote processes inherit nothing from this process (their base environment is the sandbox's),
   * so nothing is scrubbed; the policy is the default one, reported for consumers that show it.
   */
  readonly scrubPolicy: ScrubPolicy = { deny: [...DEFAULT_SCRUB_DENY], allow: [] }
  /** Marks a remote provider: `@dsh/e2b` never takes it for this machine's process seam. */
  readonly world = 'e2b'
  private readonly live = new Set<RemoteProcess>()
  private readonly state = { disposed: false }
  /** Local BASH_ENV files already mirrored: content hash to remote path, per sandbox id. */
  private readonly mirrored = new Map<string, Promise<string>>()
  private readonly owner: E2bService
  private readonly config: E2bSubprocessConfig

  constructor(ctx: Context, config: Partial<E2bSubprocessConfig> = {}) {
    super(ctx)
    this.owner = ctx.e2b
    this.config = E2bSubprocessService.Config(config)
    ctx.effect(
      () => async () => {
        this.state.disposed = true
        await Promise.all([...this.live].map((proc) => proc.terminate('disposed')))
      },
      'subprocess-e2b: live processes',
    )
  }

  spawn(spec: SpawnSpec): ProcessHandle {
    this.check(spec)
    const mode = spec.retentionMode ?? 'merged'
    if (spec.stderr === 'stdout' && mode === 'separate') throw invalid('retentionMode "separate" needs stderr: "pipe"')
    const proc = this.track(new RemoteProcess(mode, spec.retention, spec.kill.graceMs))
    proc.watchAbort(spec.signal)
    // A running command keeps its sandbox from an idle pause or kill until it ends.
    void proc.exited.finally(this.owner.busy())
    void this.start(proc, spec)
    return {
      get pid() {
        return proc.pid
      },
      exited: proc.exited,
      onOutput: (listener) => {
        proc.listeners.add(listener)
        return () => proc.listeners.delete(listener)
      },
      signal: (signal = 'SIGTERM') => proc.sendSignal(signal === 'SIGKILL' ? 'SIGKILL' : 'SIGTERM'),
      terminate: () => proc.terminate('requested'),
      retained: () => proc.snapshot(),
      write: (data) => {
        if (spec.stdin !== 'pipe') throw new SubprocessError('INVALID_SPEC', 'stdin is not a pipe for this process')
        proc.enqueue((sandbox, pid) =>
          sandbox.commands.sendStdin(pid, typeof data === 'string' ? data : new TextDecoder().decode(data)),
        )
      },
      closeStdin: () => {
        if (spec.stdin !== 'pipe') throw new SubprocessError('INVALID_SPEC', 'stdin is not a pipe for this process')
        proc.enqueue((sandbox, pid) => sandbox.commands.closeStdin(pid))
      },
    }
  }

  spawnTerminal(spec: TerminalSpawnSpec): TerminalHandle {
    this.check(spec)
    for (const key of ['cols', 'rows'] as const) {
      if (!Number.isSafeInteger(spec[key]) || spec[key] < 1 || spec[key] > 10_000)
        throw invalid(`${key} must be an integer between 1 and 10000`)
    }
    const proc = this.track(new RemoteProcess('terminal', spec.retention, spec.kill.graceMs))
    proc.watchAbort(spec.signal)
    void proc.exited.finally(this.owner.busy())
    void (async () => {
      let sandbox: Sandbox
      try {
        sandbox = await this.owner.sandbox()
      } catch (error) {
        return proc.settle({ code: null, signal: null, spawnError: { code: codeOf(error), message: messageOf(error) } })
      }
      try {
        const terminal = await sandbox.pty.create({
          cols: spec.cols,
          rows: spec.rows,
          cwd: spec.cwd,
          envs: { TERM: spec.termName ?? 'xterm-256color', ...definedEnv(spec.env?.set) },
          timeoutMs: 0,
          onData: (data) => proc.ingest('terminal', data),
        })
        proc.markStarted(sandbox, terminal.pid)
        // The PTY runs the template's login shell; the requested program replaces it.
        await sandbox.pty.sendInput(
          terminal.pid,
          encoder.encode(`exec ${[spec.file, ...(spec.args ?? [])].map(quote).join(' ')}\n`),
        )
        await this.finish(proc, sandbox, () => terminal.wait())
      } catch (error) {
        this.failStart(proc, sandbox, error)
      }
    })()
    return {
      get pid() {
        return proc.pid
      },
      exited: proc.exited,
      onOutput: (listener) => {
        proc.listeners.add(listener)
        return () => proc.listeners.delete(listener)
      },
      signal: (signal = 'SIGTERM') => proc.sendSignal(signal === 'SIGKILL' ? 'SIGKILL' : 'SIGTERM'),
      terminate: () => proc.terminate('requested'),
      retained: () => proc.snapshot(),
      write: (data) => proc.enqueue((sandbox, pid) => sandbox.pty.sendInput(pid, encoder.encode(data))),
      resize: (cols, rows) => {
        if (!Number.isSafeInteger(cols) || !Number.isSafeInteger(rows) || cols < 1 || rows < 1)
          throw invalid('cols and rows must be positive integers')
        proc.enqueue((sandbox, pid) => sandbox.pty.resize(pid, { cols, rows }))
      },
    }
  }

  private async start(proc: RemoteProcess, spec: SpawnSpec): Promise<void> {
    let sandbox: Sandbox
    try {
      sandbox = await this.owner.sandbox()
    } catch (error) {
      return proc.settle({ code: null, signal: null, spawnError: { code: codeOf(error), message: messageOf(error) } })
    }
    if (proc.done) return
    if (spec.signal?.aborted) return proc.settle({ code: null, signal: null })
    let command: string
    let envs: Record<string, string>
    try {
      ;({ command, envs } = await this.commandLine(sandbox, spec))
    } catch (error) {
      return this.failStart(proc, sandbox, error)
    }
    try {
      const handle = await sandbox.commands.run(command, {
        background: true,
        cwd: spec.cwd,
        envs,
        stdin: spec.stdin === 'pipe',
        timeoutMs: 0,
        onStdout: (text) => proc.ingest('stdout', encoder.encode(text)),
        onStderr: (text) => proc.ingest('stderr', encoder.encode(text)),
      })
      proc.markStarted(sandbox, handle.pid)
      await this.finish(proc, sandbox, () => handle.wait())
    } catch (error) {
      this.failStart(proc, sandbox, error)
    }
  }

  /** Waits for the remote end and turns it into the exit record. */
  private async finish(
    proc: RemoteProcess,
    sandbox: Sandbox,
    wait: () => Promise<{ exitCode: number; error?: string }>,
  ): Promise<void> {
    try {
      const result = await wait()
      proc.settle(exitOf(proc, result.exitCode))
    } catch (error) {
      if (error instanceof CommandExitError) return proc.settle(exitOf(proc, error.exitCode))
      // Gone only when the sandbox itself says so: a stream that broke under a running sandbox is
      // a dropped connection, and the machine (with the files written there) is still there.
      if (this.owner.isGone(error) && !(await sandbox.isRunning().catch(() => false))) {
        return proc.settle({
          code: null,
          signal: null,
          spawnError: { code: 'E2B_SANDBOX_LOST', message: this.owner.lost(sandbox, error), started: true },
        })
      }
      if (proc.done) return
      // The command may still run remotely with nobody reading it: it is stopped (best effort), so
      // it neither holds the sandbox busy nor writes files behind the model's back.
      const pid = proc.pid
      const stopped =
        pid === undefined ? false : await sandbox.commands.kill(pid, { requestTimeoutMs: 10_000 }).catch(() => false)
      proc.settle({
        code: null,
        signal: null,
        spawnError: {
          code: 'E2B_STREAM_DROPPED',
          message: `the connection to the E2B sandbox ${sandbox.sandboxId} dropped while the command ran (${messageOf(error)}), so its exit status is unknown; the output above is what arrived before the drop, the command ${stopped ? 'was stopped there' : 'may still be running there'}, and the next command reconnects`,
          started: true,
        },
      })
    }
  }

  private failStart(proc: RemoteProcess, sandbox: Sandbox, error: unknown): void {
    if (this.owner.isGone(error)) {
      proc.settle({
        code: null,
        signal: null,
        spawnError: { code: 'E2B_SANDBOX_LOST', message: this.owner.lost(sandbox, error) },
      })
      return
    }
    const message = messageOf(error)
    if (/cwd .*does not exist|no such file or directory.*cwd|cwd.*not found/i.test(message)) {
      proc.settle({
        code: null,
        signal: null,
        spawnError: {
          code: 'CWD_NOT_FOUND',
          message: `working directory does not exist in the E2B sandbox: ${message}`,
        },
      })
      return
    }
    proc.settle({
      code: null,
      signal: null,
      spawnError: { code: 'SPAWN_FAILED', message: `the E2B sandbox could not start the command: ${message}` },
    })
  }

  /** The bash command line the SDK runs (`bash -l -c`), and the environment it gets. */
  private async commandLine(
    sandbox: Sandbox,
    spec: SpawnSpec,
  ): Promise<{ command: string; envs: Record<string, string> }> {
    const envs = definedEnv(spec.env?.set)
    // A local startup file (bash-local's stderr merge) does not exist remotely: mirror it.
    if (envs.BASH_ENV) envs.BASH_ENV = await this.mirror(sandbox, envs.BASH_ENV)
    const argv = [spec.file, ...(spec.args ?? [])].map(quote).join(' ')
    const exact =
      spec.env?.base === 'exact'
        ? `env -i ${Object.entries(envs)
            .map(([k, v]) => quote(`${k}=${v}`))
            .join(' ')} `
        : ''
    const merge = spec.stderr === 'stdout' ? ' 2>&1' : ''
    return { command: `exec ${exact}${argv}${merge}`, envs: exact ? {} : envs }
  }

  private mirror(sandbox: Sandbox, local: string): Promise<string> {
    let text: string
    try {
      if (statSync(local).size > this.config.maxBashEnvBytes) return Promise.resolve(local)
      text = readFileSync(local, 'utf8')
    } catch {
      // Not a local file: it may name a file of the sandbox itself.
      return Promise.resolve(local)
    }
    const hash = createHash('sha256').update(text).digest('hex').slice(0, 16)
    const key = `${sandbox.sandboxId}:${hash}`
    let remote = this.mirrored.get(key)
    if (!remote) {
      const path = `${REMOTE_STATE_DIR}/bash-env-${hash}.sh`
      remote = sandbox.files.write(path, text).then(() => path)
      remote.catch(() => this.mirrored.delete(key))
      this.mirrored.set(key, remote)
    }
    return remote
  }

  private track(proc: RemoteProcess): RemoteProcess {
    if (this.state.disposed) throw new SubprocessError('DISPOSED', 'the subprocess service has been disposed')
    this.live.add(proc)
    void proc.exited.then(() => this.live.delete(proc))
    return proc
  }

  private check(spec: SpawnSpec | TerminalSpawnSpec): void {
    if (this.state.disposed) throw new SubprocessError('DISPOSED', 'the subprocess service has been disposed')
    if (spec === null || typeof spec !== 'object') throw invalid('expected a spawn spec object')
    if (typeof spec.file !== 'string' || spec.file === '' || spec.file.includes('\0'))
      throw invalid('file must be a non-empty string')
    if (
      spec.args !== undefined &&
      (!Array.isArray(spec.args) || spec.args.some((a) => typeof a !== 'string' || a.includes('\0')))
    ) {
      throw invalid('args must be an array of strings without NUL bytes')
    }
    if (typeof spec.cwd !== 'string' || !spec.cwd.startsWith('/')) throw invalid('cwd must be an absolute path')
    if (!spec.kill || !Number.isSafeInteger(spec.kill.graceMs) || spec.kill.graceMs < 0)
      throw invalid('kill.graceMs must be a non-negative integer')
    const retention = spec.retention
    if (retention && (retention.headBytes + retention.tailBytes > retention.maxBytes || retention.maxBytes < 0)) {
      throw invalid('retention.headBytes + retention.tailBytes must not exceed retention.maxBytes')
    }
    for (const [name, value] of Object.entries(spec.env?.set ?? {})) {
      if (name === '' || name.includes('=') || name.includes('\0'))
        throw invalid(`invalid environment variable name ${JSON.stringify(name)}`)
      if (value !== undefined && (typeof value !== 'string' || value.includes('\0')))
        throw invalid(`environment variable ${name} must be a string without NUL bytes`)
    }
  }
}

/** A remote exit code as the seam reports it: a signal we sent shows as the signal, not a code. */
function exitOf(proc: RemoteProcess, exitCode: number): Omit<ProcessExit, 'output'> {
  if (proc.escalation && (exitCode === -1 || exitCode === 128 + 9 || exitCode === 128 + 15)) {
    return { code: null, signal: exitCode === 143 ? 'SIGTERM' : exitCode === 137 ? 'SIGKILL' : proc.escalation }
  }
  return { code: exitCode, signal: null }
}

function definedEnv(set: Record<string, string | undefined> | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(set ?? {})) if (value !== undefined) out[name] = value
  return out
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown })?.code
  return typeof code === 'string' ? `E2B_${code}` : 'E2B_UNAVAILABLE'
}

function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]
}

function invalid(message: string): SubprocessError {
  return new SubprocessError('INVALID_SPEC', message)
}

export const name = 'subprocess-e2b'
export default E2bSubprocessService
