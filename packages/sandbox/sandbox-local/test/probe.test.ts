// The runner probe and its cache, quickly: what each runner's failure is reported as, what the
// Landlock probe concludes from its helper and `unshare`, which stored results are trusted (shape,
// key, verification stamp), how a stored result is verified and replaced, and that unloading waits
// for (or ends) a probe child. Stand-in runner binaries are small shell scripts that log each call
// and then fail, answer, hang or hand over to the real bwrap; no command is confined here (that is
// sandbox-local.test.ts). Mutation testing (`pnpm mutation sandbox-local`) left the probe out because
// that file starts bwrap for nearly every test; these tests let it be mutated.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { release, tmpdir, version } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import HomePaths from '@dsh/home-paths'
import { isSandboxError } from '@dsh/sandbox'
import LocalSandbox, {
  LANDLOCK_CONTROL_NOTE,
  LANDLOCK_HELPER,
  LANDLOCK_NOTE,
  NO_PID_NAMESPACE_NOTE,
  PID_NAMESPACE_NOTE,
} from '../src/index.ts'

let base: string
const contexts: Context[] = []
beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'dsh-sandbox-probe-'))
})
afterEach(async () => {
  vi.useRealTimers()
  for (const ctx of contexts.splice(0)) await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

let scripts = 0
/** An executable shell script that logs each call to `<file>.log`, then runs `body`. */
function script(body: string): { file: string; calls: () => number } {
  const file = join(base, `runner-${++scripts}`)
  writeFileSync(file, `#!/bin/sh\necho "$*" >> ${file}.log\n${body}\n`, { mode: 0o755 })
  return {
    file,
    calls: () =>
      existsSync(`${file}.log`) ? readFileSync(`${file}.log`, 'utf8').split('\n').filter(Boolean).length : 0,
  }
}
const realBwrap = () => script('exec bwrap "$@"')

async function sandbox(config: Record<string, unknown>, home?: string) {
  const ctx = new Context()
  contexts.push(ctx)
  if (home !== undefined) await ctx.plugin(HomePaths, { home })
  await ctx.plugin(LocalSandbox, { prewarmDelayMs: 0, ...config })
  return { ctx, service: ctx.sandbox as LocalSandbox }
}
const dispose = async (ctx: Context) => {
  contexts.splice(contexts.indexOf(ctx), 1)
  await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
}

const ws = () => {
  const dir = join(base, 'ws')
  mkdirSync(dir, { recursive: true })
  return dir
}
const confined = (service: LocalSandbox) =>
  service.wrap({
    argv: ['true'],
    cwd: ws(),
    policy: { mode: 'workspace-write', workspaceRoot: ws(), writableRoots: [ws()], network: false },
    launcher: false,
  })

describe('what a failed probe says', () => {
  it('bwrap: its exit code and the first line of what it printed', async () => {
    const bwrap = script('echo "bwrap: setting up uid map: Permission denied" >&2\necho "second line" >&2\nexit 1')
    const { service } = await sandbox({ runner: 'bwrap', bwrap: bwrap.file })
    expect(await service.describe()).toEqual({
      rejected: [{ runner: 'bwrap', reason: `${bwrap.file} exited 1: bwrap: setting up uid map: Permission denied` }],
    })
    const error = await confined(service).catch((e: unknown) => e)
    expect(isSandboxError(error) && error.code).toBe('SANDBOX_UNAVAILABLE')
    expect((error as Error).message).toBe(
      `no working sandbox runner, so the workspace-write sandbox cannot be enforced and the command was not run (bwrap: ${bwrap.file} exited 1: bwrap: setting up uid map: Permission denied). Install bubblewrap or use a kernel with Landlock, or switch to danger-full-access deliberately.`,
    )
  })

  it('bwrap that prints nothing, and bwrap that is not there', async () => {
    const silent = script('exit 3')
    expect((await (await sandbox({ runner: 'bwrap', bwrap: silent.file })).service.describe()).rejected).toEqual([
      { runner: 'bwrap', reason: `${silent.file} exited 3` },
    ])
    const missing = join(base, 'no-such-bwrap')
    const [entry] = (await (await sandbox({ runner: 'bwrap', bwrap: missing })).service.describe()).rejected
    expect(entry.runner).toBe('bwrap')
    expect(entry.reason.startsWith(`${missing} `)).toBe(true)
  })

  it('bwrap that hangs is ended after probeTimeoutMs and counts as broken', async () => {
    const hanging = script('exec sleep 30')
    const { service } = await sandbox({ runner: 'bwrap', bwrap: hanging.file, probeTimeoutMs: 200 })
    const [entry] = (await service.describe()).rejected
    expect(entry.reason).toMatch(new RegExp(`^${hanging.file} (could not run|exited \\d+)`))
  })

  it('runner none names itself; auto with nothing working names each runner and warns', async () => {
    expect(await (await sandbox({ runner: 'none' })).service.describe()).toEqual({
      rejected: [{ runner: 'none', reason: 'configured runner: none' }],
    })
    const bwrap = script('exit 1')
    const node = script('echo "no landlock here" >&2\nexit 1')
    const ctx = new Context()
    contexts.push(ctx)
    const warnings: string[] = []
    ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void warnings.push(JSON.stringify(m)) })
    await ctx.plugin(LocalSandbox, { runner: 'auto', bwrap: bwrap.file, node: node.file })
    expect(await ctx.sandbox.describe()).toEqual({
      rejected: [
        { runner: 'bwrap', reason: `${bwrap.file} exited 1` },
        { runner: 'landlock', reason: 'the Landlock helper failed: no landlock here' },
      ],
    })
    expect(warnings.join('\n')).toContain(
      `bwrap: ${bwrap.file} exited 1; landlock: the Landlock helper failed: no landlock here`,
    )
  })
})

