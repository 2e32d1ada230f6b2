// @dsh/sandbox: the `ctx.sandbox` seam. A provider turns an argv plus one resolved policy into the
// argv that runs it confined (`wrap`), says how strongly it is enforced, and reads a finished
// command's output for signs that the confinement refused something (`detectDenial`). Definition
// only: no I/O here; `@dsh/sandbox-local` is the Linux provider.
import type { ProcessLauncher } from '@dsh/subprocess'
import { type Context, Service } from 'cordis'
import { CodedError } from '@dsh/brand'

declare module 'cordis' {
  interface Context {
    sandbox: SandboxService
  }
}

/**
 * - `read-only`: the command may read everything and write nothing (except /dev/null-like devices).
 * - `workspace-write`: writes only under the workspace root and the temp dirs.
 * - `danger-full-access`: no confinement at all.
 */
export type SandboxMode = 'read-only' | 'workspace-write' | 'danger-full-access'
export const SANDBOX_MODES: readonly SandboxMode[] = ['read-only', 'workspace-write', 'danger-full-access']

export function isSandboxMode(value: unknown): value is SandboxMode {
  return typeof value === 'string' && (SANDBOX_MODES as readonly string[]).includes(value)
}

/** One resolved mode-and-root policy, as the policy owner hands it to an enforcing capability. */
export interface SandboxPolicy {
  mode: SandboxMode
  /** Absolute, symlink-resolved workspace root (the session's cwd). */
  workspaceRoot: string
  /** Absolute, symlink-resolved roots writable in `workspace-write` (the workspace root first, then temp dirs). Empty for the other modes. */
  writableRoots: string[]
  /** May the command open network sockets? Always true for `danger-full-access`. */
  network: boolean
  /**
   * Absolute paths that stay read-only in every confining mode, even when they lie under a
   * writable root: the dsh home (profiles, patch layers, the parsed-layer cache, sessions, spills).
   * A runner that cannot carve such a hole out of a writable tree must refuse to run.
   */
  readOnlyPaths?: string[]
  /** Absolute paths that must not be readable at all in a confining mode (credential files). */
  hiddenPaths?: string[]
  /**
   * Absolute paths of the project control files of the writable roots (see
   * `PROJECT_CONTROL_PATHS`): files that make dsh or git start programs. They stay read-only in
   * every confining mode. Unlike `readOnlyPaths`, an entry may not exist yet: a runner protects
   * the existing ones (it must not create the missing ones in the user's tree), and file edits
   * refuse to create or change any of them. A runner that cannot protect existing entries says so
   * in its notes instead of refusing to run.
   */
  controlPaths?: string[]
}

/**
 * The project control files, relative to a writable root: each one names programs that dsh (MCP
 * servers, hooks, credentials) or git (hooks, `core.fsmonitor`, filters, pagers) starts later,
 * outside any sandbox. Confined commands and file edits must not create or change them. The one
 * list every enforcing capability reads (through `SandboxPolicy.controlPaths`, which
 * `@dsh/sandbox-policy` resolves from it, the real git directory of a `.git` file included).
 */
export const PROJECT_CONTROL_PATHS: readonly string[] = [
  '.mcp.json',
  '.claude',
  '.codex',
  '.dsh',
  '.env',
  '.git/hooks',
  '.git/config',
]

/**
 * Inside a git directory (`.git`, the directory a `.git` file points to, its common directory and
 * each submodule's directory under `modules/`): the entries that make git start programs or say
 * where the rest of the repository lies.
 */
export const GIT_DIR_CONTROL_PATHS: readonly string[] = ['hooks', 'config', 'config.worktree', 'commondir']

export interface SandboxWrapRequest {
  /** The command to confine; `argv[0]` is an absolute path or a name looked up on PATH. */
  argv: string[]
  /** Absolute working directory of the command. */
  cwd: string
  policy: SandboxPolicy
  /**
   * The caller wants the command's stderr on its stdout (one ordered stream). A runner that can
   * do the redirection inside its own wrapper does it and sets `SandboxInvocation.stderrMerged`,
   * so the caller need not start an extra process for it; otherwise the caller merges itself.
   */
  mergeStderr?: boolean
  /**
   * False: the caller will run `argv` itself (a terminal runs it on a PTY), so a provider need not
   * prepare a `launcher` (sandbox-local would start a spawn server for it). Default true.
   */
  launcher?: boolean
}

/**
 * - `enforced`: the runner confines filesystem writes and (when the policy says so) network access.
 * - `partial`: filesystem writes are confined, but network confinement is weaker than asked (see `notes`).
 * - `none`: the command runs unconfined (only for `danger-full-access`).
 */
export type SandboxEnforcement = 'enforced' | 'partial' | 'none'

/** The argv to spawn instead of the original one, and optionally a faster way to start it. */
export interface SandboxInvocation {
  argv: string[]
  /** Name of the runner that confines it (`bwrap`, `landlock`), or `none`. */
  runner: string
  enforcement: SandboxEnforcement
  mode: SandboxMode
  /** Facts worth telling a consumer (e.g. "UDP is not confined by this runner"). */
  notes: string[]
  /** True when the argv itself sends the command's stderr to its stdout (see `mergeStderr`). */
  stderrMerged?: boolean
  /**
   * Starts the same command in the same confinement without running `argv`: a spawn server
   * already running inside a sandbox of this policy. Hand it to `ctx.subprocess.spawn` as
   * `launcher`; `argv` stays the fallback. It merges stderr exactly as `argv` would.
   */
  launcher?: ProcessLauncher
}

