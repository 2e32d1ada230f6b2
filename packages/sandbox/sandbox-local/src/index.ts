// @dsh/sandbox-local: the Linux provider of `ctx.sandbox`. It probes its candidate runners once
// (bubblewrap first, then Landlock through a small koffi helper), caches the first that works, and
// wraps each argv for it. A confining mode with no working runner throws: it never runs unconfined.
import { execFile } from 'node:child_process'
import { SpawnServer, nativeSpawn, spawnServerUnavailable, type SpawnedChild } from '@dsh/posix-spawn'
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { release, version } from 'node:os'
import { fileURLToPath } from 'node:url'
import { dirname, isAbsolute, join, sep } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { LaunchedChild, ProcessLauncher } from '@dsh/subprocess'
import {
  SandboxError,
  SandboxService,
  isSandboxMode,
  type SandboxInvocation,
  type SandboxPolicy,
  type SandboxRunnerInfo,
  type SandboxWrapRequest,
} from '@dsh/sandbox'
import type {} from '@dsh/sandbox-policy'
import type {} from '@dsh/home-paths'

/** PID 1 inside bwrap: forwards termination signals to the command's whole namespace. */
export const PID1_INIT = [
  "trap 'kill -TERM -1 2>/dev/null; exit 143' TERM",
  "trap 'kill -INT -1 2>/dev/null; exit 130' INT",
  "trap 'kill -HUP -1 2>/dev/null; exit 129' HUP",
  // An asynchronous list gets /dev/null as stdin before its own redirections, so the caller's
  // stdin (a PTY for an interactive program) is passed through fd 3.
  '{ "$@" <&3 3<&- & } 3<&0',
  'wait $!',
].join('\n')

/** PID1_INIT for a request with `mergeStderr`: the command's stderr goes to its stdout, done by the init itself. */
export const PID1_INIT_MERGED = PID1_INIT.replace('"$@" <&3 3<&- &', '"$@" <&3 3<&- 2>&1 &')

export type RunnerChoice = 'auto' | 'bwrap' | 'landlock' | 'none'

export interface SandboxLocalConfig {
  runner: RunnerChoice
  bwrap: string
  node: string
  unshare: string
  probeTimeoutMs: number
  /** Default 50. */
  prewarmDelayMs?: number
  /** Default true: commands start through a confined spawn server per policy, for both runners (see README). */
  spawnServer?: boolean
  /** Default 4: spawn servers (one per distinct policy) kept running at once. */
  maxSpawnServers?: number
  /** Default true: reuse the last probe's result from `<dsh home>/.cache/sandbox-probe.json` (see README). */
  probeCache?: boolean
  /** Default 3,600,000 (1 h): a stored result verified more recently is not probed again (0: every process verifies). */
  probeVerifyIntervalMs?: number
}

/** The Landlock launcher script (plain JavaScript, run by `config.node`). */
export const LANDLOCK_HELPER = fileURLToPath(new URL('../helper/landlock-exec.mjs', import.meta.url))

interface Selected {
  runner: 'bwrap' | 'landlock'
  /** Landlock only: can the helper turn the network off (seccomp filter for this architecture)? */
  seccomp?: boolean
  abi?: number
  /** Landlock only: may `unshare` give each command its own PID and mount namespace (and net when offline)? */
  namespaces?: boolean
}

interface Probe {
  selected?: Selected
  rejected: Array<{ runner: string; reason: string }>
  notes: string[]
}

/** What the Landlock runner does not confine; stated to the model with the policy. */
export const LANDLOCK_NOTE =
  'This sandbox is the Landlock fallback (bubblewrap does not work here): commands run without capabilities and cannot gain privileges; Unix-domain sockets on the filesystem stay reachable.'
/** What the Landlock runner cannot do for the project control files (stated with the policy). */
export const LANDLOCK_CONTROL_NOTE =
  'Without a mount namespace of its own Landlock cannot keep part of a writable directory read-only, so the project control files of the workspace (.mcp.json, .claude/, .codex/, .dsh/, .env, .git/hooks, .git/config) stay writable for commands here; file edits still refuse them.'
