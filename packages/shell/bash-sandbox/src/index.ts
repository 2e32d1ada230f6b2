// @dsh/bash-sandbox: `ctx.shell` as `bash -c <command>` confined through `ctx.sandbox`, under the
// policy `ctx.sandboxPolicy` resolves for the call's session. Load it instead of @dsh/bash-local: it
// reuses bash-local's request checks and defaulting (`resolve`) and replaces only how the command
// starts. A refusal by the sandbox is told to the model (a spec note); an escalation request asks
// `ctx.approval` and, when allowed, runs that one command unconfined.
import { join } from 'node:path'
import type { Context } from 'cordis'
import { BashLocalExecutor, DEFAULT_SPILL_DIR, runShellProcess, type BashLocalConfig } from '@dsh/bash-local'
import { ShellError, type ShellRequest, type ShellResult, type ShellRunOptions, type ShellSpec } from '@dsh/shell'
import {
  describePolicy,
  isSandboxError,
  type SandboxInvocation,
  type SandboxMode,
  type SandboxPolicy,
  type SandboxedShellCapability,
  type ShellSandboxResult,
} from '@dsh/sandbox'
import type {} from '@dsh/sandbox-policy'
import type { ApprovalOutcome } from '@dsh/user-approval'
import type {} from '@dsh/tools'
import { plainService } from '@dsh/plain-service'

export { SANDBOX_ESCALATION_PARAMETER, isSandboxedShell } from '@dsh/sandbox'

export const EXECUTOR = 'bash-sandbox'

export type BashSandboxConfig = BashLocalConfig

export class SandboxedBashExecutor extends BashLocalExecutor implements SandboxedShellCapability {
  static inject = ['subprocess', 'sandbox', 'sandboxPolicy']
  static Config = BashLocalExecutor.Config

  private readonly settings: BashSandboxConfig

  /** Required injects as plain objects, read once (see `subprocess` in bash-local). */
  private readonly sandbox: Context['sandbox']
  private readonly policy: Context['sandboxPolicy']

  constructor(ctx: Context, config: BashSandboxConfig) {
    super(ctx, config)
    this.settings = config
    this.sandbox = plainService(ctx.sandbox)
    this.policy = plainService(ctx.sandboxPolicy)
    // The first step of each session readies the sandbox its commands will use (sandbox-local
    // starts the policy's spawn server) while the model request is in flight, so the session's
    // first command does not wait for a bwrap start. A wrap with nothing run: no command starts.
    const prepared = new WeakSet<object>()
    ctx.on('agent/pre-step', (payload, next) => {
      const session = payload.agent.session
      if (!prepared.has(session)) {
        prepared.add(session)
        void this.prepare(session.id, payload.agent.cwd).catch(() => {})
      }
      return next()
    })
  }

  /** Wraps a no-op under the policy `run()` will use for commands of `sessionId` in `cwd`. */
  private async prepare(sessionId: string, cwd: string): Promise<void> {
    const policy = this.policy.resolve({ sessionId, cwd })
    if (policy.mode === 'danger-full-access') return
    await this.sandbox.wrap({
      argv: [this.settings.bash, '-c', ':'],
      cwd,
      policy: this.confinedPolicy(policy),
      mergeStderr: true,
    })
  }

  /** The policy a confined command runs under: the spill dir stays out of the command's reach. */
  private confinedPolicy(policy: SandboxPolicy): SandboxPolicy {
    return policy.mode === 'danger-full-access'
      ? policy
      : { ...policy, readOnlyPaths: [...(policy.readOnlyPaths ?? []), this.spillBase()] }
  }

  /** The mode a call of `sessionId` runs under (the capability tool-bash detects). */
  sandboxMode(sessionId?: string): SandboxMode {
    return this.policy.modeFor(sessionId)
  }

  async resolve(request: ShellRequest): Promise<ShellSpec> {
    const spec = await super.resolve(request)
    const sessionId = request.sessionId ?? request.env?.DSH_SESSION_ID
    if (sessionId !== undefined && (typeof sessionId !== 'string' || sessionId === ''))
      throw new ShellError('INVALID_REQUEST', 'sessionId must be a non-empty string')
    const callId = request.callId
    if (callId !== undefined && (typeof callId !== 'string' || callId === ''))
      throw new ShellError('INVALID_REQUEST', 'callId must be a non-empty string')
    const escalation = request.sandboxEscalation
    if (escalation !== undefined) {
      if (
        escalation === null ||
        typeof escalation !== 'object' ||
        typeof escalation.justification !== 'string' ||
        escalation.justification.trim() === ''
      ) {
        throw new ShellError(
          'INVALID_REQUEST',
          'sandbox_escalation needs {"justification": "<why the command must run outside the sandbox>"}',
        )
      }
    }
    const policy = this.policy.resolve({ ...(sessionId !== undefined ? { sessionId } : {}), cwd: request.cwd })
    return {
      ...spec,
      executor: EXECUTOR,
      sandbox: {
        policy,
        ...(sessionId !== undefined ? { sessionId } : {}),
        ...(callId !== undefined ? { callId } : {}),
        ...(escalation !== undefined ? { escalation: { justification: escalation.justification.trim() } } : {}),
      },
    }
  }

