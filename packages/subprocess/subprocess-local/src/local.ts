// LocalSubprocessService: process groups and terminals on this machine.
import { spawn as spawnChild } from 'node:child_process'
import { accessSync, constants as fsConstants, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { delimiter, isAbsolute, resolve as resolvePath } from 'node:path'
import { constants } from 'node:os'
import type { Readable } from 'node:stream'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import {
  SubprocessError,
  SubprocessService,
  DEFAULT_SCRUB_DENY,
  compilePattern,
  createScrubber,
  scrubEnvironment,
  type EnvSpec,
  type LaunchedChild,
  type ProcessHandle,
  type ScrubPolicy,
  type SpawnSpec,
  type TerminalHandle,
  type TerminalSpawnSpec,
} from '@dsh/subprocess'
import { checkRetention } from './retention.ts'
import { groupAlive, signalGroup } from './group.ts'
import { Managed } from './managed.ts'
import { sessionAlive, signalSession } from './session.ts'
import { addonLoadError, guard, nativeSpawn, watchdogUnavailable, type SpawnedChild } from '@dsh/posix-spawn'

export interface LocalSubprocessConfig {
  scrub: { deny: string[]; allow: string[] }
  /** How pipe processes start: `auto` uses posix_spawn where the addon is built, else child_process. */
  spawner?: 'auto' | 'child_process'
  /**
   * A watchdog process ends every running process group (pipes and terminals) when this process
   * dies, even by SIGKILL. Default true.
   */
  watchdog?: boolean
}

const patternList = Schema.array(String).role('table')

function checkPatterns(list: string[]): string[] {
  for (const pattern of list) compilePattern(pattern)
  return list
}

const DEFAULT_DRAIN_MS = 250

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref?.())
}

function signalName(signal: number | string | null | undefined): string | null {
  if (signal === null || signal === undefined || signal === 0) return null
  if (typeof signal === 'string') return signal
  for (const [name, value] of Object.entries(constants.signals)) if (value === signal) return name
  return `SIG${signal}`
}

export class LocalSubprocessService extends SubprocessService {
  static Config: Schema<LocalSubprocessConfig> = Schema.object({
    scrub: Schema.object({
      deny: patternList
        .default([...DEFAULT_SCRUB_DENY])
        .description(
          'Inherited variables whose names match one of these patterns (`*` wildcard, case-insensitive) are removed from every child environment.',
        ),
      allow: patternList.default([]).description('Names kept even when a deny pattern matches.'),
    }).default({ deny: [...DEFAULT_SCRUB_DENY], allow: [] }),
    spawner: Schema.union(['auto', 'child_process'])
      .default('auto')
      .description(
        '`auto` starts pipe processes with posix_spawn (Linux, when the addon is built), else with child_process.spawn; `child_process` always uses child_process.spawn.',
      ),
    watchdog: Schema.boolean()
      .default(true)
      .description(
        "A small watchdog process (started with the first process) ends every process group still running when this process dies, even by SIGKILL: SIGTERM, then SIGKILL after the process's grace.",
      ),
  })

  readonly scrubPolicy: ScrubPolicy
  private readonly isScrubbed: (name: string) => boolean
  private readonly live = new Set<Managed>()
  private disposed = false
  /** What starts pipe processes: `posix_spawn` (the native addon) or `child_process`. */
  readonly spawner: 'posix_spawn' | 'child_process'
  /** Why `auto` fell back to child_process, when it did. */
  readonly spawnerFallback: string | undefined
  /** Pipe processes a spec's launcher started (a sandbox's spawn server), for diagnostics and tests. */
  launched = 0
  /** Whether process groups are guarded by the watchdog, and why not when they are not. */
  readonly watchdog: boolean
  readonly watchdogFallback: string | undefined

  constructor(ctx: Context, config: LocalSubprocessConfig) {
    super(ctx)
    const scrub = config?.scrub ?? { deny: [...DEFAULT_SCRUB_DENY], allow: [] }
    this.scrubPolicy = { deny: checkPatterns([...scrub.deny]), allow: checkPatterns([...scrub.allow]) }
    this.isScrubbed = createScrubber(this.scrubPolicy)
    const fallback = config?.spawner === 'child_process' ? 'configured' : addonLoadError()
    this.spawner = fallback === undefined ? 'posix_spawn' : 'child_process'
    this.spawnerFallback = fallback
    this.watchdogFallback = config?.watchdog === false ? 'configured' : watchdogUnavailable()
    this.watchdog = this.watchdogFallback === undefined
    ctx.effect(() => () => this.disposeAll(), 'subprocess-local: live processes')
  }