/** Added when `unshare` gives each Landlock command its own PID and mount namespace. */
export const PID_NAMESPACE_NOTE =
  'Each command has its own process namespace: processes it leaves running end when it finishes.'
/** Added when the Landlock runner cannot give each command its own PID namespace. */
export const NO_PID_NAMESPACE_NOTE =
  "Commands see the host's other processes, and processes a command leaves running (for example with setsid or nohup) are not ended when it finishes."

/** `name` looked up on this process's PATH, or undefined. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (!dir) continue
    const path = join(dir, name)
    try {
      if (statSync(path).isFile()) return path
    } catch {}
  }
  return undefined
}

/** A stored probe result of the right shape (a file in the home could be damaged or old). */
function isProbe(value: unknown): value is Probe {
  if (value === null || typeof value !== 'object') return false
  const probe = value as Probe
  if (
    !Array.isArray(probe.rejected) ||
    !Array.isArray(probe.notes) ||
    !probe.notes.every((note) => typeof note === 'string')
  )
    return false
  if (
    !probe.rejected.every(
      (entry) =>
        entry !== null &&
        typeof entry === 'object' &&
        typeof entry.runner === 'string' &&
        typeof entry.reason === 'string',
    )
  )
    return false
  if (probe.selected === undefined) return true
  const selected = probe.selected as Selected | null
  if (selected === null || typeof selected !== 'object') return false
  if (selected.runner === 'bwrap') return true
  return (
    selected.runner === 'landlock' &&
    typeof selected.abi === 'number' &&
    typeof selected.seccomp === 'boolean' &&
    typeof selected.namespaces === 'boolean'
  )
}

/** How to start a policy's spawn server, and what its confinement captured when it started. */
interface ServerStart {
  /** What runs in front of the server (`bwrap <flags> --`, or `[unshare ... --] node helper <spec> --`). */
  prefix: string[]
  /** Only where the prefix gives the server a PID namespace of its own. */
  sweep: boolean
  /** `captured()` of the paths the prefix binds or grants by inode. */
  captured: string
}

/**
 * What a server's confinement took from the filesystem when it started: bind mounts and Landlock
 * rules hold the inode a path named then, and Landlock's hidden-path rules list the entries of
 * the directories on the way. A path replaced since (a workspace deleted and made again) or a
 * directory whose entries changed needs a new server, as a runner per command would see the new
 * state. Cheap: one stat per path.
 */
function captured(paths: readonly string[], listed: readonly string[]): string {
  const identity = (path: string, withTime: boolean): string => {
    try {
      const st = statSync(path, { bigint: true })
      // The birth time tells a new directory from an old one that had the same inode number.
      return `${st.dev}:${st.ino}:${st.birthtimeNs}${withTime ? `:${st.mtimeNs}` : ''}`
    } catch {
      return '-'
    }
  }
  return [...paths.map((path) => identity(path, false)), ...listed.map((dir) => identity(dir, true))].join(',')
}

/** The directories the Landlock helper lists to hide `hidden` (see addReadRules in the helper). */
function hiddenAncestors(hidden: readonly string[]): string[] {
  const dirs = new Set<string>()
  for (const path of hidden)
    for (let dir = dirname(path); ; dir = dirname(dir)) {
      dirs.add(dir)
      if (dir === dirname(dir)) break
    }
  return [...dirs].sort()
}

