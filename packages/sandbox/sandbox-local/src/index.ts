// @dsh/sandbox-local: the Linux provider of `ctx.sandbox`. It probes its candidate runners once
// (bubblewrap first, then Landlock through a small koffi helper), caches the first that works, and
// wraps each argv for it. A confining mode with no working runner throws: it never runs unconfined.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { isAbsolute } from 'node:path'
import { Context } from 'cordis'
import Schema from 'schemastery'
import { SandboxError, SandboxService, isSandboxMode, type SandboxInvocation, type SandboxPolicy, type SandboxRunnerInfo, type SandboxWrapRequest } from '@dsh/sandbox'

/** PID 1 inside bwrap: forwards termination signals to the command's whole namespace. */
export const PID1_INIT = [
  'trap \'kill -TERM -1 2>/dev/null; exit 143\' TERM',
  'trap \'kill -INT -1 2>/dev/null; exit 130\' INT',
  'trap \'kill -HUP -1 2>/dev/null; exit 129\' HUP',
  '"$@" <&0 &',
  'wait $!',
].join('\n')

export type RunnerChoice = 'auto' | 'bwrap' | 'landlock' | 'none'

export interface SandboxLocalConfig {
  runner: RunnerChoice
  bwrap: string
  node: string
  probeTimeoutMs: number
}

/** The Landlock launcher script (plain JavaScript, run by `config.node`). */
export const LANDLOCK_HELPER = fileURLToPath(new URL('../helper/landlock-exec.mjs', import.meta.url))

interface Selected {
  runner: 'bwrap' | 'landlock'
  /** Landlock only: can the helper turn the network off (seccomp filter for this architecture)? */
  seccomp?: boolean
  abi?: number
}

interface Probe {
  selected?: Selected
  rejected: Array<{ runner: string; reason: string }>
}

export class LocalSandbox extends SandboxService {
  static Config: Schema<Partial<SandboxLocalConfig>, SandboxLocalConfig> = Schema.object({
    runner: Schema.union(['auto', 'bwrap', 'landlock', 'none'] as const)
      .default('auto')
      .description('`auto` probes bwrap then Landlock; `bwrap` or `landlock` forces one (tests); `none` declares that no runner exists, so confining modes fail closed.'),
    bwrap: Schema.string().default('bwrap').description('The bubblewrap executable: an absolute path or a name looked up on PATH.'),
    node: Schema.string().default(process.execPath).description('Node executable that runs the Landlock helper.'),
    probeTimeoutMs: Schema.natural().min(1).default(5_000).description('Time a runner probe may take before the runner counts as broken.'),
  })

  private probe?: Promise<Probe>

  constructor(
    ctx: Context,
    readonly config: SandboxLocalConfig,
  ) {
    super(ctx)
    // Probe in the background from the start: the probe is a child process, so its wait overlaps
    // the rest of the boot instead of delaying the first confined command.
    setImmediate(() => void this.select().catch(() => {}))
  }

  async describe(): Promise<SandboxRunnerInfo> {
    const probe = await this.select()
    return { ...(probe.selected ? { runner: probe.selected.runner } : {}), rejected: probe.rejected.map((entry) => ({ ...entry })) }
  }

  async wrap(request: SandboxWrapRequest): Promise<SandboxInvocation> {
    const { argv, cwd, policy } = request
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((arg) => typeof arg === 'string')) throw new SandboxError('INVALID_POLICY', 'argv must be a non-empty array of strings')
    if (typeof cwd !== 'string' || !isAbsolute(cwd)) throw new SandboxError('INVALID_POLICY', 'cwd must be an absolute path')
    checkPolicy(policy)
    if (policy.mode === 'danger-full-access') return { argv: [...argv], runner: 'none', enforcement: 'none', mode: policy.mode, notes: [] }

