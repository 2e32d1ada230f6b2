// @dsh/sandbox-local: the Linux provider of `ctx.sandbox`. It probes its candidate runners once
// (bubblewrap first, then Landlock through a small koffi helper), caches the first that works, and
// wraps each argv for it. A confining mode with no working runner throws: it never runs unconfined.
// The runners' argv: bwrap.ts and landlock.ts; the probe and its cache: probe.ts; spawn servers:
// servers.ts; request checks: policy.ts.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { SpawnedChild } from '@dsh/posix-spawn'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import {
  SandboxError,
  SandboxService,
  type SandboxInvocation,
  type SandboxRunnerInfo,
  type SandboxWrapRequest,
} from '@dsh/sandbox'
import type {} from '@dsh/sandbox-policy'
import type {} from '@dsh/home-paths'
import { bwrapFlags, serverPrefix } from './bwrap.ts'
import {
  LANDLOCK_CONTROL_NOTE,
  LANDLOCK_NOTE,
  NO_PID_NAMESPACE_NOTE,
  PID1_INIT,
  PID1_INIT_MERGED,
  PID_NAMESPACE_NOTE,
  type SandboxLocalConfig,
} from './constants.ts'
import { landlockPlan } from './landlock.ts'
import { checkRequest, refuseDanglingControlLinks, refuseWritableInsideProtected } from './policy.ts'
import {
  endProbes,
  probeBwrap,
  probeKey,
  probeLandlock,
  readProbeCache,
  runProbeChild,
  writeProbeCache,
  type Probe,
  type ProbeRun,
} from './probe.ts'
import { SpawnServerPool, captured } from './servers.ts'

export {
  LANDLOCK_CONTROL_NOTE,
  LANDLOCK_HELPER,
  LANDLOCK_NOTE,
  NO_PID_NAMESPACE_NOTE,
  PID1_INIT,
  PID1_INIT_MERGED,
  PID_NAMESPACE_NOTE,
  type RunnerChoice,
  type SandboxLocalConfig,
} from './constants.ts'
export { controlTargets, pinDirs, protectArgs } from './bwrap.ts'

export class LocalSandbox extends SandboxService {
  static Config: Schema<Partial<SandboxLocalConfig>, SandboxLocalConfig> = Schema.object({
    runner: Schema.union(['auto', 'bwrap', 'landlock', 'none'] as const)
      .default('auto')
      .description(
        '`auto` probes bwrap then Landlock; `bwrap` or `landlock` forces one (tests); `none` declares that no runner exists, so confining modes fail closed.',
      ),
    bwrap: Schema.string()
      .default('bwrap')
      .description('The bubblewrap executable: an absolute path or a name looked up on PATH.'),
    node: Schema.string().default(process.execPath).description('Node executable that runs the Landlock helper.'),
    unshare: Schema.string()
      .default('unshare')
      .description(
        'util-linux `unshare`, which gives Landlock commands their own PID, mount and (offline) network namespaces where permitted.',
      ),
    probeTimeoutMs: Schema.natural()
      .min(1)
      .default(5_000)
      .description('Time a runner probe may take before the runner counts as broken.'),
    prewarmDelayMs: Schema.natural()
      .default(50)
      .description(
        'After app/ready, how long the background probe waits before it starts; an app that stops sooner (`--help`, a usage error) never probes.',
      ),
    spawnServer: Schema.boolean()
      .default(true)
      .description(
        'Start commands through one long-lived confined spawn server per policy (inside a bwrap sandbox, or behind the Landlock helper) instead of a runner per command. Falls back to a runner per command where the server is not built.',
      ),
    maxSpawnServers: Schema.natural()
      .min(1)
      .default(4)
      .description(
        'Spawn servers (one per distinct policy) kept at once; the least recently used idle one is ended first.',
      ),
    probeCache: Schema.boolean()
      .default(true)
      .description(
        'Start from the last probe result stored in the dsh home (keyed by the runner binaries, kernel, uid and user-namespace settings) and verify it in the background, instead of waiting for a probe in every process.',
      ),
    probeVerifyIntervalMs: Schema.natural()
      .default(3_600_000)
      .description(
        'A stored probe result verified less than this long ago is used without a background probe (a spawn server that fails to start verifies it at once); 0 verifies in every process.',
      ),
  })