  /** The environment a child gets for `spec` (exposed for tests and diagnostics). */
  buildEnv(spec: EnvSpec | undefined): Record<string, string> {
    const base = spec?.base ?? 'scrubbed'
    const env: Record<string, string> = base === 'exact' ? {} : scrubEnvironment(process.env, this.isScrubbed).env
    for (const [name, value] of Object.entries(spec?.set ?? {})) {
      if (value === undefined) delete env[name]
      else env[name] = value
    }
    return env
  }

  spawn(spec: SpawnSpec): ProcessHandle {
    this.checkCommon(spec)
    if (spec.stdin !== undefined && spec.stdin !== 'ignore' && spec.stdin !== 'pipe')
      throw invalid('stdin must be "ignore" or "pipe"')
    const mode = spec.retentionMode ?? 'merged'
    if (!['merged', 'separate', 'none'].includes(mode))
      throw invalid('retentionMode must be "merged", "separate" or "none"')
    if (spec.stderr !== undefined && spec.stderr !== 'pipe' && spec.stderr !== 'stdout')
      throw invalid('stderr must be "pipe" or "stdout"')
    if (spec.stderr === 'stdout' && mode === 'separate') throw invalid('retentionMode "separate" needs stderr: "pipe"')
    if (spec.launcher !== undefined && typeof spec.launcher?.launch !== 'function')
      throw invalid('launcher must be an object with a launch() method')
    const drainMs = spec.drainMs ?? DEFAULT_DRAIN_MS
    if (!Number.isSafeInteger(drainMs) || drainMs < 0) throw invalid('drainMs must be a non-negative integer')

    const managed = this.track(new Managed(spec.retention, mode, spec.kill.graceMs, () => this.live.delete(managed)))
    managed.ensureKeys(mode === 'merged' ? ['merged'] : mode === 'separate' ? ['stdout', 'stderr'] : [])
    let child: SpawnedChild | undefined
    const env = this.buildEnv(spec.env)
    const located = checkCwd(spec.cwd) ?? findExecutable(spec.file, spec.cwd, env.PATH)
    if ('code' in located) {
      void managed.settle({ code: null, signal: null, spawnError: located })
    } else {
      const merge = spec.stderr === 'stdout'
      if (spec.launcher) {
        try {
          child = spec.launcher.launch({ env, stdinPipe: spec.stdin === 'pipe' }) as SpawnedChild | undefined
        } catch {
          // The launcher is a shortcut: the spec's own command line starts the same command.
        }
        if (child) this.launched++
      }
      if (!child && this.spawner === 'posix_spawn') {
        try {
          // posix_spawn dups stderr onto stdout's pipe itself: no shell in between.
          child = nativeSpawn(located.path, spec.args ?? [], {
            cwd: spec.cwd,
            env,
            stdinPipe: spec.stdin === 'pipe',
            mergeStderr: merge,
          })
        } catch {
          // A failed posix_spawn (the program vanished since it was located, a permission): the
          // child_process path below reports it with the same codes as on every other platform.
        }
      }
      // child_process cannot share one pipe between stdout and stderr: a POSIX shell sets 2>&1 and
      // execs the target, so the pid, process group and argv of the target are unchanged.
      const [file, args] = merge
        ? ['/bin/sh', ['-c', 'exec "$0" "$@" 2>&1', located.path, ...(spec.args ?? [])]]
        : [located.path, spec.args ?? []]
      if (!child) {
        try {
          child = spawnChild(file, args, {
            cwd: spec.cwd,
            env,
            stdio: [spec.stdin === 'pipe' ? 'pipe' : 'ignore', 'pipe', 'pipe'],
            // A new session and process group led by the child: the group is signalled as a whole.
            detached: true,
            windowsHide: true,
          })
        } catch (error) {
          void managed.settle({
            code: null,
            signal: null,
            spawnError: { code: 'SPAWN_FAILED', message: (error as Error).message },
          })
        }
      }
    }
    if (child) this.wirePipes(managed, child, spec, drainMs)
    managed.watchAbort(spec.signal)
    return {
      get pid() {
        return managed.pid
      },
      exited: managed.exited,
      onOutput: (listener) => managed.onOutput(listener),
      signal: (signal = 'SIGTERM') => {
        if (!managed.done) managed.reach?.signal(signal)
      },
      terminate: () => managed.terminate('requested'),
      retained: () => managed.retained(),
      write: (data) => {
        if (!child?.stdin) throw new SubprocessError('INVALID_SPEC', 'stdin is not a pipe for this process')
        if (!child.stdin.destroyed) child.stdin.write(data)
      },
      closeStdin: () => {
        if (!child?.stdin) throw new SubprocessError('INVALID_SPEC', 'stdin is not a pipe for this process')
        child.stdin.end()
      },
    }
  }

