// The service around the runners, quickly: the background probe that app/ready schedules (and what
// stops it), wrap() through spawn servers (started once per policy, keyed by what their
// confinement captured, bounded, and falling back to the argv when one does not start), the
// Landlock branch of wrap() as argument lists, when a stored probe result is trusted, and what a
// verifying probe does with a different answer. Runner binaries are small logging shell scripts
// (bwrap ones hand over to the real bwrap); no command is run here: sandbox-local.test.ts runs
// commands under each runner. Written against the survivors of `pnpm mutation sandbox-local`.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import HomePaths from '@dsh/home-paths'
import { SPAWN_SERVER_PATH, spawnServerUnavailable } from '@dsh/posix-spawn'
import type { SandboxMode, SandboxPolicy } from '@dsh/sandbox'
import LocalSandbox, {
  LANDLOCK_CONTROL_NOTE,
  LANDLOCK_HELPER,
  LANDLOCK_NOTE,
  PID1_INIT,
  PID1_INIT_MERGED,
  PID_NAMESPACE_NOTE,
  name,
} from '../src/index.ts'

let base: string
let ws: string
/**
 * Spawn servers need the posix_spawn add-on, which only loads on the main thread: under Stryker's
 * vitest runner (worker threads) none can start, so the tests that start one are skipped there
 * and the ones below that only ask whether wrap() wanted one hold in both places.
 */
const noServers = spawnServerUnavailable() !== undefined
const contexts: Context[] = []
beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-sandbox-service-')))
  ws = join(base, 'ws')
  mkdirSync(ws)
})
afterEach(async () => {
  vi.useRealTimers()
  for (const ctx of contexts.splice(0)) await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

let scripts = 0
/** An executable shell script that logs each call's arguments to `<file>.log`, then runs `body`. */
function script(body: string): { file: string; log: () => string[] } {
  const file = join(base, `runner-${++scripts}`)
  writeFileSync(file, `#!/bin/sh\necho "$*" >> ${file}.log\n${body}\n`, { mode: 0o755 })
  return {
    file,
    log: () => (existsSync(`${file}.log`) ? readFileSync(`${file}.log`, 'utf8').split('\n').filter(Boolean) : []),
  }
}

/** What the service keeps to itself, read by the tests that check what it scheduled or trusted. */
interface Inside {
  probe?: Promise<unknown>
  unverified?: unknown
  disposed: boolean
  probing: Set<unknown>
  probeKey(): string
  runProbe(): Promise<unknown>
}
const inside = (service: LocalSandbox) => service as unknown as Inside

async function load(config: Record<string, unknown>, setup?: (ctx: Context) => void) {
  const ctx = new Context()
  contexts.push(ctx)
  setup?.(ctx)
  await ctx.plugin(LocalSandbox, config)
  return { ctx, service: ctx.sandbox as LocalSandbox }
}
const dispose = async (ctx: Context) => {
  contexts.splice(contexts.indexOf(ctx), 1)
  await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
}
/** Collects the `sandbox` logger's warnings of `ctx`. */
function warnings(ctx: Context): string[] {
  const out: string[] = []
  ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void out.push(JSON.stringify(m)) })
  return out
}

function policy(mode: SandboxMode, extra: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return { mode, workspaceRoot: ws, writableRoots: mode === 'workspace-write' ? [ws] : [], network: false, ...extra }
}
const wrapIn = (service: LocalSandbox, p: SandboxPolicy, extra: { launcher?: false; mergeStderr?: boolean } = {}) =>
  service.wrap({ argv: ['true'], cwd: ws, policy: p, ...extra })

