// Vocabulary of the subprocess seam: what a caller asks for (a spawn spec), what it gets back (a
// handle on a process group), and what is left when the group is gone (an exit record with the
// retained output). Every disposition, limit and directory is chosen by the caller; a provider
// only enforces them.

/** One output stream of a process; a terminal process has a single `terminal` stream. */
export type OutputStream = 'stdout' | 'stderr' | 'terminal'

/** A chunk of output in arrival order. `data` is raw bytes; decoding is the consumer's choice. */
export interface OutputChunk {
  stream: OutputStream
  data: Uint8Array
}

/**
 * How much output a handle keeps. While the stream is at most `maxBytes` it is kept whole in
 * memory. Past that the first `headBytes` and the last `tailBytes` stay in memory and the whole
 * stream (from byte 0) is written to a spill file under `spillDir`. `headBytes + tailBytes` must
 * not exceed `maxBytes`.
 */
export interface RetentionSpec {
  maxBytes: number
  headBytes: number
  tailBytes: number
  /** Directory for spill files; created if missing. Without it, output past the cap is dropped (head and tail still kept). */
  spillDir?: string
  /** File name prefix for spill files (default `output`). */
  spillPrefix?: string
  /**
   * Most bytes spilled into `spillDir` by every stream of this process that uses the same
   * directory (default 256 MiB); past it the file ends with a marker and `spillError` says so.
   */
  spillMaxBytes?: number
}

/**
 * What output to keep: `merged` keeps stdout and stderr as one stream in the order chunks arrived
 * at the parent; `separate` keeps one retention per stream; `none` keeps nothing (listeners still
 * see every chunk).
 */
export type RetentionMode = 'merged' | 'separate' | 'none'

/** How the child's environment is built. */
export interface EnvSpec {
  /**
   * `scrubbed` (default): the provider's own environment minus credential-looking variables, then
   * `set` on top. `exact`: only `set`.
   */
  base?: 'scrubbed' | 'exact'
  /** Variables the caller sets explicitly; trusted, never scrubbed. `undefined` removes a variable. */
  set?: Record<string, string | undefined>
}

/** Termination policy of a group. */
export interface KillSpec {
  /** Time between SIGTERM to the group and SIGKILL to the group. */
  graceMs: number
}

interface CommonSpawnSpec {
  /** Executable: an absolute path, or a name looked up on the child's PATH. */
  file: string
  args?: string[]
  /** Absolute working directory. Must exist. */
  cwd: string
  env?: EnvSpec
  kill: KillSpec
  /** Aborting terminates the group with the kill policy. */
  signal?: AbortSignal
  retention?: RetentionSpec
}

/**
 * A process started by someone other than the provider, on the provider's behalf: a sandbox's
 * spawn server that starts commands inside an already running confinement. What the provider
 * reads of it is the part of Node's ChildProcess below, plus how to reach the process group.
 */