/** A spawn server's bwrap prefix from a command's flags: the same flags without --as-pid-1 (bwrap's init is PID 1, the server PID 2). */
function serverPrefix(flags: string[]): string[] {
  return [...flags.filter((arg) => arg !== '--as-pid-1'), '--']
}

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
  /** Running spawn servers by their bwrap prefix, least recently used first. */
  private readonly servers = new Map<string, SpawnServer>()
  /** Servers (by key) whose start failed or that ended twice on their own, with why: those use the argv. */
  readonly failedServers = new Map<string, string>()
  /** How often each key's server ended on its own. */
  private readonly serverEnds = new Map<string, number>()
  /** Why spawn servers are not used at all here (not built, not Linux), once known. */
  spawnServerFallback: string | undefined
  private serversChecked = false

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
      for (const server of this.servers.values()) server.close()
      this.servers.clear()
      return this.endProbes()
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

  /**
   * Waits for probe children still running, so none outlives dsh as an orphan (a container's PID 1
   * often never reaps). A probe is a `true` and normally ends at once; killing bwrap early would
   * orphan its inner child, so a kill only follows a grace of up to 2 s.
   */
  private async endProbes(): Promise<void> {
    const grace = Math.min(this.config.probeTimeoutMs, 2_000)
    await Promise.all(
      [...this.probing].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve()
            const timer = setTimeout(() => child.kill('SIGKILL'), grace)
            child.once('close', () => {
              clearTimeout(timer)
              resolve()
            })
          }),
      ),
    )
  }

  async wrap(request: SandboxWrapRequest): Promise<SandboxInvocation> {
    const { argv, cwd, policy } = request
    const merge = request.mergeStderr === true
    const init = merge ? PID1_INIT_MERGED : PID1_INIT
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((arg) => typeof arg === 'string'))
      throw new SandboxError('INVALID_POLICY', 'argv must be a non-empty array of strings')
    if (typeof cwd !== 'string' || !isAbsolute(cwd))
      throw new SandboxError('INVALID_POLICY', 'cwd must be an absolute path')
    checkPolicy(policy)
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
    // A writable root inside a protected path (the workspace inside the dsh home) would let a
    // command rewrite dsh's own configuration; no runner can make that safe.
    for (const path of readOnly) {
      const root = writable.find((candidate) => within(candidate, path))
      if (root !== undefined) {
        throw new SandboxError(
          'SANDBOX_UNAVAILABLE',
          `the writable root ${root} lies inside ${path}, which must stay read-only for confined commands (the dsh home or a configured read-only path), so the command was not run; start dsh in a directory outside ${path} or move DSH_HOME`,
        )
      }
    }
    if (selected.runner === 'bwrap') {
      // --as-pid-1: the command itself is PID 1 of the new PID namespace. With bwrap's own reaper as
      // PID 1, the outer bwrap can exit while the reaper still lives, so the caller's process-group
      // reap found a live member and escalated (SIGTERM + polling) after most commands.
      const args = this.bwrapFlags(policy, writable, readOnly, hidden, policy.controlPaths ?? [])
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
      const launcher =
        this.config.spawnServer === false || request.launcher === false
          ? undefined
          : await this.launcherFor(
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
    if (!policy.network && !selected.seccomp) {
      throw new SandboxError(
        'SANDBOX_UNAVAILABLE',
        `the Landlock runner cannot turn the network off on ${process.arch} (no seccomp filter for it), so the command was not run`,
      )
    }
    // Landlock only adds rights: a read-only or unreadable hole inside a writable tree cannot be made.
    for (const path of [...readOnly, ...hidden]) {
      const root = writable.find((candidate) => within(path, candidate))
      if (root !== undefined) {
        throw new SandboxError(
          'SANDBOX_UNAVAILABLE',
          `the Landlock runner cannot protect ${path} inside the writable root ${root} (a confined command could rewrite dsh's configuration or read its credentials), so the command was not run; move DSH_HOME outside ${root} or install bubblewrap`,
        )
      }
    }
    // Landlock only adds rights. In a mount namespace of its own (namespaces, as root) the helper
    // binds the existing control files read-only before Landlock, as bwrap does; otherwise they
    // stay writable, and the project-trust consent still guards what dsh starts from them.
    const controlled = controlTargets(policy.controlPaths ?? [], writable)
    const mounts =
      selected.namespaces && controlled.length > 0
        ? { namespace: ownMountNamespace(), pins: pinDirs(controlled, writable), readOnly: controlled }
        : undefined
    const confinement = { writable, network: policy.network, hidden, ...(mounts ? { mounts } : {}) }
    const spec = Buffer.from(JSON.stringify(confinement)).toString('base64')
    const notes = policy.network
      ? []
      : ['network: IPv4/IPv6 sockets are refused; Unix-domain sockets on the filesystem stay reachable']
    if (!selected.namespaces && (policy.controlPaths ?? []).some((path) => writable.some((root) => within(path, root))))
      notes.push(LANDLOCK_CONTROL_NOTE)
    // Own PID namespace: when the command ends, the kernel ends everything it left behind (setsid
    // included); a private /proc hides the harness's processes. The sh init is PID 1 (see PID1_INIT).
    const namespaces = selected.namespaces
      ? [
          this.config.unshare,
          '--pid',
          '--fork',
          '--kill-child',
          '--mount-proc',
          ...(policy.network ? [] : ['--net']),
          '--',
        ]
      : []
    // The same confinement without a Node start per command: a spawn server started once per
    // policy behind the helper, which confines it (mounts, capabilities, seccomp, Landlock) and
    // keeps its control socket (fd 3) open across the execve. Landlock and seccomp bind a process
    // and all its descendants for good, so every command the server starts is confined as the
    // helper would confine it; a different policy needs a server of its own. In its own PID
    // namespace the server is PID 1 and sweeps what a command leaves behind.
    const launcher =
      this.config.spawnServer === false || request.launcher === false
        ? undefined
        : await this.launcherFor(
            {
              prefix: [
                ...namespaces,
                this.config.node,
                LANDLOCK_HELPER,
                Buffer.from(JSON.stringify({ ...confinement, controlFd: 3 })).toString('base64'),
                '--',
              ],
              sweep: selected.namespaces === true,
              captured: captured(
                [...writable, ...(mounts ? [...mounts.pins, ...mounts.readOnly] : [])],
                hiddenAncestors(hidden),
              ),
            },
            argv,
            cwd,
            merge,
          )
    const helper = [this.config.node, LANDLOCK_HELPER, spec, '--']
    if (!selected.namespaces)
      return {
        argv: [...helper, ...argv],
        runner: 'landlock',
        enforcement: 'enforced',
        mode: policy.mode,
        notes,
        ...(launcher ? { launcher } : {}),
      }
    return {
      argv: [...namespaces, ...helper, '/bin/sh', '-c', init, 'dsh-sandbox-init', ...argv],
      runner: 'landlock',
      enforcement: 'enforced',
      mode: policy.mode,
      notes,
      ...(merge ? { stderrMerged: true } : {}),
      ...(launcher ? { launcher } : {}),
    }
  }

  /** bwrap and its flags for `policy`, up to (not including) the per-command --chdir and command. */
  private bwrapFlags(
    policy: SandboxPolicy,
    writable: string[],
    readOnly: string[],
    hidden: string[],
    control: string[],
  ): string[] {
    const args = [
      this.config.bwrap,
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--unshare-pid',
      '--as-pid-1',
      '--die-with-parent',
    ]
    // As root, bwrap keeps every capability inside the sandbox, enough to remount `/` writable.
    args.push('--cap-drop', 'ALL')
    if (!policy.network) args.push('--unshare-net')
    for (const root of writable) args.push('--bind', root, root)
    args.push(...protectArgs(readOnly, hidden, writable, control))
    return args
  }

  /**
   * Starts `argv` in `cwd` through the spawn server of `prefix`, started (and awaited) at the first
   * wrap of that policy. A server that does not come up (bwrap refused a flag) is not tried again
   * for the policy: its commands run as a bwrap per command, which reports bwrap's own error.
   */
  private async launcherFor(
    start: ServerStart,
    argv: string[],
    cwd: string,
    merge: boolean,
  ): Promise<ProcessLauncher | undefined> {
    if (!this.serversChecked) {
      this.serversChecked = true
      this.spawnServerFallback = spawnServerUnavailable()
    }
    if (this.spawnServerFallback !== undefined) return undefined
    const key = [...start.prefix, start.sweep ? '--sweep' : '', start.captured].join('\0')
    if (this.failedServers.has(key)) return undefined
    const server = this.serverFor(key, start)
    if (!server) return undefined
    if (!(await server.ready)) {
      // Perhaps the stored probe result trusted without a probe is out of date: verify it now.
      if (this.unverified) this.verifyCachedProbe(this.unverified)
      this.failedServers.set(key, server.closeReason ?? 'the spawn server ended at start')
      if (this.servers.get(key) === server) this.servers.delete(key)
      return undefined
    }
    return {
      // A server that died since (it is replaced at the next wrap) leaves this command to argv.
      launch: ({ env, stdinPipe }) =>
        server.closed
          ? undefined
          : (server.spawn(argv[0]!, argv.slice(1), { cwd, env, stdinPipe, mergeStderr: merge }) as LaunchedChild),
    }
  }

  private serverFor(key: string, start: ServerStart): SpawnServer | undefined {
    if (this.disposed) return undefined
    let server = this.servers.get(key)
    if (server) this.servers.delete(key)
    if (server?.closed) {
      // It ended on its own (servers this side ends leave the map): started again once; a second
      // end leaves the policy to the confined argv (a runner per command), which says what fails.
      const ended = (this.serverEnds.get(key) ?? 0) + 1
      this.serverEnds.set(key, ended)
      if (ended > 1) {
        this.failedServers.set(
          key,
          `the spawn server ended twice${server.closeReason ? `: ${server.closeReason}` : ''}`,
        )
        return undefined
      }
      server = undefined
    }
    if (!server) {
      try {
        server = new SpawnServer({
          prefix: start.prefix,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
          sweep: start.sweep,
        })
      } catch (error) {
        this.spawnServerFallback = (error as Error).message
        return undefined
      }
    }
    this.servers.set(key, server)
    // Over the limit: end the least recently used servers that run nothing.
    const limit = this.config.maxSpawnServers ?? 4
    for (const [other, candidate] of this.servers) {
      if (this.servers.size <= limit) break
      if (candidate === server || candidate.running > 0) continue
      candidate.close()
      this.servers.delete(other)
    }
    return server
  }

  /** Spawn servers running now (diagnostics and tests). */
  get spawnServers(): number {
    return [...this.servers.values()].filter((server) => !server.closed).length
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
        if (fresh.selected?.runner !== 'bwrap') {
          for (const server of this.servers.values()) server.close()
          this.servers.clear()
        }
      })
      .catch(() => {})
  }

  /** `<dsh home>/.cache/sandbox-probe.json` when the app has a home service and the cache is on. */
  private probeCachePath(): string | undefined {
    if (this.config.probeCache === false) return undefined
    const home = this.ctx.get('homePaths')?.home
    return home ? join(home, '.cache', 'sandbox-probe.json') : undefined
  }

  /**
   * What a probe's answer depends on besides the kernel's behaviour: the configuration, the
   * runner binaries (path, size, mtime), the kernel build, the user and the user-namespace
   * switches. Any change means a new probe.
   */
  private probeKey(): string {
    const stamp = (file: string): string => {
      const path = file.includes('/') ? file : onPath(file)
      if (!path) return 'missing'
      try {
        const st = statSync(path)
        return `${path}:${st.size}:${st.mtimeMs}`
      } catch {
        return 'missing'
      }
    }
    const sysctl = (path: string): string => {
      try {
        return readFileSync(path, 'utf8').trim()
      } catch {
        return ''
      }
    }
    return JSON.stringify({
      v: 1,
      runner: this.config.runner,
      bwrap: stamp(this.config.bwrap),
      node: stamp(this.config.node),
      unshare: stamp(this.config.unshare),
      helper: stamp(LANDLOCK_HELPER),
      kernel: `${release()} ${version()}`,
      uid: process.getuid?.() ?? -1,
      sysctls: [
        '/proc/sys/kernel/unprivileged_userns_clone',
        '/proc/sys/user/max_user_namespaces',
        '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
      ].map(sysctl),
    })
  }

  private readProbeCache(): { probe: Probe; verifiedAt: number } | undefined {
    const path = this.probeCachePath()
    if (!path) return undefined
    try {
      const stored = JSON.parse(readFileSync(path, 'utf8')) as { key?: unknown; probe?: Probe; verifiedAt?: unknown }
      if (stored.key !== this.probeKey() || !isProbe(stored.probe)) return undefined
      // No stamp (an older file): as if verified long ago.
      return {
        probe: stored.probe,
        verifiedAt: typeof stored.verifiedAt === 'number' && Number.isFinite(stored.verifiedAt) ? stored.verifiedAt : 0,
      }
    } catch {
      return undefined // missing or unreadable: probe as usual (and rewrite it)
    }
  }

  private writeProbeCache(probe: Probe): void {
    const path = this.probeCachePath()
    if (!path) return
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
      const temp = `${path}.${process.pid}.tmp`
      writeFileSync(temp, JSON.stringify({ key: this.probeKey(), probe, verifiedAt: Date.now() }) + '\n', {
        mode: 0o600,
      })
      renameSync(temp, path)
    } catch {
      // A read-only home: every process probes, as without the cache.
    }
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
      const failure = await this.probeBwrap()
      if (!failure) return { selected: { runner: 'bwrap' }, rejected, notes: [] }
      rejected.push({ runner: 'bwrap', reason: failure })
    }
    if (choice === 'auto' || choice === 'landlock') {
      const result = await this.probeLandlock()
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

  /** Undefined when a minimal confined `true` runs; else why not. */
  private async probeBwrap(): Promise<string | undefined> {
    // --as-pid-1 as in wrap(): without it bwrap's own reaper is PID 1 of the namespace, and it is
    // orphaned when the outer bwrap exits first (a zombie under the container's PID 1 per probe).
    const args = [
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--unshare-pid',
      '--as-pid-1',
      '--die-with-parent',
      '--cap-drop',
      'ALL',
      '--unshare-net',
      '--',
      'true',
    ]
    const { code, output } = await this.run(this.config.bwrap, args)
    if (code === 0) return undefined
    return `${this.config.bwrap} ${code === null ? 'could not run' : `exited ${code}`}${output ? `: ${output.trim().split('\n')[0]}` : ''}`
  }

  private async probeLandlock(): Promise<{ abi: number; seccomp: boolean; namespaces: boolean } | string> {
    const { code, output } = await this.run(this.config.node, [LANDLOCK_HELPER, '--probe'])
    if (code !== 0) return `the Landlock helper failed${output ? `: ${output.trim().split('\n')[0]}` : ''}`
    let facts: { abi: number; seccomp: boolean }
    try {
      facts = JSON.parse(output) as { abi: number; seccomp: boolean }
    } catch {
      return `unexpected probe output ${JSON.stringify(output.slice(0, 100))}`
    }
    if (!(facts.abi >= 1)) return 'Landlock is not enabled in this kernel'
    const namespaces =
      (await this.run(this.config.unshare, ['--pid', '--fork', '--kill-child', '--mount-proc', '--net', '--', 'true']))
        .code === 0
    return { abi: facts.abi, seccomp: facts.seccomp === true, namespaces }
  }

  /** Runs a probe child; it is tracked so an unload can end and reap it. */
  private run(file: string, args: string[]): Promise<{ code: number | null; output: string }> {
    if (this.disposed) return Promise.resolve({ code: null, output: 'the sandbox plugin was unloaded' })
    return this.runNative(file, args) ?? this.runExecFile(file, args)
  }

  /**
   * The probe through posix_spawn (no fork of the harness: several ms less per probe where page
   * tables are costly to copy). Undefined where the add-on is not built or the spawn failed, so
   * execFile runs it and reports the failure as before.
   */
  private runNative(file: string, args: string[]): Promise<{ code: number | null; output: string }> | undefined {
    let child: SpawnedChild | undefined
    try {
      child = nativeSpawn(file, args, {
        cwd: process.cwd(),
        env: process.env as Record<string, string>,
        stdinPipe: false,
        searchPath: true,
      })
    } catch {
      return undefined
    }
    if (!child) return undefined
    const spawned = child
    this.probing.add(spawned)
    let stdout = ''
    let stderr = ''
    spawned.stdout?.setEncoding('utf8').on('data', (text: string) => (stdout += text))
    spawned.stderr?.setEncoding('utf8').on('data', (text: string) => (stderr += text))
    const timer = setTimeout(() => spawned.kill('SIGTERM'), this.config.probeTimeoutMs)
    return new Promise((resolve) => {
      spawned.once('close', (code: number | null, signal: string | null) => {
        clearTimeout(timer)
        this.probing.delete(spawned)
        if (code === 0) return resolve({ code: 0, output: stdout })
        // Nothing printed: only an end by a signal has something to say (an exit code is already reported).
        resolve({
          code,
          output: `${stderr}${stdout}` || (code === null ? `${file} was ended by ${signal ?? 'a signal'}` : ''),
        })
      })
    })
  }

  private runExecFile(file: string, args: string[]): Promise<{ code: number | null; output: string }> {
    return new Promise((resolve) => {
      const child = execFile(
        file,
        args,
        { timeout: this.config.probeTimeoutMs, encoding: 'utf8' },
        (error, stdout, stderr) => {
          if (!error) return resolve({ code: 0, output: stdout })
          const code = typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : null
          // As in runNative: an exit code says enough when nothing was printed.
          resolve({ code, output: `${stderr || ''}${stdout || ''}` || (code === null ? error.message : '') })
        },
      )
      this.probing.add(child)
      child.once('close', () => this.probing.delete(child))
    })
  }
}