  private probe?: Promise<Probe>
  /** A stored result in use that no probe of this process has confirmed (verified recently elsewhere). */
  private unverified?: Probe
  /** The background probe scheduled on app/ready, until it starts or the app stops. */
  private prewarmTimer?: ReturnType<typeof setTimeout>
  /** Probe children still running; ended and awaited when the plugin unloads. */
  private readonly probing = new Set<SpawnedChild>()
  private disposed = false
  /** The spawn servers of this service (one per policy). */
  private readonly pool = new SpawnServerPool(
    () => this.config.maxSpawnServers ?? 4,
    () => {
      if (this.unverified) this.verifyCachedProbe(this.unverified)
    },
  )
  /** Servers (by key) whose start failed or that ended twice on their own, with why: those use the argv. */
  get failedServers(): ReadonlyMap<string, string> {
    return this.pool.failed
  }
  /** Why spawn servers are not used at all here (not built, not Linux), once known. */
  get spawnServerFallback(): string | undefined {
    return this.pool.fallback
  }
  /** Spawn servers running now (diagnostics and tests). */
  get spawnServers(): number {
    return this.pool.running
  }

  constructor(
    ctx: Context,
    readonly config: SandboxLocalConfig,
  ) {
    super(ctx)
    // Probe in the background shortly after the app is ready and only when the default mode
    // confines: the probe's wait then overlaps the start of the session instead of delaying the
    // first confined command. The mode is asked again when the timer fires: a surface that reads
    // its flags at app/ready (a one-shot's `--permission-mode danger-full-access`) has set the
    // process default by then, and an unconfined run never spawns the probe. The short delay also
    // keeps it off apps that stop at once (`--help`, a usage error), whose exit would otherwise
    // wait for the probe child. A wrap() before then probes at once. Outside an app, nothing
    // starts until a confining wrap() asks for it.
    const on = (ctx as unknown as { on(name: string, listener: () => void): () => void }).on.bind(ctx)
    const confinesByDefault = () => {
      const policy = this.ctx.get('sandboxPolicy')
      let mode: unknown
      try {
        mode = policy?.modeFor?.()
      } catch {}
      return mode === 'workspace-write' || mode === 'read-only'
    }
    on('app/ready', () => {
      if (!confinesByDefault()) return
      this.cancelPrewarm()
      this.prewarmTimer = setTimeout(() => {
        this.prewarmTimer = undefined
        if (confinesByDefault()) this.prewarm()
      }, this.config.prewarmDelayMs ?? 50)
      this.prewarmTimer.unref?.()
    })
    on('app/stopping', () => this.cancelPrewarm())
    ctx.effect(() => () => {
      this.disposed = true
      this.cancelPrewarm()
      this.pool.dispose()
      return endProbes(this.probing, this.config.probeTimeoutMs)
    })
  }

  /** Starts the probe now (what `app/ready` schedules when the default mode confines). */
  prewarm(): void {
    if (this.disposed) return
    void this.select().catch(() => {})
  }

  private cancelPrewarm(): void {
    if (this.prewarmTimer === undefined) return
    clearTimeout(this.prewarmTimer)
    this.prewarmTimer = undefined
  }

  async describe(): Promise<SandboxRunnerInfo> {
    const probe = await this.select()
    // Not stored in the probe (a cached probe from before this note would lack it).
    const notes =
      probe.selected?.runner === 'landlock' && !probe.selected.namespaces
        ? [...new Set([...probe.notes, LANDLOCK_CONTROL_NOTE])]
        : probe.notes
    return {
      ...(probe.selected ? { runner: probe.selected.runner } : {}),
      rejected: probe.rejected.map((entry) => ({ ...entry })),
      ...(notes.length > 0 ? { notes: [...notes] } : {}),
    }
  }