    const probe = await this.select()
    const selected = probe.selected
    if (!selected) {
      const why = probe.rejected.map((entry) => `${entry.runner}: ${entry.reason}`).join('; ')
      throw new SandboxError(
        'SANDBOX_UNAVAILABLE',
        `no working sandbox runner, so the ${policy.mode} sandbox cannot be enforced and the command was not run (${why}). ` +
          'Install bubblewrap or use a kernel with Landlock, or switch to danger-full-access deliberately.',
      )
    }
    const writable = policy.mode === 'workspace-write' ? policy.writableRoots.filter((root) => existsSync(root)) : []
    if (selected.runner === 'bwrap') {
      // --as-pid-1: the command itself is PID 1 of the new PID namespace. With bwrap's own reaper as
      // PID 1, the outer bwrap can exit while the reaper still lives, so the caller's process-group
      // reap found a live member and escalated (SIGTERM + polling) after most commands.
      const args = [this.config.bwrap, '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-pid', '--as-pid-1', '--die-with-parent']
      // As root, bwrap keeps every capability inside the sandbox, enough to remount `/` writable.
      args.push('--cap-drop', 'ALL')
      if (!policy.network) args.push('--unshare-net')
      for (const root of writable) args.push('--bind', root, root)
      // PID 1 of a namespace ignores every signal it has no handler for, so a bare command as
      // PID 1 would survive the caller's SIGTERM (a timeout or cancel would only land at the KILL
      // after the grace, and the command could keep going meanwhile). A tiny sh init takes PID 1:
      // it handles TERM/INT/HUP by signalling everything else in the namespace, and otherwise
      // passes the command's exit status through.
      args.push('--chdir', cwd, '--', '/bin/sh', '-c', PID1_INIT, 'dsh-sandbox-init', ...argv)
      return { argv: args, runner: 'bwrap', enforcement: 'enforced', mode: policy.mode, notes: [] }
    }
    if (!policy.network && !selected.seccomp) {
      throw new SandboxError('SANDBOX_UNAVAILABLE', `the Landlock runner cannot turn the network off on ${process.arch} (no seccomp filter for it), so the command was not run`)
    }
    const spec = Buffer.from(JSON.stringify({ writable, network: policy.network })).toString('base64')
    const notes = policy.network ? [] : ['network: IPv4/IPv6 sockets are refused; Unix-domain sockets on the filesystem stay reachable']
    return { argv: [this.config.node, LANDLOCK_HELPER, spec, '--', ...argv], runner: 'landlock', enforcement: 'enforced', mode: policy.mode, notes }
  }

  /** Probes the candidate runners once per service instance; later calls reuse the result. */
  private select(): Promise<Probe> {
    return (this.probe ??= this.runProbe())
  }

  private async runProbe(): Promise<Probe> {
    const rejected: Probe['rejected'] = []
    const choice = this.config.runner
    if (choice === 'none') return { rejected: [{ runner: 'none', reason: 'configured runner: none' }] }
    if (process.platform !== 'linux') return { rejected: [{ runner: choice, reason: `sandbox-local supports Linux only (this is ${process.platform})` }] }
    if (choice === 'auto' || choice === 'bwrap') {
      const failure = await this.probeBwrap()
      if (!failure) return { selected: { runner: 'bwrap' }, rejected }
      rejected.push({ runner: 'bwrap', reason: failure })
    }
    if (choice === 'auto' || choice === 'landlock') {
      const result = await this.probeLandlock()
      if (typeof result !== 'string') return { selected: { runner: 'landlock', ...result }, rejected }
      rejected.push({ runner: 'landlock', reason: result })
    }
    this.ctx.logger('sandbox').warn('no sandbox runner works: %s', rejected.map((entry) => `${entry.runner}: ${entry.reason}`).join('; '))
    return { rejected }
  }

  /** Undefined when a minimal confined `true` runs; else why not. */
  private async probeBwrap(): Promise<string | undefined> {
    const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-pid', '--die-with-parent', '--cap-drop', 'ALL', '--unshare-net', '--', 'true']
    const { code, output } = await run(this.config.bwrap, args, this.config.probeTimeoutMs)
    if (code === 0) return undefined
    return `${this.config.bwrap} ${code === null ? 'could not run' : `exited ${code}`}${output ? `: ${output.trim().split('\n')[0]}` : ''}`
  }

  private async probeLandlock(): Promise<{ abi: number; seccomp: boolean } | string> {
    const { code, output } = await run(this.config.node, [LANDLOCK_HELPER, '--probe'], this.config.probeTimeoutMs)
    if (code !== 0) return `the Landlock helper failed${output ? `: ${output.trim().split('\n')[0]}` : ''}`
    try {
      const facts = JSON.parse(output) as { abi: number; seccomp: boolean }
      if (!(facts.abi >= 1)) return 'Landlock is not enabled in this kernel'
      return { abi: facts.abi, seccomp: facts.seccomp === true }
    } catch {
      return `unexpected probe output ${JSON.stringify(output.slice(0, 100))}`
    }
  }
}

function checkPolicy(policy: SandboxPolicy): void {
  if (policy === null || typeof policy !== 'object') throw new SandboxError('INVALID_POLICY', 'policy must be an object')
  if (!isSandboxMode(policy.mode)) throw new SandboxError('INVALID_POLICY', `unknown sandbox mode ${JSON.stringify(policy.mode)}`)
  if (typeof policy.network !== 'boolean') throw new SandboxError('INVALID_POLICY', 'policy.network must be a boolean')
  if (!Array.isArray(policy.writableRoots) || !policy.writableRoots.every((root) => typeof root === 'string' && isAbsolute(root))) {
    throw new SandboxError('INVALID_POLICY', 'policy.writableRoots must be absolute paths')
  }
  if (policy.writableRoots.includes('/')) throw new SandboxError('INVALID_POLICY', 'a writable root of / is danger-full-access; say so with the mode')
}

function run(file: string, args: string[], timeout: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (!error) return resolve({ code: 0, output: stdout })
      const code = typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : null
      resolve({ code, output: `${stderr || ''}${stdout || ''}` || error.message })
    })
  })
}

export const name = 'sandbox-local'
export default LocalSandbox