  spawnTerminal(spec: TerminalSpawnSpec): TerminalHandle {
    this.checkCommon(spec)
    for (const key of ['cols', 'rows'] as const) {
      if (!Number.isSafeInteger(spec[key]) || spec[key] < 1 || spec[key] > 10_000)
        throw invalid(`${key} must be an integer between 1 and 10000`)
    }
    const managed = this.track(
      new Managed(spec.retention, 'merged', spec.kill.graceMs, () => this.live.delete(managed)),
    )
    managed.ensureKeys(['terminal'])
    // The PTY and its native addon load lazily: pipe-only deployments never load node-pty.
    type Pty = import('node-pty').IPty
    let pty: Pty | undefined
    const env = this.buildEnv(spec.env)
    const located = checkCwd(spec.cwd) ?? findExecutable(spec.file, spec.cwd, env.PATH)
    if ('code' in located) {
      void managed.settle({ code: null, signal: null, spawnError: located })
    } else {
      try {
        pty = loadPty().spawn(located.path, spec.args ?? [], {
          name: spec.termName ?? 'xterm-256color',
          cols: spec.cols,
          rows: spec.rows,
          cwd: spec.cwd,
          env,
          // Raw bytes: decoding is the consumer's choice.
          encoding: null,
        })
      } catch (error) {
        void managed.settle({
          code: null,
          signal: null,
          spawnError: { code: 'SPAWN_FAILED', message: (error as Error).message },
        })
      }
    }
    if (pty) {
      const term = pty
      const sid = term.pid
      managed.pid = sid
      this.guard(managed, sid, spec.kill.graceMs)
      // The child is a session leader (setsid); job control inside may create more process
      // groups, so terminal cleanup reaches the whole session, not only the leader's group.
      managed.reach = { alive: () => sessionAlive(sid), signal: (signal) => signalSession(sid, signal) }
      term.onData((data) =>
        managed.ingest('terminal', typeof data === 'string' ? Buffer.from(data) : (data as Uint8Array), term),
      )
      term.onExit(({ exitCode, signal }) => {
        void (async () => {
          await managed.reap()
          await managed.settle({ code: signal ? null : exitCode, signal: signalName(signal) })
        })()
      })
    }
    managed.watchAbort(spec.signal)
    return {
      get pid() {
        return managed.pid
      },
      exited: managed.exited,
      onOutput: (listener) => managed.onOutput(listener),
      signal: (signal = 'SIGTERM') => {
        if (managed.reach && !managed.done) managed.reach.signal(signal)
      },
      terminate: () => managed.terminate('requested'),
      retained: () => managed.retained(),
      write: (data) => {
        if (pty && !managed.done) pty.write(data)
      },
      resize: (cols, rows) => {
        if (!Number.isSafeInteger(cols) || !Number.isSafeInteger(rows) || cols < 1 || rows < 1)
          throw invalid('cols and rows must be positive integers')
        if (pty && !managed.done) pty.resize(cols, rows)
      },
    }
  }