function within(path: string, root: string): boolean {
  return path === root || root === '/' || path.startsWith(root.endsWith(sep) ? root : root + sep)
}

/**
 * bwrap arguments (after the writable binds) that keep `readOnly` paths read-only and `hidden`
 * paths unreadable. A read-only directory holding hidden entries becomes a read-only tmpfs with
 * every other entry bound back read-only, so a credential file the harness creates later is not
 * visible either. A missing read-only path under a writable root is created (mode 0700) first, so
 * a command cannot create it.
 *
 * `control` paths (the project control files, `SandboxPolicy.controlPaths`) are bound read-only
 * where they exist under a writable root; a missing one is left alone, since a mount point for it
 * would be an empty file or directory in the user's tree (see the README's Known Limitations).
 *
 * A bind mount only pins its own path: a directory that merely contains one can still be renamed
 * away and rebuilt with a fresh file in the old place (`mv .git .git2; mkdir .git; echo ... >
 * .git/config`). So every directory between the outermost writable root and a protected path is
 * bound onto itself first (still writable, but a mount point, which rename and rmdir refuse).
 */
export function protectArgs(
  readOnly: readonly string[],
  hidden: readonly string[],
  writable: readonly string[],
  control: readonly string[] = [],
): string[] {
  const args: string[] = []
  const isDir = (path: string) => {
    try {
      return statSync(path).isDirectory()
    } catch {
      return false
    }
  }
  const covered = new Set<string>()
  for (const path of readOnly) {
    if (!existsSync(path) && writable.some((root) => within(path, root)))
      mkdirSync(path, { recursive: true, mode: 0o700 })
  }
  // A path inside another protected path is read-only with it (and its mount point could not be
  // created inside the read-only parent).
  const outermost = [...new Set(readOnly)].filter(
    (path, _, all) => existsSync(path) && !all.some((other) => other !== path && within(path, other)),
  )
  const controlled = controlTargets(control, writable, outermost)
  for (const dir of pinDirs([...outermost, ...controlled], writable)) args.push('--bind', dir, dir)
  for (const path of outermost) {
    const inside = hidden.filter((entry) => dirname(entry) === path)
    if (inside.length === 0 || !isDir(path)) {
      args.push('--ro-bind', path, path)
      continue
    }
    for (const entry of inside) covered.add(entry)
    args.push('--tmpfs', path)
    for (const name of readdirSync(path)) {
      const full = join(path, name)
      if (!inside.includes(full)) args.push('--ro-bind-try', full, full)
    }
    args.push('--remount-ro', path)
  }
  for (const path of controlled) args.push('--ro-bind', path, path)
  for (const path of hidden) {
    if (covered.has(path) || !existsSync(path)) continue
    if (isDir(path)) args.push('--tmpfs', path, '--remount-ro', path)
    else args.push('--ro-bind', '/dev/null', path)
  }
  return args
}