describe('the background probe after app/ready', () => {
  /** A service whose default mode is `mode()`, with a bwrap that answers its probe at once. */
  async function app(mode: (() => unknown) | undefined, config: Record<string, unknown> = {}) {
    const bwrap = script('exit 0')
    const { ctx, service } = await load(
      { runner: 'bwrap', bwrap: bwrap.file, probeCache: false, spawnServer: false, prewarmDelayMs: 1000, ...config },
      (ctx) => {
        if (mode) ctx.provide('sandboxPolicy', { modeFor: mode } as never)
      },
    )
    const emit = (event: string) => (ctx as unknown as { emit(name: string): void }).emit(event)
    return { ctx, service, bwrap, emit }
  }
  const probed = (service: LocalSandbox) => inside(service).probe !== undefined

  it('a confining default mode probes once prewarmDelayMs has passed, not before', async () => {
    for (const mode of ['workspace-write', 'read-only']) {
      const { service, bwrap, emit } = await app(() => mode)
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
      emit('app/ready')
      vi.advanceTimersByTime(999)
      expect(probed(service), mode).toBe(false)
      vi.advanceTimersByTime(1)
      expect(probed(service), mode).toBe(true)
      vi.useRealTimers()
      await expect.poll(() => bwrap.log().length).toBe(1)
      expect(await service.describe()).toEqual({ runner: 'bwrap', rejected: [] })
    }
  })

  it('no timer when the default does not confine, the policy service throws or lacks modeFor, or is absent', async () => {
    const defaults: Array<(() => unknown) | undefined> = [
      () => 'danger-full-access',
      () => {
        throw new Error('no default yet')
      },
      undefined,
    ]
    for (const mode of defaults) {
      const { service, emit } = await app(mode)
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
      emit('app/ready')
      expect(vi.getTimerCount()).toBe(0)
      vi.useRealTimers()
      expect(probed(service)).toBe(false)
    }
    // A policy service without modeFor.
    const bwrap = script('exit 0')
    const { ctx, service } = await load({ runner: 'bwrap', bwrap: bwrap.file, probeCache: false }, (c) =>
      c.provide('sandboxPolicy', {} as never),
    )
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    ;(ctx as unknown as { emit(name: string): void }).emit('app/ready')
    expect(vi.getTimerCount()).toBe(0)
    expect(probed(service)).toBe(false)
  })

  it('the mode is asked again when the timer fires: a default switched to danger-full-access never probes', async () => {
    let mode = 'workspace-write'
    const { service, emit } = await app(() => mode)
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    emit('app/ready')
    expect(vi.getTimerCount()).toBe(1)
    mode = 'danger-full-access'
    vi.advanceTimersByTime(1000)
    expect(vi.getTimerCount()).toBe(0)
    expect(probed(service)).toBe(false)
  })

  it('app/stopping cancels it; a second app/ready replaces the timer instead of adding one', async () => {
    const { service, emit } = await app(() => 'workspace-write')
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    emit('app/ready')
    emit('app/ready')
    expect(vi.getTimerCount()).toBe(1)
    emit('app/stopping')
    expect(vi.getTimerCount()).toBe(0)
    vi.advanceTimersByTime(5000)
    expect(probed(service)).toBe(false)
  })

  it('an unload clears the timer, and prewarm() after it starts nothing', async () => {
    const { ctx, service, emit } = await app(() => 'workspace-write')
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    emit('app/ready')
    expect(vi.getTimerCount()).toBe(1)
    vi.useRealTimers()
    await dispose(ctx)
    expect(inside(service).disposed).toBe(true)
    service.prewarm()
    expect(probed(service)).toBe(false)
    // The plugin's name, which configuration rows name it by.
    expect(name).toBe('sandbox-local')
  })
})

