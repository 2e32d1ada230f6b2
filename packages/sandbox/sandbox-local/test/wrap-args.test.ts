// The confinement as argument lists, without running the commands: the bwrap flags wrap() builds
// for each mode, and the binds protectArgs, pinDirs and controlTargets compute for read-only,
// hidden and control paths. The end-to-end file (sandbox-local.test.ts) runs commands under these
// flags; mutation testing (`pnpm mutation sandbox-local`) showed flags and refusals it did not pin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import type { SandboxMode, SandboxPolicy } from '@dsh/sandbox'
import LocalSandbox, { PID1_INIT, PID1_INIT_MERGED, controlTargets, pinDirs, protectArgs } from '../src/index.ts'

let base: string
let ws: string
let home: string
let ctx: Context

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-sandbox-args-')))
  ws = join(base, 'ws')
  home = join(base, 'home')
  for (const dir of [ws, home]) mkdirSync(dir)
  ctx = new Context()
  // bwrap runs its probe once; commands are never started here (no spawn server).
  await ctx.plugin(LocalSandbox, { runner: 'bwrap', spawnServer: false, probeCache: false })
})
afterAll(async () => {
  await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
  rmSync(base, { recursive: true, force: true })
})

function policy(mode: SandboxMode, extra: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return { mode, workspaceRoot: ws, writableRoots: mode === 'workspace-write' ? [ws] : [], network: false, ...extra }
}

const HEAD = [
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
]

describe('wrap() with bwrap', () => {
  it('workspace-write: the fixed head, no network, the writable binds, then the command behind the sh init', async () => {
    const inv = await ctx.sandbox.wrap({
      argv: ['echo', 'hi'],
      cwd: ws,
      policy: policy('workspace-write'),
      launcher: false,
    })
    expect(inv).toEqual({
      argv: [
        'bwrap',
        ...HEAD,
        '--unshare-net',
        '--bind',
        ws,
        ws,
        '--chdir',
        ws,
        '--',
        '/bin/sh',
        '-c',
        PID1_INIT,
        'dsh-sandbox-init',
        'echo',
        'hi',
      ],
      runner: 'bwrap',
      enforcement: 'enforced',
      mode: 'workspace-write',
      notes: [],
    })
  })

  it('read-only with network: no writable bind and no --unshare-net; a missing writable root is skipped', async () => {
    const read = await ctx.sandbox.wrap({
      argv: ['true'],
      cwd: ws,
      policy: policy('read-only', { network: true }),
      launcher: false,
    })
    expect(read.argv.slice(0, HEAD.length + 2)).toEqual(['bwrap', ...HEAD, '--chdir'])
    const missing = join(base, 'not-there')
    const write = await ctx.sandbox.wrap({
      argv: ['true'],
      cwd: ws,
      policy: policy('workspace-write', { writableRoots: [ws, missing] }),
      launcher: false,
    })
    expect(write.argv).not.toContain(missing)
  })

  it('mergeStderr uses the merging init and says so', async () => {
    const inv = await ctx.sandbox.wrap({
      argv: ['true'],
      cwd: ws,
      policy: policy('read-only'),
      mergeStderr: true,
      launcher: false,
    })
    expect(inv.argv).toContain(PID1_INIT_MERGED)
    expect(inv.argv).not.toContain(PID1_INIT)
    expect(inv.stderrMerged).toBe(true)
    expect(PID1_INIT_MERGED).toContain('"$@" <&3 3<&- 2>&1 &')
  })

  it('danger-full-access passes the command through unconfined', async () => {
    const argv = ['echo', 'x']
    const inv = await ctx.sandbox.wrap({ argv, cwd: ws, policy: policy('danger-full-access') })
    expect(inv).toEqual({
      argv: ['echo', 'x'],
      runner: 'none',
      enforcement: 'none',
      mode: 'danger-full-access',
      notes: [],
    })
    expect(inv.argv).not.toBe(argv)
  })

  it('refuses a writable root inside a read-only path, naming both; "/" as a read-only path is ignored', async () => {
    const inner = join(home, 'ws-inside')
    mkdirSync(inner, { recursive: true })
    const refused = await ctx.sandbox
      .wrap({
        argv: ['true'],
        cwd: inner,
        policy: policy('workspace-write', { writableRoots: [inner], readOnlyPaths: [home] }),
        launcher: false,
      })
      .catch((error: unknown) => error as { code: string; message: string })
    expect(refused).toMatchObject({
      code: 'SANDBOX_UNAVAILABLE',
      message: expect.stringContaining(`the writable root ${inner} lies inside ${home}, which must stay read-only`),
    })
    const root = await ctx.sandbox.wrap({
      argv: ['true'],
      cwd: ws,
      policy: policy('workspace-write', { readOnlyPaths: ['/'] }),
      launcher: false,
    })
    expect(root.argv.filter((arg) => arg === '/')).toEqual(['/', '/'])
  })

  it('refuses malformed requests with one line each', async () => {
    // Each with the INVALID_POLICY code (callers tell a bad request from a missing runner by it).
    const error = (request: unknown) =>
      ctx.sandbox.wrap(request as never).then(
        () => 'accepted',
        (e: { code: string; message: string }) => (e.code === 'INVALID_POLICY' ? e.message : `${e.code}: ${e.message}`),
      )
    expect(await error({ argv: ['a', 1], cwd: ws, policy: policy('read-only') })).toBe(
      'argv must be a non-empty array of strings',
    )
    expect(await error({ argv: 'ls', cwd: ws, policy: policy('read-only') })).toBe(
      'argv must be a non-empty array of strings',
    )
    expect(await error({ argv: ['ls'], cwd: 3, policy: policy('read-only') })).toBe('cwd must be an absolute path')
    expect(await error({ argv: ['ls'], cwd: ws, policy: null })).toBe('policy must be an object')
    expect(await error({ argv: ['ls'], cwd: ws, policy: { ...policy('read-only'), mode: 'yolo' } })).toBe(
      'unknown sandbox mode "yolo"',
    )
    expect(await error({ argv: ['ls'], cwd: ws, policy: { ...policy('read-only'), network: 'no' } })).toBe(
      'policy.network must be a boolean',
    )
    expect(await error({ argv: ['ls'], cwd: ws, policy: { ...policy('read-only'), writableRoots: 'x' } })).toBe(
      'policy.writableRoots must be absolute paths',
    )
    expect(
      await error({ argv: ['ls'], cwd: ws, policy: { ...policy('workspace-write'), writableRoots: [ws, '/'] } }),
    ).toBe('a writable root of / is danger-full-access; say so with the mode')
  })
})