describe('the Landlock probe', () => {
  const landlock = (helperOutput: string, unshareCode = 0) => ({
    runner: 'landlock',
    node: script(`printf '%s' '${helperOutput}'`).file,
    unshare: script(`exit ${unshareCode}`).file,
  })

  it('with namespaces from unshare: both notes of a namespaced Landlock', async () => {
    const { service } = await sandbox(landlock('{"abi":3,"seccomp":true}'))
    expect(await service.describe()).toEqual({
      runner: 'landlock',
      rejected: [],
      notes: [LANDLOCK_NOTE, PID_NAMESPACE_NOTE],
    })
  })

  it('without them: the commands share the host’s processes and control files stay writable', async () => {
    const { service } = await sandbox(landlock('{"abi":1,"seccomp":false}', 1))
    expect(await service.describe()).toEqual({
      runner: 'landlock',
      rejected: [],
      notes: [LANDLOCK_NOTE, NO_PID_NAMESPACE_NOTE, LANDLOCK_CONTROL_NOTE],
    })
  })

  it('a helper answering something else, or a kernel without Landlock, rejects it', async () => {
    const cases: Array<[string, string]> = [
      ['not json', 'unexpected probe output "not json"'],
      ['{"abi":0,"seccomp":true}', 'Landlock is not enabled in this kernel'],
      ['{"seccomp":true}', 'Landlock is not enabled in this kernel'],
    ]
    for (const [output, reason] of cases) {
      const { service } = await sandbox(landlock(output))
      expect((await service.describe()).rejected, output).toEqual([{ runner: 'landlock', reason }])
    }
  })

  it('what it found is stored: the ABI, seccomp only when the helper says true, and namespaces', async () => {
    const home = join(base, 'home-landlock')
    const { service } = await sandbox(landlock('{"abi":4,"seccomp":"yes"}'), home)
    await service.describe()
    const stored = JSON.parse(readFileSync(join(home, '.cache', 'sandbox-probe.json'), 'utf8'))
    expect(stored.probe.selected).toEqual({ runner: 'landlock', abi: 4, seccomp: false, namespaces: true })
  })
})