describe('wrap() through bwrap spawn servers', () => {
  const passThrough = () => script('exec bwrap "$@"')

  it.skipIf(noServers)(
    'a launcher from a server started once per policy, with the flags but --as-pid-1, and --sweep',
    async () => {
      const bwrap = passThrough()
      const { service } = await load({ runner: 'bwrap', bwrap: bwrap.file, probeCache: false })
      const served = await wrapIn(service, policy('workspace-write'))
      expect(served.launcher).toBeDefined()
      expect(service.spawnServers).toBe(1)
      // The per-command argv is the same as without a server.
      const plain = await wrapIn(service, policy('workspace-write'), { launcher: false })
      expect(plain.launcher).toBeUndefined()
      expect(served.argv).toEqual(plain.argv)
      const [, start] = bwrap.log()
      const flags = plain.argv.slice(1, plain.argv.indexOf('--chdir')).filter((flag) => flag !== '--as-pid-1')
      expect(start).toBe([...flags, '--', SPAWN_SERVER_PATH, '--sweep'].join(' '))
      // Same policy: the same server. Another policy: one more (the default bound is 4).
      expect((await wrapIn(service, policy('workspace-write'))).launcher).toBeDefined()
      expect(bwrap.log()).toHaveLength(2)
      expect((await wrapIn(service, policy('read-only'))).launcher).toBeDefined()
      expect(service.spawnServers).toBe(2)
      expect(bwrap.log()).toHaveLength(3)
    },
  )

  it('spawnServer false starts none', async () => {
    const bwrap = passThrough()
    const { service } = await load({ runner: 'bwrap', bwrap: bwrap.file, probeCache: false, spawnServer: false })
    expect((await wrapIn(service, policy('workspace-write'))).launcher).toBeUndefined()
    expect(service.spawnServers).toBe(0)
    expect(bwrap.log()).toHaveLength(1)
  })

  it('a server is asked for only with spawnServer on and a request that does not run its argv itself', async () => {
    // Asked: a launcher where servers can start, else the reason they cannot. Not asked: neither.
    const asked = async (config: Record<string, unknown>, extra: { launcher?: false } = {}) => {
      const { service } = await load({ runner: 'bwrap', bwrap: passThrough().file, probeCache: false, ...config })
      const inv = await wrapIn(service, policy('workspace-write'), extra)
      return inv.launcher !== undefined || service.spawnServerFallback !== undefined
    }
    expect(await asked({})).toBe(true)
    expect(await asked({ spawnServer: false })).toBe(false)
    expect(await asked({}, { launcher: false })).toBe(false)
  })

  it.skipIf(noServers)(
    'maxSpawnServers bounds the servers kept; a workspace made again needs a server of its own',
    async () => {
      const bwrap = passThrough()
      const { service } = await load({ runner: 'bwrap', bwrap: bwrap.file, probeCache: false, maxSpawnServers: 1 })
      await wrapIn(service, policy('workspace-write'))
      await wrapIn(service, policy('read-only'))
      expect(service.spawnServers).toBe(1)
      const other = await load({ runner: 'bwrap', bwrap: bwrap.file, probeCache: false })
      const again = join(base, 'again')
      mkdirSync(again)
      const p = policy('workspace-write', { writableRoots: [again] })
      await wrapIn(other.service, p)
      await wrapIn(other.service, p)
      expect(other.service.spawnServers).toBe(1)
      // Deleted and made again: the old bind would hold the old directory.
      rmSync(again, { recursive: true })
      mkdirSync(again)
      await wrapIn(other.service, p)
      expect(other.service.spawnServers).toBe(2)
    },
  )

  it.skipIf(noServers)(
    'a server that does not start: the argv is used, the failure kept by policy, a trusted stored probe verified',
    async () => {
      // A bwrap that refuses only server starts.
      const bwrap = script(
        'case "$*" in *spawn-server*) echo "bwrap: simulated refusal" >&2; exit 1;; esac\nexec bwrap "$@"',
      )
      const home = join(base, 'home-refusal')
      const config = { runner: 'bwrap', bwrap: bwrap.file, prewarmDelayMs: 0 }
      const first = await load(config, (c) => c.plugin(HomePaths, { home }))
      await first.service.describe()
      await dispose(first.ctx)
      expect(bwrap.log()).toHaveLength(1)
      // Stored and verified just now: trusted without a probe...
      const { service } = await load(config, (c) => c.plugin(HomePaths, { home }))
      expect(await service.describe()).toEqual({ runner: 'bwrap', rejected: [] })
      expect(inside(service).unverified).toBeDefined()
      const invocation = await wrapIn(service, policy('workspace-write'))
      expect(invocation.launcher).toBeUndefined()
      expect(invocation.argv[0]).toBe(bwrap.file)
      const [[key, why]] = [...service.failedServers]
      expect(why).toBe('bwrap: simulated refusal')
      const parts = key.split('\0')
      expect(parts.slice(-2)[0]).toBe('--sweep')
      // ...and what the server's binds captured (the writable root's identity) is part of its key.
      expect(parts.at(-1)).toMatch(/^\d+:\d+:\d+$/)
      // ...until the server does not come up: the stored result is verified at once.
      await expect.poll(() => bwrap.log().filter((line) => line.endsWith('-- true')).length).toBe(2)
      expect(inside(service).unverified).toBeUndefined()
    },
  )
})

