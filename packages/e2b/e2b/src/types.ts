// The e2b world's shared types and constants: its config, the sandbox log event, what `finish()`
// reports, its error, and one place commands run (a slot).
import type { Sandbox } from 'e2b'
import type { SubagentLink } from '@dsh/subagent'

export const CREDENTIAL = 'E2B_API_KEY'

/**
 * dsh's own files inside the sandbox (upload archive, baseline repository, mirrored startup
 * files): in the sandbox user's home, a path of the remote machine, never of this one.
 */
export const REMOTE_STATE_DIR = '/home/user/.dsh-e2b'

export interface E2bConfig {
  /** Template (or alias) new sandboxes start from. */
  template: string
  /** Sandbox lifetime in ms; each use past half of it extends it again. */
  timeoutMs: number
  /** Metadata attached to every sandbox this run creates (the run adds `dsh: "1"`). */
  metadata: Record<string, string>
  /** E2B domain (default: the SDK's, `E2B_DOMAIN` or e2b.app). */
  domain?: string
  /** Control-plane URL (default: the SDK's, `E2B_API_URL` or derived from the domain). */
  apiUrl?: string
  /** Sandbox (envd) URL (default: the SDK's, `E2B_SANDBOX_URL` or per-sandbox hosts). */
  sandboxUrl?: string
  /** Timeout of one control-plane or envd request. */
  requestTimeoutMs: number
  /** Remote working directory; default: the same absolute path as the local working directory. */
  cwd?: string
  /** Retries of a control-plane call (create, connect, kill, pause) answered 429 or a 5xx (each waits twice as long). */
  retries: number
  /** First retry delay in ms. */
  retryDelayMs: number
  /** What ends with the run: `kill` every sandbox it created, `pause` them, or `keep` them running. */
  onExit: 'kill' | 'pause' | 'keep'
  /** When a sandbox is found gone (killed, expired): `recreate` one on next use, or `stop` (every later use fails). */
  onLost: 'recreate' | 'stop'
  /** Reconnect to this sandbox id instead of creating one (it is then not killed at the end). */
  sandboxId?: string
  /** The local working tree copied into a new sandbox's working directory before first use. */
  upload: {
    enabled: boolean
    /** Local directory uploaded (default: the process working directory). */
    from?: string
    /** Refuse (before any sandbox is created) a tree larger than this, in bytes of file content. */
    maxBytes: number
    /** More gitignore-style patterns to leave out (`.git` and credential files always are). */
    exclude: string[]
  }
  /**
   * A sandbox no call used for `afterMs` (and running no command) is paused (`pause`: resumed
   * through the SDK's connect on next use, files kept) or killed (`kill`: its change saved as a
   * patch first; the next use starts a new sandbox from the local tree). `afterMs: 0`: never.
   */
  idle: {
    afterMs: number
    action: 'pause' | 'kill'
  }
  /** At the end, the change a created sandbox made to its working directory, saved as a patch. */
  patch: {
    enabled: boolean
    /** Directory of saved patches (default: `$DSH_HOME/e2b-patches`). */
    dir?: string
  }
}

export interface SandboxLogEvent {
  sandboxId: string
  template: string
  action: 'created' | 'connected' | 'lost' | 'killed' | 'paused' | 'patched'
  reason?: string
  /** What the workspace upload brought (on `created`). */
  uploaded?: { files: number; bytes: number }
  /** Where the end-of-run patch was saved (on `patched`). */
  patch?: string
  /** The local folder the sandbox holds, when it is not the run's tree (a session's own cwd). */
  workspace?: string
}

/** What `finish()` reports: one line per sandbox change for the user, and whether an apply failed. */
export interface FinishReport {
  /** Sentences for stderr (no `dsh: ` prefix, no newline). */
  lines: string[]
  /** True when `apply` was asked and a patch did not apply (nothing of it was applied). */
  failed: boolean
  /** Each saved patch: the paths it touches and the local tree it applies to. */
  patches: Array<{ sandboxId: string; file: string; files: string[]; dir: string; applied?: boolean }>
  /** True when the app's stop interrupted a sandbox's preparation (its line is in `lines`). */
  interrupted: boolean
}

/** A failure of the e2b world, with a one-line message the model and the user can act on. */
export class E2bError extends Error {
  override name = 'E2bError'
  constructor(
    readonly code:
      | 'MISSING_KEY'
      | 'AUTH'
      | 'RATE_LIMIT'
      | 'UNAVAILABLE'
      | 'SANDBOX_LOST'
      | 'STOPPED'
      | 'UPLOAD_TOO_LARGE'
      | 'UPLOAD_FAILED'
      | 'INTERRUPTED',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/**
 * One place commands run: the run's own sandbox (`root`), or a subagent child's (a lease opened
 * through the subagent world "e2b"). Mutated in place (see `state`).
 */
export interface Slot {
  /** `root`, or the child's `parentSessionId/id`. */
  key: string
  /** The child's link, for a child's slot. */
  link?: SubagentLink
  /**
   * The local folder this slot's sandbox holds a copy of, at the same path (a session's cwd other
   * than the run's tree, and its children); undefined: the run's tree.
   */
  dir?: string
  current?: Promise<Sandbox>
  sandboxId?: string
  lastExtend: number
  /** `onLost: stop` after this slot's sandbox was lost. */
  stopped?: E2bError
  /** The root slot looked for a continued session's sandbox already (once per run). */
  resumeChecked?: boolean
  /** Remote commands running now (an idle sandbox is one with none and no call for `idle.afterMs`). */
  busy?: number
  /** The idle timer, armed after the last use. */
  idleTimer?: unknown
  /** The id of this slot's sandbox paused for idleness (the next use resumes it). */
  paused?: string
  /**
   * For the model, once: this slot's sandbox went away while idle (killed, or gone while paused),
   * so the files only it held are gone. Said in the next request of an agent in this slot.
   */
  idleNote?: string
  /** Sessions whose agent stepped in this slot since its last idle loss: each is told `idleNote`. */
  users?: Set<string>
  /** Sessions still to be told `idleNote`, once each (empty: the next agent to step in the slot). */
  idleFor?: Set<string>
}

/** The clock of the idle timer (replaceable: tests drive it without waiting). */
export interface IdleClock {
  setTimeout(fire: () => Promise<void>, ms: number): unknown
  clearTimeout(timer: unknown): void
}