/**
 * The control paths to bind read-only: those that exist (symlinks resolved: a mount lands on the
 * link's target) under a writable root and outside the read-only paths (already covered); only
 * the outermost ones.
 */
export function controlTargets(
  control: readonly string[],
  writable: readonly string[],
  readOnly: readonly string[] = [],
): string[] {
  const present = [
    ...new Set(control.map(realpathOrUndefined).filter((path): path is string => path !== undefined && path !== '/')),
  ].filter((path) => writable.some((root) => within(path, root)) && !readOnly.some((other) => within(path, other)))
  return present.filter((path) => !present.some((other) => other !== path && within(path, other)))
}

/**
 * Every directory strictly between the outermost writable root holding a protected path and that
 * path, shallowest first, to be bound onto itself (see protectArgs). Binds are recursive and
 * bwrap takes them from the host's view, so a later, shallower bind would hide the ones below
 * it: the order matters.
 */
export function pinDirs(protectedPaths: readonly string[], writable: readonly string[]): string[] {
  const pins = new Set<string>()
  for (const path of protectedPaths) {
    const roots = writable.filter((root) => root !== path && within(path, root))
    if (roots.length === 0) continue
    const outer = roots.reduce((a, b) => (b.length < a.length ? b : a))
    for (let dir = dirname(path); dir !== outer && within(dir, outer) && dir !== dirname(dir); dir = dirname(dir))
      pins.add(dir)
  }
  return [...pins].sort((a, b) => a.split(sep).length - b.split(sep).length || a.localeCompare(b))
}