describe('wrap() with Landlock', () => {
  /** Landlock stand-ins: a node that answers the helper's probe, an unshare that works or not. */
  function landlock(namespaces: boolean, server = 'exit 125') {
    const node = script(
      `case "$*" in *--probe*) printf '%s' '{"abi":3,"seccomp":true}';; *spawn-server*) ${server};; esac`,
    )
    // unshare answers its probe (`-- true`) and otherwise runs what follows its `--`.
    const unshare = script(
      `case "$*" in *'-- true') exit ${namespaces ? 0 : 1};; esac\nwhile [ "$1" != -- ]; do shift; done\nshift\nexec "$@"`,
    )
    return {
      config: { runner: 'landlock', node: node.file, unshare: unshare.file, probeCache: false },
      nodeLog: node.log,
    }
  }
  const spec = (argv: string[]) =>
    JSON.parse(Buffer.from(argv[argv.indexOf(LANDLOCK_HELPER) + 1]!, 'base64').toString('utf8'))

  it('with namespaces: the helper behind unshare and the sh init; its spec; the merged stream', async () => {
    const { config } = landlock(true)
    const { service } = await load(config)
    const secret = join(base, 'secret.env')
    const inv = await wrapIn(service, policy('workspace-write', { hiddenPaths: [secret] }), { launcher: false })
    const helperAt = inv.argv.indexOf(LANDLOCK_HELPER)
    expect(inv).toEqual({
      argv: [
        config.unshare,
        '--pid',
        '--fork',
        '--kill-child',
        '--mount-proc',
        '--net',
        '--',
        config.node,
        LANDLOCK_HELPER,
        inv.argv[helperAt + 1],
        '--',
        '/bin/sh',
        '-c',
        PID1_INIT,
        'dsh-sandbox-init',
        'true',
      ],
      runner: 'landlock',
      enforcement: 'enforced',
      mode: 'workspace-write',
      notes: ['network: IPv4/IPv6 sockets are refused; Unix-domain sockets on the filesystem stay reachable'],
    })
    expect(spec(inv.argv)).toEqual({ writable: [ws], network: false, hidden: [secret] })
    // Read-only grants no write, even where the policy lists writable roots.
    const readOnly = policy('read-only', { writableRoots: [ws] })
    expect(spec((await wrapIn(service, readOnly, { launcher: false })).argv)).toEqual({
      writable: [],
      network: false,
      hidden: [],
    })
    const merged = await wrapIn(service, policy('read-only'), { launcher: false, mergeStderr: true })
    expect(merged.stderrMerged).toBe(true)
    expect(merged.argv).toContain(PID1_INIT_MERGED)
    expect(await service.describe()).toEqual({
      runner: 'landlock',
      rejected: [],
      notes: [LANDLOCK_NOTE, PID_NAMESPACE_NOTE],
    })
  })

  it('without namespaces: the helper alone, the stream not merged, control files left writable and said so', async () => {
    const { config } = landlock(false)
    const { service } = await load(config)
    const project = join(ws, 'dangling-landlock')
    mkdirSync(project, { recursive: true })
    const link = join(project, '.git')
    symlinkSync('../landlock-gitdir-missing', link)
    const p = policy('workspace-write', { controlPaths: [link] })
    const inv = await wrapIn(service, p, { launcher: false, mergeStderr: true })
    expect(inv.argv).toEqual([config.node, LANDLOCK_HELPER, inv.argv[2], '--', 'true'])
    expect(inv.stderrMerged).toBeUndefined()
    expect(inv.notes).toContain(LANDLOCK_CONTROL_NOTE)
    // With a mount namespace of its own the helper would protect the control files, so there
    // the same dangling link is refused as under bwrap.
    const other = await load(landlock(true).config)
    const refused = await wrapIn(other.service, p, { launcher: false }).catch((e: { code: string }) => e.code)
    expect(refused).toBe('SANDBOX_UNAVAILABLE')
    rmSync(project, { recursive: true })
  })

  it('a server is asked for only with spawnServer on and a request that does not run its argv itself', async () => {
    const asked = async (config: Record<string, unknown>, extra: { launcher?: false } = {}) => {
      const { service } = await load({ ...landlock(false, 'shift 3; exec "$@"').config, ...config })
      const inv = await wrapIn(service, policy('workspace-write'), extra)
      expect(inv.runner).toBe('landlock')
      return inv.launcher !== undefined || service.spawnServerFallback !== undefined
    }
    expect(await asked({})).toBe(true)
    expect(await asked({ spawnServer: false })).toBe(false)
    expect(await asked({}, { launcher: false })).toBe(false)
  })

  it.skipIf(noServers)(
    'through its spawn server: a launcher per policy, unless spawnServer is off or the request says launcher false',
    async () => {
      // The stand-in hands over to the server without the helper (confinement is sandbox-local.test.ts's).
      const { config, nodeLog } = landlock(false, 'shift 3; exec "$@"')
      const { service } = await load(config)
      const inv = await wrapIn(service, policy('workspace-write'))
      expect(inv.launcher).toBeDefined()
      expect(service.spawnServers).toBe(1)
      const [, start] = nodeLog()
      expect(start!.startsWith(`${LANDLOCK_HELPER} `)).toBe(true)
      expect(start!.endsWith(` -- ${SPAWN_SERVER_PATH}`)).toBe(true)
      expect((await wrapIn(service, policy('workspace-write'), { launcher: false })).launcher).toBeUndefined()
      const off = await load({ ...config, spawnServer: false })
      expect((await wrapIn(off.service, policy('workspace-write'))).launcher).toBeUndefined()
      expect(nodeLog()).toHaveLength(3)
    },
  )

  it.skipIf(noServers)(
    'a helper that refuses to start the server leaves the argv, and the refusal is kept',
    async () => {
      const { config } = landlock(true, 'echo "dsh-sandbox(landlock): simulated refusal" >&2; exit 125')
      const { service } = await load(config)
      const inv = await wrapIn(service, policy('workspace-write'))
      expect(inv.launcher).toBeUndefined()
      expect(inv.argv[0]).toBe(config.unshare)
      expect([...service.failedServers.values()]).toEqual(['dsh-sandbox(landlock): simulated refusal'])
    },
  )
})