describe('control paths behind a symbolic link whose target is missing', () => {
  const refusal = (controlPaths: string[], extra: Partial<SandboxPolicy> = {}, mode: SandboxMode = 'workspace-write') =>
    ctx.sandbox
      .wrap({ argv: ['true'], cwd: ws, policy: policy(mode, { controlPaths, ...extra }), launcher: false })
      .then(
        () => undefined,
        (error: { code: string; message: string }) => `${error.code}: ${error.message}`,
      )

  it('refuses a dangling link into a writable root, named with its target, also when the path lies below it', async () => {
    const project = join(ws, 'dangling')
    mkdirSync(project, { recursive: true })
    const link = join(project, '.git')
    symlinkSync('../gitdir-missing', link)
    const target = join(ws, 'gitdir-missing')
    const expected = `SANDBOX_UNAVAILABLE: ${link} is a symbolic link to ${target}, which does not exist and lies inside the writable root ${ws}: a confined command could create it (and plant hooks or configuration that programs outside the sandbox run), so the command was not run; create ${target} or remove the link`
    expect(await refusal([link])).toBe(expected)
    // `.git/hooks` is reached through the link: the walk up finds it.
    expect(await refusal([join(project, '.git', 'hooks'), join(project, '.mcp.json')])).toBe(expected)
    // Read-only mode has no writable root: nothing can create the target.
    expect(await refusal([link], {}, 'read-only')).toBeUndefined()
    // A writable root elsewhere does not hold the target.
    const other = join(base, 'other-root')
    mkdirSync(other, { recursive: true })
    expect(await refusal([link], { writableRoots: [other] })).toBeUndefined()
    // Once the target exists, the link is protected by binding the target.
    mkdirSync(target)
    expect(await refusal([link])).toBeUndefined()
    rmSync(target, { recursive: true })
    rmSync(project, { recursive: true })
  })

  it('leaves alone links pointing outside every writable root, missing paths, files on the way and the root itself', async () => {
    const project = join(ws, 'plain')
    mkdirSync(project, { recursive: true })
    symlinkSync(join(base, 'nowhere'), join(project, '.env'))
    writeFileSync(join(project, '.git'), 'gitdir: /somewhere\n')
    symlinkSync(join(ws, 'missing-too'), join(base, 'root-link'))
    expect(
      await refusal([
        join(project, '.env'), // dangling, but outside the writable roots
        join(project, '.mcp.json'), // missing: nothing to follow
        join(project, '.git', 'hooks'), // ENOTDIR: a .git file on the way
        join(base, 'root-link'), // not inside a writable root at all
        ws, // a writable root itself
      ]),
    ).toBeUndefined()
    // A writable root that is itself a dangling link is not a control path's problem either.
    expect(await refusal([join(project, '.env')], { writableRoots: [ws, join(base, 'root-link')] })).toBeUndefined()
    rmSync(project, { recursive: true })
    rmSync(join(base, 'root-link'))
  })
})