/** What a provider reports about itself. */
export interface SandboxRunnerInfo {
  /** Selected runner, or undefined when none works (confining modes then fail closed). */
  runner?: string
  /** Why each candidate was rejected, in probe order. */
  rejected: Array<{ runner: string; reason: string }>
  /** What the selected runner does not confine (worth telling the model and the user). */
  notes?: string[]
  /**
   * A provider whose confinement is not this machine's policy (a remote sandbox, where commands
   * and edits run on another machine) states it in this sentence; the policy announcement the
   * model sees then says it instead of the local writable roots and network.
   */
  confinement?: string
}

/** A finished command the consumer wants checked for sandbox refusals. */
export interface SandboxOutcome {
  exitCode: number | null
  /** The command's (merged) output text; only its ends need to be present. */
  output: string
  invocation: SandboxInvocation
}

export interface SandboxDenial {
  /** What was probably refused. */
  kind: 'filesystem' | 'network'
  /** The output line that gave it away. */
  evidence: string
}

export type SandboxErrorCode = 'SANDBOX_UNAVAILABLE' | 'INVALID_POLICY'

/** Thrown by `wrap` when a confining mode cannot be enforced: callers must not run the command. */
export class SandboxError extends CodedError<SandboxErrorCode> {
  override name = 'SandboxError'
}

export function isSandboxError(error: unknown): error is SandboxError {
  return (
    error instanceof SandboxError ||
    (error instanceof Error && error.name === 'SandboxError' && typeof (error as SandboxError).code === 'string')
  )
}

export abstract class SandboxService extends Service {
  constructor(ctx: Context) {
    super(ctx, 'sandbox')
  }

  /**
   * A provider whose confinement is not this machine's policy (a remote sandbox) states it here,
   * known without probing anything: the policy reads it in every mode, while `describe()` (which
   * may probe a local runner) is not asked in `danger-full-access`. Same sentence as
   * `SandboxRunnerInfo.confinement`.
   */
  readonly confinement?: string

  /** Probes (once) and reports the selected runner. */
  abstract describe(): Promise<SandboxRunnerInfo>

  /**
   * The argv that runs `request.argv` under `request.policy`. Never returns an unconfined argv for a
   * confining mode: throws `SandboxError('SANDBOX_UNAVAILABLE')` instead (fail closed).
   */
  abstract wrap(request: SandboxWrapRequest): Promise<SandboxInvocation>

  /** Heuristic: does the output of a failed confined command look like a sandbox refusal? */
  detectDenial(outcome: SandboxOutcome): SandboxDenial | undefined {
    return detectDenial(outcome)
  }
}

// Messages the C library and common tools print when the kernel refuses a write (EROFS from a
// read-only bind, EACCES/EPERM from Landlock, EBUSY from renaming or removing a protected mount
// point) or a socket (no network namespace route, seccomp).
const FILESYSTEM_SIGNS = [
  /read-only file system/i,
  /permission denied/i,
  /operation not permitted/i,
  /device or resource busy/i,
]
const NETWORK_SIGNS = [
  /network is unreachable/i,
  /could not resolve host/i,
  /temporary failure in name resolution/i,
  /name or service not known/i,
  /connection refused/i,
  /failed to connect/i,
  /ENETUNREACH|EAI_AGAIN|ECONNREFUSED/,
  /socket: operation not permitted/i,
]

/** Default denial heuristic shared by providers: only failed, confined commands are examined. */
export function detectDenial(outcome: SandboxOutcome): SandboxDenial | undefined {
  const { invocation } = outcome
  if (invocation.enforcement === 'none' || outcome.exitCode === 0) return undefined
  const lines = outcome.output.split('\n')
  // The network check runs first: "Operation not permitted" from a blocked socket() is a network refusal.
  if (invocation.mode !== 'danger-full-access') {
    for (const line of lines) {
      if (NETWORK_SIGNS.some((sign) => sign.test(line))) {
        if (/socket|connect|network|resolve|host|ENETUNREACH|EAI_AGAIN|ECONNREFUSED/i.test(line))
          return { kind: 'network', evidence: line.trim().slice(0, 300) }
      }
    }
  }
  for (const line of lines) {
    if (FILESYSTEM_SIGNS.some((sign) => sign.test(line)))
      return { kind: 'filesystem', evidence: line.trim().slice(0, 300) }
  }
  return undefined
}

/** One sentence describing a policy, for prompts and denial messages. */
export function describePolicy(policy: SandboxPolicy): string {
  switch (policy.mode) {
    case 'danger-full-access':
      return 'danger-full-access: commands and file edits run without a sandbox (full filesystem and network access).'
    case 'read-only':
      return `read-only: commands and file edits may read any file but write none${policy.network ? '; network access is allowed' : '; network access is off'}.`
    case 'workspace-write':
      return (
        `workspace-write: commands and file edits may write only under ${policy.writableRoots.join(', ')}` +
        `${policy.network ? '; network access is allowed' : '; network access is off'}` +
        `${(policy.controlPaths ?? []).length > 0 ? `; project control files (${PROJECT_CONTROL_PATHS.join(', ')}) stay read-only` : ''}.`
      )
  }
}

export const name = 'sandbox'
export default SandboxService
export * from './shell.ts'
export * from './fs.ts'