describe('what the probe runs', () => {
  it('the Landlock helper with --probe, then unshare with the namespaces the commands would get', async () => {
    const node = script(`printf '%s' '{"abi":5,"seccomp":true}'`)
    const unshare = script('exit 0')
    const { service } = await sandbox({ runner: 'landlock', node: node.file, unshare: unshare.file })
    expect((await service.describe()).runner).toBe('landlock')
    expect(readFileSync(`${node.file}.log`, 'utf8')).toBe(`${LANDLOCK_HELPER} --probe\n`)
    expect(readFileSync(`${unshare.file}.log`, 'utf8')).toBe('--pid --fork --kill-child --mount-proc --net -- true\n')
  })

  it('bwrap with the flags of a real command, ending in `true`', async () => {
    const bwrap = script('exit 0')
    const { service } = await sandbox({ runner: 'bwrap', bwrap: bwrap.file })
    expect((await service.describe()).runner).toBe('bwrap')
    expect(readFileSync(`${bwrap.file}.log`, 'utf8')).toBe(
      '--ro-bind / / --dev /dev --proc /proc --unshare-pid --as-pid-1 --die-with-parent --cap-drop ALL --unshare-net -- true\n',
    )
  })
})

describe('the probe key', () => {
  const keyOf = async (config: Record<string, unknown>) =>
    JSON.parse(((await sandbox(config)).service as unknown as { probeKey(): string }).probeKey())

  it('names each runner binary by path, size and mtime; a bare name is looked up on PATH; a missing one says so', async () => {
    const node = script('exit 0')
    const unshare = script('exit 0')
    const key = await keyOf({ runner: 'auto', bwrap: 'sh', node: node.file, unshare: unshare.file })
    const stamp = (path: string) => `${path}:${statSync(path).size}:${statSync(path).mtimeMs}`
    const sh = process.env
      .PATH!.split(':')
      .filter(Boolean)
      .map((dir) => join(dir, 'sh'))
      .find((path) => existsSync(path) && statSync(path).isFile())!
    expect(key).toEqual({
      v: 1,
      runner: 'auto',
      bwrap: stamp(sh),
      node: stamp(node.file),
      unshare: stamp(unshare.file),
      helper: stamp(LANDLOCK_HELPER),
      kernel: `${release()} ${version()}`,
      uid: process.getuid?.() ?? -1,
      sysctls: [
        '/proc/sys/kernel/unprivileged_userns_clone',
        '/proc/sys/user/max_user_namespaces',
        '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
      ].map((path) => (existsSync(path) ? readFileSync(path, 'utf8').trim() : '')),
    })
    const missing = await keyOf({ runner: 'bwrap', bwrap: 'dsh-no-such-bwrap', node: join(base, 'no-node') })
    expect([missing.bwrap, missing.node, missing.runner]).toEqual(['missing', 'missing', 'bwrap'])
    // A changed binary is a new key.
    writeFileSync(node.file, '#!/bin/sh\nexit 0 # changed\n')
    expect((await keyOf({ runner: 'auto', bwrap: 'sh', node: node.file, unshare: unshare.file })).node).toBe(
      stamp(node.file),
    )
    expect(stamp(node.file)).not.toBe(key.node)
  })
})

