// @dsh/fs-sandbox: `SandboxedFileSystem`, the host filesystem of @dsh/fs-local with a per-call mode
// fence. Every mutation (write, edit, remove, mkdir) is checked against the policy
// `ctx.sandboxPolicy` resolves for the call's session, after `..` and symlinks are resolved. The
// policy's protected paths (the dsh home) and the project control files (`.mcp.json`, `.claude/`,
// the git hooks and config...) are never created or changed in a confining mode, and its hidden
// paths (credential files) and the per-process entries of /proc (dsh's own environment and memory)
// are not read or listed either (sandbox-policy's `harnessReadRefusal`); other reads always pass.
// A change outside the writable roots may carry `sandboxEscalation` (the file tools' argument):
// then the user is asked, through `ctx.approval`, to allow exactly that path and operation once;
// control files and dsh's own files are never escalated. Everything else (atomic write, edit
// critical section, gates, events) is inherited.
import { AsyncLocalStorage } from 'node:async_hooks'
import { open } from 'node:fs/promises'
import { sep } from 'node:path'
import type { Context } from 'cordis'
import {
  FsError,
  type DirEntry,
  type EditResult,
  type EditTransform,
  type FsCallOptions,
  type ReadResult,
  type RemoveOptions,
  type WriteOptions,
  type WriteResult,
} from '@dsh/fs'
import { LocalFileSystem, type LocalFileSystemConfig } from '@dsh/fs-local'
import {
  describePolicy,
  PROJECT_CONTROL_PATHS,
  type SandboxEscalationRequest,
  type SandboxMode,
  type SandboxPolicy,
} from '@dsh/sandbox'
import { harnessReadRefusal, openedPath, realLocation } from '@dsh/sandbox-policy'
import type { ApprovalOutcome } from '@dsh/user-approval'

/** The shared resolution of a path's real location (sandbox-policy's); re-exported for callers of this package. */
export { realLocation }

/** Error code of a mutation the sandbox mode forbids. */
export const SANDBOX_DENIED = 'SANDBOX_DENIED'

export class SandboxedFileSystem extends LocalFileSystem {
  static inject = ['sandboxPolicy']
  static Config = LocalFileSystem.Config
  /** The policy of the `readFile` in progress, for the check on the opened descriptor (`readBytes`). */
  private readonly reading = new AsyncLocalStorage<SandboxPolicy>()

  constructor(ctx: Context, config: LocalFileSystemConfig) {
    super(ctx, config)
  }

  override async readFile(path: string, options: FsCallOptions = {}): Promise<ReadResult> {
    const abs = this.resolve(path)
    const policy = this.policyFor(options.session)
    // The harness reads for the model outside the sandbox: it must not hand over what a confined
    // command could not see (the credential files, dsh's environment and memory under /proc).
    const refusal = harnessReadRefusal(abs, policy)
    if (refusal !== undefined) throw new FsError(SANDBOX_DENIED, abs, `the sandbox refused to read ${abs}: ${refusal}.`)
    return this.reading.run(policy, () => super.readFile(path, options))
  }

  /**
   * Reads through a descriptor and checks what it really has open before a byte is read: a link
   * in the workspace swapped between the path check and the open (to `/proc/<dsh>/environ`, a
   * credential file) is refused as well.
   */
  protected override async readBytes(path: string, signal?: AbortSignal): Promise<Uint8Array> {
    const policy = this.reading.getStore()
    if (policy === undefined || policy.mode === 'danger-full-access') return super.readBytes(path, signal)
    const handle = await open(path, 'r')
    try {
      const opened = openedPath(handle.fd)
      const refusal = harnessReadRefusal(path, policy, opened !== undefined ? { opened } : {})
      if (refusal !== undefined)
        throw new FsError(SANDBOX_DENIED, path, `the sandbox refused to read ${path}: ${refusal}.`)
      const buffer = await handle.readFile(signal ? { signal } : {})
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
    } finally {
      await handle.close()
    }
  }

  override async list(path: string): Promise<DirEntry[]> {
    const abs = this.resolve(path)
    const refusal = harnessReadRefusal(abs, this.policyFor())
    if (refusal !== undefined) throw new FsError(SANDBOX_DENIED, abs, `the sandbox refused to list ${abs}: ${refusal}.`)
    return super.list(path)
  }