export interface LaunchedChild {
  /** In the launcher's own PID namespace, so never signalled directly: use `reach`. */
  readonly pid?: number | undefined
  readonly stdin: NodeJS.WritableStream | null
  readonly stdout: NodeJS.ReadableStream | null
  readonly stderr: NodeJS.ReadableStream | null
  readonly reach: {
    /** True while the group may have a live member (false once the leader's exit was reported). */
    alive(): boolean
    signal(signal: 'SIGTERM' | 'SIGKILL' | 'SIGINT' | 'SIGHUP' | NodeJS.Signals): void
  }
  /** 'error' (with an errno-named `code`) when it could not start; 'exit' (code, signal) once; 'close' after the pipes closed. */
  on(event: 'error', listener: (error: NodeJS.ErrnoException) => void): this
  on(event: 'exit' | 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this
  once(event: 'error', listener: (error: NodeJS.ErrnoException) => void): this
  once(event: 'exit' | 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this
}

/**
 * Starts the command a spec stands for another way (see `SpawnSpec.launcher`). It already knows
 * the command, its working directory and whether stderr goes to stdout's pipe; it gets the
 * environment the provider built. Returns undefined (or throws) when it cannot, and the provider
 * then spawns `file` and `args` itself.
 */
export interface ProcessLauncher {
  launch(options: { env: Record<string, string>; stdinPipe: boolean }): LaunchedChild | undefined
}

/** A pipe-connected process group. */
export interface SpawnSpec extends CommonSpawnSpec {
  /**
   * A faster way to start the same command (a sandbox's spawn server). `file`/`args` stay the
   * full command line, used when the launcher cannot start it or the provider has no use for
   * launchers; `stderr` is then the launcher's business (it merges as its command line would).
   */
  launcher?: ProcessLauncher
  /** `ignore` (default): stdin is /dev/null. `pipe`: writable through the handle. */
  stdin?: 'ignore' | 'pipe'
  /**
   * `pipe` (default): stderr has its own pipe, chunks are tagged `stderr`. `stdout`: stderr is the
   * same pipe as stdout (like `2>&1`), so the two interleave in true write order; every chunk is
   * tagged `stdout` and `separate` retention is refused.
   */
  stderr?: 'pipe' | 'stdout'
  /** Default `merged`. */
  retentionMode?: RetentionMode
  /**
   * After the group leader exits, how long to keep reading pipes that descendants still hold open
   * before the rest of the group is terminated. Default 250 ms.
   */
  drainMs?: number
  /**
   * True (default): when the leader exits, any survivor in its process group is terminated with the
   * kill policy, so a finished call leaves nothing behind. False: survivors keep running and the
   * pipes are detached after `drainMs`.
   */
  reapGroup?: boolean
}

/** A process attached to a pseudo-terminal. */
export interface TerminalSpawnSpec extends CommonSpawnSpec {
  cols: number
  rows: number
  /** `TERM` of the child (default `xterm-256color`); overridden by `env.set.TERM`. */
  termName?: string
}

/** Bytes kept of one stream. */
export interface RetainedOutput {
  /** Total bytes the stream produced. */
  totalBytes: number
  /** True when bytes between `head` and `tail` are not in memory. */
  truncated: boolean
  /** When not truncated: the whole stream. When truncated: the first `headBytes`. */
  head: Uint8Array
  /** When truncated: the last `tailBytes`; otherwise empty. */
  tail: Uint8Array
  /** Spill file holding the whole stream, present once the stream passed `maxBytes` and a spill directory was given. */
  spillPath?: string
  /** Bytes currently held in memory for this stream. */
  retainedBytes: number
  /** Set when writing the spill file failed; the file is then incomplete. */
  spillError?: string
}

/** How a group ended. */
export interface ProcessExit {
  /** Exit code of the leader, or null when it died from a signal. */
  code: number | null
  /** Signal that ended the leader (`SIGTERM`, `SIGKILL`, ...), or null. */
  signal: string | null
  /** Why the provider signalled the group, if it did. */
  terminated?: 'aborted' | 'requested' | 'disposed'
  /** The strongest signal the provider sent to the group. */
  escalation?: 'SIGTERM' | 'SIGKILL'
  /** Retained output: `merged`/`terminal` or per stream, per the retention mode. */
  output: Partial<Record<'merged' | OutputStream, RetainedOutput>>
  /**
   * Set when the process could not be started at all (e.g. ENOENT); code and signal are then null.
   * `started`: it did start, and the provider lost it (a remote machine gone, or the connection to
   * it broken), so its exit status is unknown.
   */
  spawnError?: { code: string; message: string; started?: true }
}

interface CommonHandle {
  /** Process id of the group leader (also the process group id); undefined if spawning failed. */
  readonly pid: number | undefined
  /** Resolves once the leader has exited and the provider is done with the group. Never rejects. */
  readonly exited: Promise<ProcessExit>
  /** Every chunk in arrival order. Returns a disposer. Chunks before subscription are not replayed. */
  onOutput(listener: (chunk: OutputChunk) => void): () => void
  /** Sends `signal` (default SIGTERM) to the whole group. No-op once the group is gone. */
  signal(signal?: NodeJS.Signals): void
  /** TERM, grace, KILL of the whole group; resolves with the exit record. */
  terminate(): Promise<ProcessExit>
  /** Snapshot of what is retained so far (same shape as `ProcessExit.output`). */
  retained(): ProcessExit['output']
}

export interface ProcessHandle extends CommonHandle {
  /** Writes to stdin (only with `stdin: 'pipe'`). */
  write(data: string | Uint8Array): void
  /** Closes stdin (only with `stdin: 'pipe'`). */
  closeStdin(): void
}

export interface TerminalHandle extends CommonHandle {
  write(data: string): void
  resize(cols: number, rows: number): void
}

/** Credential scrubbing policy: glob-like patterns (`*` wildcard), matched case-insensitively against variable names. */
export interface ScrubPolicy {
  /** Names removed from an inherited environment. */
  deny: string[]
  /** Names kept even when a deny pattern matches. */
  allow: string[]
}

export class SubprocessError extends Error {
  constructor(
    readonly code: 'INVALID_SPEC' | 'SPAWN_FAILED' | 'DISPOSED',
    message: string,
  ) {
    super(message)
    this.name = 'SubprocessError'
  }
}