  /**
   * Runs a resolved spec confined. Notes about the sandbox (a probable denial, an escalation
   * decision) are pushed onto `spec.notes`, which consumers render after the output.
   */
  async run(spec: ShellSpec, options: ShellRunOptions = {}): Promise<ShellResult> {
    if (spec?.executor !== EXECUTOR || !spec.sandbox) {
      throw new ShellError(
        'FOREIGN_SPEC',
        `bash-sandbox cannot run a spec resolved by ${JSON.stringify(spec?.executor)}; call ctx.shell.resolve() first`,
      )
    }
    const started = Date.now()
    if (options.signal?.aborted) return emptyResult('cancelled', 0)
    let policy: SandboxPolicy = spec.sandbox.policy
    let escalationFacts: ShellSandboxResult['escalation']

    if (spec.sandbox.escalation && policy.mode !== 'danger-full-access') {
      const outcome = await this.askEscalation(spec, options.signal)
      const allowed = outcome.decision === 'allowed-once' || outcome.decision === 'allowed-always'
      escalationFacts = {
        decision: outcome.decision,
        unconfined: allowed,
        ...(outcome.reason ? { reason: outcome.reason } : {}),
      }
      if (allowed) {
        policy = { mode: 'danger-full-access', workspaceRoot: policy.workspaceRoot, writableRoots: [], network: true }
        spec.notes.push('sandbox: the user approved running this command outside the sandbox (this once).')
        if (outcome.message) spec.notes.push(`sandbox: the user said: ${outcome.message}`)
      } else {
        const refusal = refusalSentence(outcome)
        spec.notes.push(`sandbox: ${refusal}`)
        const status = outcome.decision === 'cancelled' ? 'cancelled' : 'failed'
        const result = emptyResult(status, Date.now() - started)
        if (status === 'failed')
          result.error = { code: `ESCALATION_${outcome.decision.toUpperCase().replace('-', '_')}`, message: refusal }
        result.sandbox = {
          mode: spec.sandbox.policy.mode,
          runner: 'none',
          enforcement: 'none',
          escalation: escalationFacts,
        }
        return result
      }
    }

    // The harness writes long output unconfined; the spill dir must be out of the command's reach:
    // by default a per-session dir under the (read-only) dsh home, and always read-only inside.
    const spillDir = join(this.spillBase(), sessionSegment(spec.sandbox.sessionId))
    policy = this.confinedPolicy(policy)

    let invocation: SandboxInvocation
    try {
      invocation = await this.sandbox.wrap({
        argv: [this.settings.bash, '-c', spec.command],
        cwd: spec.cwd,
        policy,
        mergeStderr: true,
      })
    } catch (error) {
      if (!isSandboxError(error)) throw error
      const result = emptyResult('failed', Date.now() - started)
      result.error = { code: error.code, message: error.message }
      result.sandbox = {
        mode: policy.mode,
        runner: 'none',
        enforcement: 'none',
        ...(escalationFacts ? { escalation: escalationFacts } : {}),
      }
      return result
    }
    for (const note of invocation.notes) spec.notes.push(`sandbox: ${note}`)

    const result = await this.spawnInvocation(spec, invocation, options, started, spillDir)
    result.sandbox = {
      mode: invocation.mode,
      runner: invocation.runner,
      enforcement: invocation.enforcement,
      ...(escalationFacts ? { escalation: escalationFacts } : {}),
    }
    if (result.status === 'exited' || result.status === 'signaled') {
      const denial = this.sandbox.detectDenial({
        exitCode: result.exitCode,
        output: `${result.output.head}\n${result.output.tail}`,
        invocation,
      })
      if (denial) {
        result.sandbox.denial = denial
        spec.notes.push(this.denialNote(policy, invocation, denial.kind, denial.evidence))
      }
    }
    return result
  }