  override async writeFile(path: string, data: string | Uint8Array, options: WriteOptions = {}): Promise<WriteResult> {
    await this.fenceOrEscalate(path, 'write', options)
    return super.writeFile(path, data, options)
  }

  override async edit(path: string, transform: EditTransform, options: FsCallOptions = {}): Promise<EditResult> {
    await this.fenceOrEscalate(path, 'edit', options)
    return super.edit(path, transform, options)
  }

  override async remove(path: string, options: RemoveOptions = {}): Promise<void> {
    this.fence(path, 'remove', options, true)
    return super.remove(path, options)
  }

  override async mkdir(path: string, options: { recursive?: boolean; session?: string } = {}): Promise<void> {
    this.fence(path, 'create a directory at', options)
    return super.mkdir(path, options)
  }

  /** The policy a call of `session` is fenced by (the same resolution bash-sandbox uses). */
  policyFor(session?: string): SandboxPolicy {
    return this.ctx.sandboxPolicy.resolve(session !== undefined ? { sessionId: session } : {})
  }

  /** The session's mode: the capability the file tools detect before offering `sandbox_escalation`. */
  sandboxMode(sessionId?: string): SandboxMode {
    return this.policyFor(sessionId).mode
  }

  /**
   * The fence, plus the escalation path for a write or edit outside the writable roots that carries
   * `sandboxEscalation`: the user is asked to allow exactly this path and operation, and only an
   * allowed answer lets the change through. Control files and dsh's own files are refused before
   * anyone is asked.
   */
  private async fenceOrEscalate(
    path: string,
    verb: 'write' | 'edit',
    options: FsCallOptions & { sandboxEscalation?: SandboxEscalationRequest },
  ): Promise<void> {
    try {
      this.fence(path, verb, options)
      return
    } catch (error) {
      if (!(error instanceof OutsideWritableRoots) || options.sandboxEscalation === undefined) throw error
      const justification = options.sandboxEscalation?.justification
      if (typeof justification !== 'string' || justification.trim() === '')
        throw new FsError(
          'INVALID_ARGUMENT',
          error.path,
          'sandbox_escalation needs {"justification": "<why this file must change outside the sandbox>"}',
        )
      const outcome = await this.askEscalation(error.path, verb, justification.trim(), error.policy, options)
      if (outcome.decision === 'allowed-once' || outcome.decision === 'allowed-always') return
      throw new FsError(SANDBOX_DENIED, error.path, escalationRefusal(outcome, verb, error.path))
    }
  }

  private async askEscalation(
    abs: string,
    verb: 'write' | 'edit',
    justification: string,
    policy: SandboxPolicy,
    options: FsCallOptions,
  ): Promise<ApprovalOutcome> {
    const approval = this.ctx.get('approval')
    if (!approval) return { decision: 'unavailable', reason: 'no approval service is loaded, so nobody can approve it' }
    try {
      return await approval.request(
        {
          ...(options.session !== undefined ? { sessionId: options.session } : {}),
          ...(typeof options.callId === 'string' && options.callId !== '' ? { callId: options.callId } : {}),
          kind: 'write',
          title: `${verb === 'write' ? 'Write' : 'Edit'} ${abs} outside the sandbox's writable roots`,
          detail: `Reason given: ${justification}\nCurrent sandbox: ${describePolicy(policy)}`,
          action: { path: abs, operation: verb, sandbox: 'none' },
        },
        options.signal ? { signal: options.signal } : {},
      )
    } catch (error) {
      // A failing approval path fails closed.
      return { decision: 'unavailable', reason: `the approval request failed: ${(error as Error).message}` }
    }
  }