describe('which runner, and what is said about it', () => {
  it('auto with no working runner names each runner’s reason in the refusal', async () => {
    const bwrap = script('exit 1')
    const node = script('echo "no landlock here" >&2\nexit 1')
    const { service } = await load({ runner: 'auto', bwrap: bwrap.file, node: node.file, probeCache: false })
    const error = await wrapIn(service, policy('read-only')).catch((e: Error) => e.message)
    expect(error).toContain(`(bwrap: ${bwrap.file} exited 1; landlock: the Landlock helper failed: no landlock here)`)
  })

  it('Landlock picked by auto is announced as the weaker fallback; forced, it is not', async () => {
    const config = (runner: string) => ({
      runner,
      bwrap: script('exit 1').file,
      node: script(`printf '%s' '{"abi":3,"seccomp":true}'`).file,
      unshare: script('exit 0').file,
      probeCache: false,
    })
    let said: string[] = []
    const auto = await load(config('auto'), (c) => void (said = warnings(c)))
    expect((await auto.service.describe()).runner).toBe('landlock')
    expect(said.join('\n')).toContain('weaker Landlock fallback')
    const forced = await load(config('landlock'), (c) => void (said = warnings(c)))
    expect((await forced.service.describe()).runner).toBe('landlock')
    expect(said.join('\n')).not.toContain('weaker Landlock fallback')
  })

  it('a stored Landlock result is announced under auto only; a stored bwrap one never', async () => {
    const home = join(base, 'home-announce')
    const stored = (runner: string, probe: unknown) => async () => {
      const { ctx, service } = await load({ runner, probeVerifyIntervalMs: 3_600_000 }, (c) =>
        c.plugin(HomePaths, { home }),
      )
      const key = inside(service).probeKey()
      await dispose(ctx)
      mkdirSync(join(home, '.cache'), { recursive: true })
      writeFileSync(join(home, '.cache', 'sandbox-probe.json'), JSON.stringify({ key, probe, verifiedAt: Date.now() }))
      let said: string[] = []
      const next = await load({ runner }, (c) => {
        said = warnings(c)
        c.plugin(HomePaths, { home })
      })
      await next.service.describe()
      expect(inside(next.service).unverified).toBeDefined()
      return said.join('\n')
    }
    const landlockProbe = {
      selected: { runner: 'landlock', abi: 2, seccomp: true, namespaces: true },
      rejected: [{ runner: 'bwrap', reason: 'stored reason' }],
      notes: [],
    }
    expect(await stored('auto', landlockProbe)()).toContain('weaker Landlock fallback')
    expect(await stored('landlock', landlockProbe)()).not.toContain('weaker Landlock fallback')
    expect(await stored('auto', { selected: { runner: 'bwrap' }, rejected: [], notes: [] })()).not.toContain(
      'weaker Landlock fallback',
    )
  })
})