/** This process's mount namespace (`mnt:[N]`): the Landlock helper refuses to mount in it. */
function ownMountNamespace(): string {
  try {
    return readlinkSync('/proc/self/ns/mnt')
  } catch {
    return 'unknown'
  }
}

function realpathOrUndefined(path: string): string | undefined {
  // Most control paths do not exist: no exception per path (existsSync does not throw).
  if (!existsSync(path)) return undefined
  try {
    return realpathSync.native(path)
  } catch {
    return undefined
  }
}

function checkPolicy(policy: SandboxPolicy): void {
  if (policy === null || typeof policy !== 'object')
    throw new SandboxError('INVALID_POLICY', 'policy must be an object')
  if (!isSandboxMode(policy.mode))
    throw new SandboxError('INVALID_POLICY', `unknown sandbox mode ${JSON.stringify(policy.mode)}`)
  if (typeof policy.network !== 'boolean') throw new SandboxError('INVALID_POLICY', 'policy.network must be a boolean')
  if (
    !Array.isArray(policy.writableRoots) ||
    !policy.writableRoots.every((root) => typeof root === 'string' && isAbsolute(root))
  ) {
    throw new SandboxError('INVALID_POLICY', 'policy.writableRoots must be absolute paths')
  }
  if (policy.writableRoots.includes('/'))
    throw new SandboxError('INVALID_POLICY', 'a writable root of / is danger-full-access; say so with the mode')
}

export const name = 'sandbox-local'
export default LocalSandbox