describe('protectArgs', () => {
  it('a read-only path is bound read-only; one inside another is covered by it', () => {
    const a = join(base, 'ro-a')
    mkdirSync(join(a, 'inner'), { recursive: true })
    expect(protectArgs([a, join(a, 'inner'), a], [], [])).toEqual(['--ro-bind', a, a])
  })

  it('a read-only directory holding hidden entries becomes a read-only tmpfs with the other entries bound back', () => {
    const dsh = join(base, 'dsh-home')
    mkdirSync(join(dsh, 'sessions'), { recursive: true })
    writeFileSync(join(dsh, '.credentials.yaml'), 'k: v')
    writeFileSync(join(dsh, 'config.yml'), 'x')
    const args = protectArgs([dsh], [join(dsh, '.credentials.yaml'), join(dsh, '.env')], [])
    expect(args.slice(0, 2)).toEqual(['--tmpfs', dsh])
    expect(args.slice(-2)).toEqual(['--remount-ro', dsh])
    const bound = args.slice(2, -2)
    expect(bound).toEqual(
      expect.arrayContaining([
        '--ro-bind-try',
        join(dsh, 'config.yml'),
        join(dsh, 'config.yml'),
        '--ro-bind-try',
        join(dsh, 'sessions'),
        join(dsh, 'sessions'),
      ]),
    )
    expect(bound).toHaveLength(6)
    expect(args).not.toContain(join(dsh, '.credentials.yaml'))
  })

  it('a hidden file elsewhere is covered by /dev/null, a hidden directory by an empty read-only tmpfs; a missing one is skipped', () => {
    const secret = join(base, 'secret.txt')
    writeFileSync(secret, 's')
    const secrets = join(base, 'secrets')
    mkdirSync(secrets)
    expect(protectArgs([], [secret, secrets, join(base, 'nope')], [])).toEqual([
      '--ro-bind',
      '/dev/null',
      secret,
      '--tmpfs',
      secrets,
      '--remount-ro',
      secrets,
    ])
    // A read-only file (not a directory) with a hidden path "inside" it is simply bound read-only.
    expect(protectArgs([secret], [join(secret, 'x')], [])).toEqual(['--ro-bind', secret, secret])
  })

  it('a missing read-only path under a writable root is created (0700) and its parents pinned; one elsewhere is left alone', () => {
    const root = join(base, 'wr')
    mkdirSync(root)
    const deep = join(root, 'a', 'b', '.dsh')
    const args = protectArgs([deep, join(base, 'elsewhere', 'x')], [], [root])
    expect(statSync(deep).mode & 0o777).toBe(0o700)
    expect(existsSync(join(base, 'elsewhere'))).toBe(false)
    expect(args).toEqual([
      '--bind',
      join(root, 'a'),
      join(root, 'a'),
      '--bind',
      join(root, 'a', 'b'),
      join(root, 'a', 'b'),
      '--ro-bind',
      deep,
      deep,
    ])
  })

  it('control paths: existing ones under a writable root are bound read-only after the pins; missing ones are not', () => {
    const root = join(base, 'ctl')
    mkdirSync(join(root, '.git', 'hooks'), { recursive: true })
    writeFileSync(join(root, '.mcp.json'), '{}')
    const args = protectArgs(
      [],
      [],
      [root],
      [join(root, '.mcp.json'), join(root, '.git', 'hooks'), join(root, '.codex')],
    )
    expect(args).toEqual([
      '--bind',
      join(root, '.git'),
      join(root, '.git'),
      '--ro-bind',
      join(root, '.mcp.json'),
      join(root, '.mcp.json'),
      '--ro-bind',
      join(root, '.git', 'hooks'),
      join(root, '.git', 'hooks'),
    ])
  })
})

describe('controlTargets and pinDirs', () => {
  it('control targets: real paths under a writable root, outside the read-only paths, outermost only', () => {
    const root = join(base, 'targets')
    const elsewhere = join(base, 'targets-elsewhere')
    mkdirSync(join(root, '.claude', 'commands'), { recursive: true })
    mkdirSync(elsewhere)
    writeFileSync(join(elsewhere, 'real.json'), '{}')
    symlinkSync(join(elsewhere, 'real.json'), join(root, '.mcp.json'))
    mkdirSync(join(root, '.dsh'))
    expect(
      controlTargets(
        [
          join(root, '.claude'),
          join(root, '.claude', 'commands'),
          join(root, '.mcp.json'),
          join(root, '.dsh'),
          join(root, 'missing'),
          '/',
        ],
        [root, elsewhere],
        [join(root, '.dsh')],
      ),
    ).toEqual([join(root, '.claude'), join(elsewhere, 'real.json')])
    // Outside every writable root: nothing to protect.
    expect(controlTargets([join(root, '.claude')], [elsewhere])).toEqual([])
  })

  it('pins every directory between the outermost writable root and each protected path, shallowest first', () => {
    expect(pinDirs(['/w/a/b/c', '/w/a/x'], ['/w', '/w/a'])).toEqual(['/w/a', '/w/a/b'])
    expect(pinDirs(['/w/z/f', '/w/b/f'], ['/w'])).toEqual(['/w/b', '/w/z'])
    expect(pinDirs(['/w'], ['/w'])).toEqual([])
    expect(pinDirs(['/other/x/y'], ['/w'])).toEqual([])
    expect(pinDirs(['/w/f'], ['/w'])).toEqual([])
    // A root that only shares a prefix with the path is not its root.
    expect(pinDirs(['/work2/a/f'], ['/work'])).toEqual([])
  })
})