describe('a stored probe result: trusted or verified', () => {
  const PROBE = { selected: { runner: 'bwrap' }, rejected: [], notes: [] }
  /** Stores `probe` with `verifiedAt` for `config`, then loads a service that reads it. */
  async function storedThen(
    home: string,
    config: Record<string, unknown>,
    verifiedAt: number,
    probe: unknown = PROBE,
  ): Promise<{ ctx: Context; service: LocalSandbox; runs: Promise<unknown>[]; said: string[] }> {
    const keyed = await load(config, (c) => c.plugin(HomePaths, { home }))
    const key = inside(keyed.service).probeKey()
    await dispose(keyed.ctx)
    mkdirSync(join(home, '.cache'), { recursive: true })
    writeFileSync(join(home, '.cache', 'sandbox-probe.json'), JSON.stringify({ key, probe, verifiedAt }))
    let said: string[] = []
    const { ctx, service } = await load(config, (c) => {
      said = warnings(c)
      c.plugin(HomePaths, { home })
    })
    // Every probe this service runs, so a test can wait for what the service does with its answer
    // (the service's own handler was attached first, so it has run when the test's await resumes).
    const runs: Promise<unknown>[] = []
    const own = inside(service).runProbe.bind(service)
    inside(service).runProbe = () => {
      const run = own()
      runs.push(run)
      return run
    }
    return { ctx, service, runs, said }
  }
  const stamp = (home: string) => JSON.parse(readFileSync(join(home, '.cache', 'sandbox-probe.json'), 'utf8'))

  it('trusted from 0 up to (not including) probeVerifyIntervalMs old; a stamp in the future or too old is verified', async () => {
    const bwrap = script('exec bwrap "$@"')
    const config = { runner: 'bwrap', bwrap: bwrap.file, prewarmDelayMs: 0, probeVerifyIntervalMs: 10_000 }
    const now = 1_800_000_000_000
    const cases: Array<[number, boolean]> = [
      [now, true],
      [now - 9_999, true],
      [now - 10_000, false],
      [now + 1, false],
    ]
    for (const [verifiedAt, trusted] of cases) {
      const home = join(base, `home-age-${verifiedAt - now}`)
      const { ctx, service, runs } = await storedThen(home, config, verifiedAt)
      vi.useFakeTimers({ toFake: ['Date'] })
      vi.setSystemTime(now)
      expect(await service.describe()).toEqual({ runner: 'bwrap', rejected: [] })
      vi.useRealTimers()
      expect(inside(service).unverified !== undefined, String(verifiedAt - now)).toBe(trusted)
      if (!trusted) {
        await expect.poll(() => runs.length).toBe(1)
        await runs[0]
      }
      await dispose(ctx)
    }
  })

  it('the interval is the configured one, and the verification waits prewarmDelayMs', async () => {
    const bwrap = script('exec bwrap "$@"')
    const home = join(base, 'home-delay')
    const config = { runner: 'bwrap', bwrap: bwrap.file, prewarmDelayMs: 60_000, probeVerifyIntervalMs: 1000 }
    const { service } = await storedThen(home, config, Date.now() - 5000)
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    await service.describe()
    expect(inside(service).unverified).toBeUndefined()
    vi.advanceTimersByTime(59_999)
    expect(inside(service).probing.size).toBe(0)
    vi.advanceTimersByTime(1)
    expect(inside(service).probing.size).toBe(1)
    vi.useRealTimers()
    await expect.poll(() => inside(service).probing.size).toBe(0)
  })

  it('a confirming answer restamps quietly; with probeVerifyIntervalMs 0 the file is left as it was', async () => {
    const bwrap = script('exec bwrap "$@"')
    for (const interval of [3_600_000, 0]) {
      const home = join(base, `home-confirm-${interval}`)
      const config = { runner: 'bwrap', bwrap: bwrap.file, prewarmDelayMs: 0, probeVerifyIntervalMs: interval }
      const { runs, said, service } = await storedThen(home, config, 5)
      await service.describe()
      await expect.poll(() => runs.length).toBe(1)
      await runs[0]
      expect(stamp(home).verifiedAt > 5, String(interval)).toBe(interval > 0)
      expect(said.join('\n')).not.toContain('out of date')
    }
  })

  it.skipIf(noServers)(
    'a different answer replaces it; spawn servers end unless the answer is bwrap again',
    async () => {
      // bwrap refuses to start a server for the policy that reads `refuse-server`, and once `broken`
      // exists its probe fails (the machine changed since the result was stored).
      const broken = join(base, 'bwrap-broken')
      const refuse = join(base, 'refuse-server')
      mkdirSync(refuse)
      const bwrap = script(
        `case "$*" in *${refuse}*spawn-server*) echo "bwrap: refused" >&2; exit 1;; *'-- true') [ -e ${broken} ] && { echo "bwrap: broken" >&2; exit 1; };; esac\nexec bwrap "$@"`,
      )
      for (const answer of ['bwrap', 'none']) {
        const home = join(base, `home-replace-${answer}`)
        const config = { runner: 'bwrap', bwrap: bwrap.file, prewarmDelayMs: 0 }
        // Verified just now, so trusted: the refused server is what makes the service verify it.
        const stored = answer === 'bwrap' ? { ...PROBE, notes: ['stored note'] } : PROBE
        const { service, runs, said } = await storedThen(home, config, Date.now(), stored)
        expect((await wrapIn(service, policy('workspace-write'))).launcher).toBeDefined()
        expect(service.spawnServers).toBe(1)
        if (answer === 'none') writeFileSync(broken, '')
        expect((await wrapIn(service, policy('read-only', { readOnlyPaths: [refuse] }))).launcher).toBeUndefined()
        await expect.poll(() => runs.length).toBe(1)
        await runs[0]
        rmSync(broken, { force: true })
        const outOfDate = said.map((line) => JSON.parse(line).args).filter((args) => /out of date/.test(args[0]))
        expect(outOfDate).toEqual([
          [
            'the stored sandbox probe result was out of date; commands from now on use the new one (%s)',
            answer === 'bwrap' ? 'bwrap' : 'no runner',
          ],
        ])
        expect(service.spawnServers, answer).toBe(answer === 'bwrap' ? 1 : 0)
        expect(stamp(home).probe.notes).toEqual([])
        expect(await service.describe()).toEqual(
          answer === 'bwrap'
            ? { runner: 'bwrap', rejected: [] }
            : { rejected: [{ runner: 'bwrap', reason: `${bwrap.file} exited 1: bwrap: broken` }] },
        )
      }
    },
  )

  it('a probe that is still running at the unload starts no further probe child', async () => {
    const go = join(base, 'probe-go')
    const bwrap = script(`while [ ! -e ${go} ]; do sleep 0.02; done\nexit 1`)
    const node = script(`printf '%s' '{"abi":3,"seccomp":true}'`)
    const { ctx, service } = await load({ runner: 'auto', bwrap: bwrap.file, node: node.file, probeCache: false })
    const described = service.describe()
    await expect.poll(() => bwrap.log().length).toBe(1)
    const unloading = dispose(ctx)
    await expect.poll(() => inside(service).disposed).toBe(true)
    writeFileSync(go, '')
    await unloading
    expect((await described).rejected).toEqual([
      { runner: 'bwrap', reason: `${bwrap.file} exited 1` },
      { runner: 'landlock', reason: 'the Landlock helper failed: the sandbox plugin was unloaded' },
    ])
    expect(node.log()).toEqual([])
  })
})