  async wrap(request: SandboxWrapRequest): Promise<SandboxInvocation> {
    checkRequest(request)
    const { argv, cwd, policy } = request
    const merge = request.mergeStderr === true
    const init = merge ? PID1_INIT_MERGED : PID1_INIT
    if (policy.mode === 'danger-full-access')
      return { argv: [...argv], runner: 'none', enforcement: 'none', mode: policy.mode, notes: [] }

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
    const readOnly = (policy.readOnlyPaths ?? []).filter((path) => path !== '/')
    const hidden = policy.hiddenPaths ?? []
    refuseWritableInsideProtected(writable, readOnly)
    // Where the runner protects the control files (Landlock only with a mount namespace of its own).
    if (selected.runner === 'bwrap' || selected.namespaces)
      refuseDanglingControlLinks(policy.controlPaths ?? [], writable)
    const useServer = this.config.spawnServer !== false && request.launcher !== false
    if (selected.runner === 'bwrap') {
      // --as-pid-1: the command itself is PID 1 of the new PID namespace. With bwrap's own reaper as
      // PID 1, the outer bwrap can exit while the reaper still lives, so the caller's process-group
      // reap found a live member and escalated (SIGTERM + polling) after most commands.
      const args = bwrapFlags(this.config.bwrap, policy, writable, readOnly, hidden, policy.controlPaths ?? [])
      // PID 1 of a namespace ignores every signal it has no handler for, so a bare command as
      // PID 1 would survive the caller's SIGTERM (a timeout or cancel would only land at the KILL
      // after the grace, and the command could keep going meanwhile). A tiny sh init takes PID 1:
      // it handles TERM/INT/HUP by signalling everything else in the namespace, and otherwise
      // passes the command's exit status through.
      // With mergeStderr the init also sends the command's stderr to its stdout, so the caller
      // spawns bwrap directly instead of behind an `sh -c 'exec ... 2>&1'` of its own.
      // The same confinement without a bwrap per command: a spawn server started once per distinct
      // set of flags (bwrap's own init as PID 1 reaps; the server is PID 2 and starts each
      // command). Everything but --as-pid-1 (the server is not PID 1) and the per-command --chdir
      // and command is the same flag list, so the confinement is the same.
      const prefix = serverPrefix(args)
      const launcher = !useServer
        ? undefined
        : await this.pool.launcherFor(
            { prefix, sweep: true, captured: captured([...writable, ...readOnly], []) },
            argv,
            cwd,
            merge,
          )
      args.push('--chdir', cwd, '--', '/bin/sh', '-c', init, 'dsh-sandbox-init', ...argv)
      return {
        argv: args,
        runner: 'bwrap',
        enforcement: 'enforced',
        mode: policy.mode,
        notes: [],
        ...(merge ? { stderrMerged: true } : {}),
        ...(launcher ? { launcher } : {}),
      }
    }
    const plan = landlockPlan({
      node: this.config.node,
      unshare: this.config.unshare,
      selected,
      policy,
      writable,
      readOnly,
      hidden,
      argv,
      init,
      merge,
    })
    const launcher = useServer ? await this.pool.launcherFor(plan.server, argv, cwd, merge) : undefined
    return {
      argv: plan.argv,
      runner: 'landlock',
      enforcement: 'enforced',
      mode: policy.mode,
      notes: plan.notes,
      ...(plan.stderrMerged ? { stderrMerged: true } : {}),
      ...(launcher ? { launcher } : {}),
    }
  }

  /**
   * Probes the candidate runners once per service instance; later calls reuse the result. With a
   * valid probe cache the stored result is used at once and a real probe verifies it in the
   * background (after `prewarmDelayMs`); a different answer replaces it for later commands.
   */
  private select(): Promise<Probe> {
    if (this.probe !== undefined) return this.probe
    const stored = this.readProbeCache()
    if (stored) {
      const cached = stored.probe
      this.probe = Promise.resolve(cached)
      if (cached.selected?.runner === 'landlock' && this.config.runner === 'auto') this.warnLandlock(cached)
      // Verified recently (by another process): trusted without a probe child of its own, unless
      // a spawn server then fails to start (see launcherFor). Otherwise verified in the background.
      const age = Date.now() - stored.verifiedAt
      if (age >= 0 && age < (this.config.probeVerifyIntervalMs ?? 3_600_000)) {
        this.unverified = cached
        return this.probe
      }
      const timer = setTimeout(() => this.verifyCachedProbe(cached), this.config.prewarmDelayMs ?? 50)
      timer.unref?.()
      return this.probe
    }
    return (this.probe = this.runProbe().then((probe) => {
      this.writeProbeCache(probe)
      return probe
    }))
  }