  /**
   * Throws `FsError(SANDBOX_DENIED)` unless the mode allows mutating `path`. The check uses the real
   * location: `..` is normalised and every existing component's symlinks are followed, so neither a
   * link inside the workspace nor a relative escape reaches outside it.
   */
  private fence(
    path: string,
    verb: string,
    options: { session?: string; sandboxEscalation?: SandboxEscalationRequest },
    removal = false,
  ): void {
    const abs = this.resolve(path)
    const policy = this.policyFor(options.session)
    if (policy.mode === 'danger-full-access') return
    const real = realLocation(abs)
    // A removal takes everything below the path with it: removing a directory that holds a
    // protected path (`.git`, a parent of the dsh home) is a change to that path.
    const touches = (entry: string) =>
      within(real ?? abs, entry) ||
      within(abs, entry) ||
      (removal && (within(entry, real ?? abs) || within(entry, abs)))
    // The project control files (sandbox-policy's one list): present or not, no edit creates or
    // changes them, since dsh or git would later start the programs they name.
    const control = (policy.controlPaths ?? []).find(touches)
    if (control !== undefined) {
      throw new FsError(
        SANDBOX_DENIED,
        abs,
        `the sandbox refused to ${verb} ${abs}: ${control === abs || within(abs, control) ? '' : `it holds ${control}, `}a project control file (${PROJECT_CONTROL_PATHS.join(', ')}) that makes dsh or git start programs, which stays read-only in ${policy.mode} mode. ` +
          'Ask the user to make this change, or to switch to danger-full-access.',
      )
    }
    // dsh's own home (profiles, patch layers, sessions, spills) stays read-only even under a writable root.
    const guarded = [...(policy.readOnlyPaths ?? []), ...(policy.hiddenPaths ?? [])].find(touches)
    if (guarded !== undefined) {
      throw new FsError(
        SANDBOX_DENIED,
        abs,
        `the sandbox refused to ${verb} ${abs}: it lies in ${guarded}, dsh's own configuration and sessions, which stay read-only in ${policy.mode} mode. ` +
          'Change files inside the workspace, or ask the user to make this change.',
      )
    }
    if (
      real !== undefined &&
      policy.mode === 'workspace-write' &&
      policy.writableRoots.some((root) => within(real, root))
    )
      return
    const where =
      real === undefined ? `${abs} (through a dangling symlink)` : real === abs ? abs : `${abs} (really ${real})`
    const allowed =
      policy.mode === 'read-only'
        ? 'no file may be changed'
        : `only files under ${policy.writableRoots.join(', ')} may be changed`
    const escalable = verb === 'write' || verb === 'edit'
    throw new OutsideWritableRoots(
      abs,
      policy,
      `the sandbox refused to ${verb} ${where}: the session is in ${policy.mode} mode, so ${allowed}. ` +
        `Policy: ${describePolicy(policy)} ` +
        (escalable && options.sandboxEscalation === undefined
          ? 'Change files inside the workspace; if this file really must change, repeat the call with "sandbox_escalation": {"justification": "<why>"} to ask the user.'
          : 'Change files inside the workspace, or ask the user to change the sandbox mode.'),
    )
  }
}

/** The refusal of a change outside the writable roots: the one kind of denial a user may lift for one call. */
class OutsideWritableRoots extends FsError {
  constructor(
    path: string,
    readonly policy: SandboxPolicy,
    message: string,
  ) {
    super(SANDBOX_DENIED, path, message)
  }
}

/** What the model reads when an escalation did not end in an allowed answer. */
function escalationRefusal(outcome: ApprovalOutcome, verb: string, abs: string): string {
  const why = outcome.reason ? ` (${outcome.reason})` : ''
  const said = outcome.message ? ` The user said: ${outcome.message}` : ''
  if (outcome.noHuman && outcome.decision !== 'cancelled')
    return `refused (no one to ask): changing ${abs} outside the sandbox needs a person's approval and nobody can be asked in this run${why}; nothing was written.`
  switch (outcome.decision) {
    case 'rejected':
      return `the user refused to let you ${verb} ${abs} outside the sandbox${why}; nothing was written. Change files inside the workspace or ask the user how to proceed.${said}`
    case 'cancelled':
      return `the approval request was cancelled${why}; nothing was written.`
    default:
      return `nobody could approve changing ${abs} outside the sandbox${why}; nothing was written.`
  }
}

function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep)
}

export const name = 'fs-sandbox'
export default SandboxedFileSystem