  private async askEscalation(spec: ShellSpec, signal: AbortSignal | undefined): Promise<ApprovalOutcome> {
    const approval = this.ctx.get('approval')
    if (!approval)
      return {
        decision: 'unavailable',
        reason: 'no approval service is loaded, so nobody can approve running outside the sandbox',
      }
    const sandbox = spec.sandbox!
    const oneLine = spec.command.length > 120 ? `${spec.command.slice(0, 117)}...` : spec.command
    try {
      return await approval.request(
        {
          ...(sandbox.sessionId !== undefined ? { sessionId: sandbox.sessionId } : {}),
          ...(sandbox.callId !== undefined ? { callId: sandbox.callId } : {}),
          kind: 'command',
          title: `Run \`${oneLine.replace(/\s+/g, ' ')}\` outside the sandbox`,
          detail: `Reason given: ${sandbox.escalation!.justification}\nCurrent sandbox: ${describePolicy(sandbox.policy)}\nWorking directory: ${spec.cwd}`,
          action: { command: spec.command, cwd: spec.cwd, sandbox: 'none' },
        },
        signal ? { signal } : {},
      )
    } catch (error) {
      // A failing approval path fails closed.
      return {
        decision: 'unavailable',
        reason: `the approval request failed (${error instanceof Error ? error.message : String(error)})`,
      }
    }
  }

  private denialNote(policy: SandboxPolicy, invocation: SandboxInvocation, kind: string, evidence: string): string {
    const what = kind === 'network' ? 'a network access' : 'a write'
    const tools = this.ctx.get('tools')
    const properties = tools?.get('bash')?.parameters?.properties as Record<string, unknown> | undefined
    const canEscalate = properties?.sandbox_escalation !== undefined
    const next = canEscalate
      ? 'If the command really needs it, call bash again with the same command and "sandbox_escalation": {"justification": "<why>"}; the user will be asked to approve it.'
      : 'Work inside the allowed directories, or ask the user to change the sandbox mode.'
    return `sandbox: this command ran in the ${policy.mode} sandbox (${invocation.runner}) and ${what} was probably blocked ("${evidence}"). Policy: ${describePolicy(policy)} ${next}`
  }

  /** The configured spill dir, or (when left at bash-local's shared temp default) `<dsh home>/shell-output`. */
  private spillBase(): string {
    if (this.settings.spillDir !== DEFAULT_SPILL_DIR) return this.settings.spillDir
    // Resolved once: the home is fixed for the process, and resolving it walked the real paths of
    // the home and every layer file for each command, unconfined ones included.
    return (this.homeSpillBase ??= join(this.policy.protectedPaths().readOnlyPaths[0], 'shell-output'))
  }

  private homeSpillBase: string | undefined

  private async spawnInvocation(
    spec: ShellSpec,
    invocation: SandboxInvocation,
    options: ShellRunOptions,
    started: number,
    spillDir: string,
  ): Promise<ShellResult> {
    const [file, ...args] = invocation.argv
    // When the runner's wrapper already sends the command's stderr to its stdout, the runner is
    // spawned directly (stderr: its own pipe, only the runner's own messages); an unconfined
    // command is bash itself, which merges through its startup file; else the spawn merges.
    const stderr = invocation.stderrMerged
      ? 'pipe'
      : invocation.runner === 'none' && file === this.settings.bash && args[0] === '-c'
        ? 'bash'
        : 'stdout'
    const launcher = invocation.launcher
    return runShellProcess(this.subprocess, {
      file,
      args,
      spec,
      settings: { ...this.settings, spillDir },
      options,
      started,
      stderr,
      mergeStartup: this.mergeStartup,
      ...(launcher ? { launcher } : {}),
    })
  }
}

function refusalSentence(outcome: ApprovalOutcome): string {
  const why = outcome.reason ? ` (${outcome.reason})` : ''
  const said = outcome.message ? ` The user said: ${outcome.message}` : ''
  if (outcome.noHuman && outcome.decision !== 'cancelled')
    return `refused (no one to ask): running this command outside the sandbox needs a person's approval and nobody can be asked in this run${why}; it was not run. Find a way that works inside the sandbox.`
  switch (outcome.decision) {
    case 'rejected':
      return `the user refused to run this command outside the sandbox${why}; it was not run. Find a way that works inside the sandbox or ask the user how to proceed.${said}`
    case 'cancelled':
      return `the approval request was cancelled${why}; the command was not run.`
    default:
      return `nobody could approve running this command outside the sandbox${why}; it was not run.`
  }
}

/** The session id as one safe path segment. */
function sessionSegment(sessionId: string | undefined): string {
  const cleaned = (sessionId ?? '').replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 120)
  return cleaned === '' || /^\.+$/.test(cleaned) ? '_no-session' : cleaned
}

function emptyResult(status: ShellResult['status'], durationMs: number): ShellResult {
  return {
    status,
    exitCode: null,
    signal: null,
    output: { head: '', tail: '', totalBytes: 0, truncated: false, omittedBytes: 0 },
    durationMs,
  }
}

export const name = 'bash-sandbox'
export default SandboxedBashExecutor