  /** Runs the real probe behind a cached result; a different answer replaces it (and the cache). */
  private verifyCachedProbe(cached: Probe): void {
    if (this.disposed) return
    this.unverified = undefined
    void this.runProbe()
      .then((fresh) => {
        if (this.disposed) return
        // Confirmed: stamped as verified now, so processes within the interval skip the probe.
        // With an interval of 0 nobody reads the stamp: no rewrite on every start.
        if (JSON.stringify(fresh) === JSON.stringify(cached)) {
          if ((this.config.probeVerifyIntervalMs ?? 3_600_000) > 0) this.writeProbeCache(fresh)
          return
        }
        this.writeProbeCache(fresh)
        this.ctx
          .logger('sandbox')
          .warn(
            'the stored sandbox probe result was out of date; commands from now on use the new one (%s)',
            fresh.selected?.runner ?? 'no runner',
          )
        this.probe = Promise.resolve(fresh)
        if (fresh.selected?.runner !== 'bwrap') this.pool.closeAll()
      })
      .catch(() => {})
  }

  /** `<dsh home>/.cache/sandbox-probe.json` when the app has a home service and the cache is on. */
  private probeCachePath(): string | undefined {
    if (this.config.probeCache === false) return undefined
    const home = this.ctx.get('homePaths')?.home
    return home ? join(home, '.cache', 'sandbox-probe.json') : undefined
  }

  /** What the stored probe result is keyed by (see probe.ts). */
  private probeKey(): string {
    return probeKey(this.config)
  }

  private readProbeCache(): { probe: Probe; verifiedAt: number } | undefined {
    const path = this.probeCachePath()
    return path ? readProbeCache(path, () => this.probeKey()) : undefined
  }

  private writeProbeCache(probe: Probe): void {
    const path = this.probeCachePath()
    if (path) writeProbeCache(path, () => this.probeKey(), probe)
  }

  private warnLandlock(probe: Probe): void {
    // Loud on purpose: the fallback confines less than bubblewrap would.
    this.ctx
      .logger('sandbox')
      .warn(
        'bubblewrap does not work here (%s), so commands are confined by the weaker Landlock fallback. %s',
        probe.rejected[0]?.reason ?? 'rejected',
        probe.notes.join(' '),
      )
  }

  private async runProbe(): Promise<Probe> {
    const rejected: Probe['rejected'] = []
    const choice = this.config.runner
    if (choice === 'none') return { rejected: [{ runner: 'none', reason: 'configured runner: none' }], notes: [] }
    if (process.platform !== 'linux')
      return {
        rejected: [{ runner: choice, reason: `sandbox-local supports Linux only (this is ${process.platform})` }],
        notes: [],
      }
    if (choice === 'auto' || choice === 'bwrap') {
      const failure = await probeBwrap(this.run, this.config.bwrap)
      if (!failure) return { selected: { runner: 'bwrap' }, rejected, notes: [] }
      rejected.push({ runner: 'bwrap', reason: failure })
    }
    if (choice === 'auto' || choice === 'landlock') {
      const result = await probeLandlock(this.run, this.config.node, this.config.unshare)
      if (typeof result !== 'string') {
        const notes = [LANDLOCK_NOTE, result.namespaces ? PID_NAMESPACE_NOTE : NO_PID_NAMESPACE_NOTE]
        const probe: Probe = { selected: { runner: 'landlock', ...result }, rejected, notes }
        if (choice === 'auto') this.warnLandlock(probe)
        return probe
      }
      rejected.push({ runner: 'landlock', reason: result })
    }
    this.ctx
      .logger('sandbox')
      .warn('no sandbox runner works: %s', rejected.map((entry) => `${entry.runner}: ${entry.reason}`).join('; '))
    return { rejected, notes: [] }
  }

  /** Runs a probe child; it is tracked so an unload can end and reap it. */
  private readonly run: ProbeRun = (file, args) => {
    if (this.disposed) return Promise.resolve({ code: null, output: 'the sandbox plugin was unloaded' })
    return runProbeChild(file, args, this.config.probeTimeoutMs, this.probing)
  }
}

export const name = 'sandbox-local'
export default LocalSandbox