  private wirePipes(managed: Managed, child: SpawnedChild, spec: SpawnSpec, drainMs: number): void {
    const streams = [child.stdout, child.stderr].filter((s): s is Readable => s !== null)
    const closed = Promise.all(
      streams.map((s) => new Promise<void>((resolve) => (s.closed ? resolve() : s.once('close', () => resolve())))),
    )
    child.stdout?.on('data', (data: Buffer) => managed.ingest('stdout', data, child.stdout as Readable))
    child.stderr?.on('data', (data: Buffer) => managed.ingest('stderr', data, child.stderr as Readable))
    child.stdin?.on('error', () => {
      // EPIPE when the child exits before reading its input: not a failure of the caller.
    })
    const launched = (child as { reach?: LaunchedChild['reach'] }).reach
    if (launched) {
      // A launcher's child lives in another PID namespace: its pid means nothing here.
      managed.reach = launched
    } else if (child.pid !== undefined) {
      const pgid = child.pid
      managed.pid = pgid
      this.guard(managed, pgid, spec.kill.graceMs)
      managed.reach = { alive: () => groupAlive(pgid), signal: (signal) => void signalGroup(pgid, signal) }
    }
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (launched || child.pid === undefined) {
        void managed.settle({
          code: null,
          signal: null,
          spawnError: { code: error.code ?? 'SPAWN_FAILED', message: error.message },
        })
      }
    })
    child.once('exit', (code, signal) => {
      void (async () => {
        // Descendants may still hold the pipes: read on for a while, then end them with the group.
        await Promise.race([closed, delay(drainMs)])
        if (spec.reapGroup ?? true) {
          await managed.reap()
          await Promise.race([closed, delay(drainMs)])
        }
        for (const stream of streams) if (!stream.closed) stream.destroy()
        await managed.settle({ code, signal: signalName(signal) })
      })()
    })
  }

  /**
   * Hands group (and session) `id` to the watchdog until the process's exit record is made: by
   * then the leader exited and the group was reaped (or the caller chose to leave it).
   */
  private guard(managed: Managed, id: number, graceMs: number): void {
    if (this.watchdog) managed.unguard = guard(id, graceMs)
  }

  private track(managed: Managed): Managed {
    if (this.disposed) throw new SubprocessError('DISPOSED', 'the subprocess service has been disposed')
    this.live.add(managed)
    return managed
  }

  private checkCommon(spec: SpawnSpec | TerminalSpawnSpec): void {
    if (this.disposed) throw new SubprocessError('DISPOSED', 'the subprocess service has been disposed')
    if (spec === null || typeof spec !== 'object') throw invalid('expected a spawn spec object')
    if (typeof spec.file !== 'string' || spec.file === '' || spec.file.includes('\0'))
      throw invalid('file must be a non-empty string')
    if (
      spec.args !== undefined &&
      (!Array.isArray(spec.args) || spec.args.some((a) => typeof a !== 'string' || a.includes('\0')))
    ) {
      throw invalid('args must be an array of strings without NUL bytes')
    }
    if (typeof spec.cwd !== 'string' || !isAbsolute(spec.cwd)) throw invalid('cwd must be an absolute path')
    if (!spec.kill || !Number.isSafeInteger(spec.kill.graceMs) || spec.kill.graceMs < 0)
      throw invalid('kill.graceMs must be a non-negative integer')
    if (spec.retention) {
      const problem = checkRetention(spec.retention)
      if (problem) throw invalid(problem)
    }
    const env = spec.env
    if (env !== undefined) {
      if (env.base !== undefined && env.base !== 'scrubbed' && env.base !== 'exact')
        throw invalid('env.base must be "scrubbed" or "exact"')
      for (const [name, value] of Object.entries(env.set ?? {})) {
        if (name === '' || name.includes('=') || name.includes('\0'))
          throw invalid(`invalid environment variable name ${JSON.stringify(name)}`)
        if (value !== undefined && (typeof value !== 'string' || value.includes('\0')))
          throw invalid(`environment variable ${name} must be a string without NUL bytes`)
      }
    }
  }

  private async disposeAll(): Promise<void> {
    this.disposed = true
    await Promise.all([...this.live].map((managed) => managed.terminate('disposed')))
  }
}

function invalid(message: string): SubprocessError {
  return new SubprocessError('INVALID_SPEC', message)
}

function checkCwd(cwd: string): { code: string; message: string } | undefined {
  try {
    if (statSync(cwd).isDirectory()) return undefined
    return { code: 'CWD_NOT_DIRECTORY', message: `working directory is not a directory: ${cwd}` }
  } catch {
    return { code: 'CWD_NOT_FOUND', message: `working directory does not exist: ${cwd}` }
  }
}

const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin'

/**
 * Locates `file` the way execvp would, against the child's PATH: a name with a slash resolves
 * against `cwd`, a bare name is searched on PATH. Failing here gives a clear ENOENT instead of a
 * shell's "not found" or node-pty's late failure.
 */
function findExecutable(
  file: string,
  cwd: string,
  path: string | undefined,
): { path: string } | { code: string; message: string } {
  const candidates = file.includes('/')
    ? [resolvePath(cwd, file)]
    : (path ?? DEFAULT_PATH).split(delimiter).map((dir) => resolvePath(cwd, dir === '' ? '.' : dir, file))
  for (const candidate of candidates) {
    try {
      // A missing candidate (most PATH entries) answers undefined instead of throwing: building an
      // error with its stack for each miss cost more than the lookup itself.
      if (!statSync(candidate, { throwIfNoEntry: false })?.isFile()) continue
      accessSync(candidate, fsConstants.X_OK)
      return { path: candidate }
    } catch {
      // not here
    }
  }
  return { code: 'ENOENT', message: `executable not found: ${file}` }
}

let ptyModule: typeof import('node-pty') | undefined
function loadPty(): typeof import('node-pty') {
  if (!ptyModule) ptyModule = requirePty()
  return ptyModule
}

function requirePty(): typeof import('node-pty') {
  // node-pty is CommonJS with a native addon; createRequire loads it synchronously so spawnTerminal stays synchronous.
  // It is an optional dependency of the published dsh package: absent where npm could not compile it.
  try {
    return createRequire(import.meta.url)('node-pty') as typeof import('node-pty')
  } catch (error) {
    const cause = String((error as Error)?.message ?? error).split('\n')[0]
    throw new Error(
      `terminals are off: the node-pty native add-on is not installed or does not load (${cause}); reinstall dsh where a C++ compiler and Node's headers are available`,
    )
  }
}