describe('the probe cache', () => {
  const cacheFile = (home: string) => join(home, '.cache', 'sandbox-probe.json')

  it('is written private, with the key, the probe and when it was verified', async () => {
    const home = join(base, 'home-write')
    const bwrap = realBwrap()
    const { service } = await sandbox({ runner: 'bwrap', bwrap: bwrap.file }, home)
    const before = Date.now()
    expect(await service.describe()).toEqual({ runner: 'bwrap', rejected: [] })
    const stored = JSON.parse(readFileSync(cacheFile(home), 'utf8'))
    expect(stored).toEqual({
      key: (service as unknown as { probeKey(): string }).probeKey(),
      probe: { selected: { runner: 'bwrap' }, rejected: [], notes: [] },
      verifiedAt: expect.any(Number),
    })
    expect(stored.verifiedAt).toBeGreaterThanOrEqual(before - 1000)
    expect(statSync(cacheFile(home)).mode & 0o777).toBe(0o600)
    expect(statSync(join(home, '.cache')).mode & 0o777).toBe(0o700)
    expect(JSON.parse(stored.key)).toMatchObject({ v: 1, runner: 'bwrap', uid: process.getuid?.() })
  })

  it('a result stored by another runner choice is not used', async () => {
    const home = join(base, 'home-choice')
    const bwrap = realBwrap()
    const first = await sandbox({ runner: 'bwrap', bwrap: bwrap.file }, home)
    await first.service.describe()
    await dispose(first.ctx)
    expect(bwrap.calls()).toBe(1)
    const { service } = await sandbox({ runner: 'auto', bwrap: bwrap.file }, home)
    await service.describe()
    expect(bwrap.calls()).toBe(2)
  })

  it('only a stored probe of the right shape is trusted', async () => {
    const home = join(base, 'home-shapes')
    const bwrap = realBwrap()
    const first = await sandbox({ runner: 'auto', bwrap: bwrap.file }, home)
    await first.service.describe()
    await dispose(first.ctx)
    const { key } = JSON.parse(readFileSync(cacheFile(home), 'utf8'))
    const landlock = { runner: 'landlock', abi: 2, seccomp: true, namespaces: false }
    const bad: unknown[] = [
      null,
      'probe',
      { rejected: {}, notes: [] },
      { rejected: [], notes: 'x' },
      { rejected: [], notes: [7] },
      { rejected: [null], notes: [] },
      { rejected: [{ runner: 'bwrap' }], notes: [] },
      { rejected: [{ runner: 1, reason: 'r' }], notes: [] },
      { selected: null, rejected: [], notes: [] },
      { selected: 'bwrap', rejected: [], notes: [] },
      { selected: { runner: 'chroot' }, rejected: [], notes: [] },
      { selected: { ...landlock, abi: '2' }, rejected: [], notes: [] },
      { selected: { ...landlock, seccomp: 1 }, rejected: [], notes: [] },
      { selected: { ...landlock, namespaces: undefined }, rejected: [], notes: [] },
    ]
    for (const probe of bad) {
      writeFileSync(cacheFile(home), JSON.stringify({ key, probe, verifiedAt: Date.now() }))
      const before = bwrap.calls()
      const { ctx, service } = await sandbox({ runner: 'auto', bwrap: bwrap.file }, home)
      expect(await service.describe(), JSON.stringify(probe)).toEqual({ runner: 'bwrap', rejected: [] })
      expect(bwrap.calls(), JSON.stringify(probe)).toBe(before + 1)
      await dispose(ctx)
    }
    // The right shape, recently verified: used as stored, without a probe (a Landlock answer is
    // still announced loudly).
    const probe = {
      selected: landlock,
      rejected: [{ runner: 'bwrap', reason: 'stored reason' }],
      notes: ['Stored note.'],
    }
    writeFileSync(cacheFile(home), JSON.stringify({ key, probe, verifiedAt: Date.now() }))
    const ctx = new Context()
    contexts.push(ctx)
    const warnings: string[] = []
    ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void warnings.push(JSON.stringify(m)) })
    await ctx.plugin(HomePaths, { home })
    await ctx.plugin(LocalSandbox, { runner: 'auto', bwrap: bwrap.file, prewarmDelayMs: 0 })
    const before = bwrap.calls()
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    expect(await ctx.sandbox.describe()).toEqual({
      runner: 'landlock',
      rejected: [{ runner: 'bwrap', reason: 'stored reason' }],
      notes: ['Stored note.', LANDLOCK_CONTROL_NOTE],
    })
    vi.runOnlyPendingTimers()
    vi.useRealTimers()
    await dispose(ctx)
    expect(bwrap.calls()).toBe(before)
    expect(warnings.join('\n')).toMatch(/weaker Landlock fallback.*stored reason.*Stored note\./)
  })

  it('an old or unstamped result is verified in the background; a different answer replaces it', async () => {
    const home = join(base, 'home-verify')
    const bwrap = realBwrap()
    const first = await sandbox({ runner: 'bwrap', bwrap: bwrap.file }, home)
    await first.service.describe()
    await dispose(first.ctx)
    const { key } = JSON.parse(readFileSync(cacheFile(home), 'utf8'))
    const stale = { rejected: [{ runner: 'bwrap', reason: 'stale' }], notes: [] }
    for (const verifiedAt of [undefined, Number.NaN, Date.now() - 2 * 3_600_000]) {
      writeFileSync(
        cacheFile(home),
        JSON.stringify({ key, probe: stale, ...(verifiedAt === undefined ? {} : { verifiedAt }) }),
      )
      const before = bwrap.calls()
      const { ctx, service } = await sandbox({ runner: 'bwrap', bwrap: bwrap.file }, home)
      expect(await service.describe()).toEqual({ rejected: [{ runner: 'bwrap', reason: 'stale' }] })
      await expect.poll(async () => (await service.describe()).runner, { timeout: 10_000 }).toBe('bwrap')
      expect(bwrap.calls()).toBe(before + 1)
      const stored = JSON.parse(readFileSync(cacheFile(home), 'utf8'))
      expect(stored.probe).toEqual({ selected: { runner: 'bwrap' }, rejected: [], notes: [] })
      expect(Math.abs(stored.verifiedAt - Date.now())).toBeLessThan(60_000)
      await dispose(ctx)
    }
  })

  it('a confirmed result is restamped; with probeVerifyIntervalMs 0 it is verified by every process', async () => {
    const home = join(base, 'home-restamp')
    const bwrap = realBwrap()
    const first = await sandbox({ runner: 'bwrap', bwrap: bwrap.file }, home)
    await first.service.describe()
    await dispose(first.ctx)
    const stored = JSON.parse(readFileSync(cacheFile(home), 'utf8'))
    writeFileSync(cacheFile(home), JSON.stringify({ ...stored, verifiedAt: 1 }))
    const old = await sandbox({ runner: 'bwrap', bwrap: bwrap.file }, home)
    await old.service.describe()
    await expect
      .poll(() => JSON.parse(readFileSync(cacheFile(home), 'utf8')).verifiedAt, { timeout: 10_000 })
      .toBeGreaterThan(1)
    await dispose(old.ctx)
    // Just verified, but the interval is 0: this process verifies again.
    const before = bwrap.calls()
    const every = await sandbox({ runner: 'bwrap', bwrap: bwrap.file, probeVerifyIntervalMs: 0 }, home)
    await every.service.describe()
    await expect.poll(() => bwrap.calls(), { timeout: 10_000 }).toBe(before + 1)
  })

  it('no home, probeCache false, or a home that cannot be written: probed, nothing stored', async () => {
    const bwrap = realBwrap()
    expect(await (await sandbox({ runner: 'bwrap', bwrap: bwrap.file })).service.describe()).toMatchObject({
      runner: 'bwrap',
    })
    const off = join(base, 'home-off')
    await (await sandbox({ runner: 'bwrap', bwrap: bwrap.file, probeCache: false }, off)).service.describe()
    expect(existsSync(cacheFile(off))).toBe(false)
    const blocked = join(base, 'home-blocked')
    mkdirSync(blocked)
    writeFileSync(join(blocked, '.cache'), 'a file where the cache directory would be')
    const { service } = await sandbox({ runner: 'bwrap', bwrap: bwrap.file }, blocked)
    expect(await service.describe()).toEqual({ runner: 'bwrap', rejected: [] })
    expect(bwrap.calls()).toBe(3)
  })
})

describe('unloading', () => {
  it('ends a probe child that outlives the grace, and waits for it', async () => {
    const hanging = script('exec sleep 30')
    const { ctx, service } = await sandbox({ runner: 'bwrap', bwrap: hanging.file, probeTimeoutMs: 60_000 })
    service.prewarm()
    await expect.poll(() => hanging.calls()).toBe(1)
    const probing = (service as unknown as { probing: Set<{ exitCode: number | null; signalCode: string | null }> })
      .probing
    const [child] = [...probing]
    // The grace is min(probeTimeoutMs, 2 s): the unload ends the child itself.
    await dispose(ctx)
    expect(child.exitCode !== null || child.signalCode !== null).toBe(true)
    // After the unload nothing probes again.
    service.prewarm()
    expect(hanging.calls()).toBe(1)
  })
})
