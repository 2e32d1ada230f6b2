import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import PermissionPresetService from '@dsh/permission-presets'
import { createHarness } from '@dsh/agent-loop-testkit'
import { PROJECT_CONTROL_PATHS, SandboxService, type SandboxInvocation, type SandboxRunnerInfo } from '@dsh/sandbox'
import SandboxPolicyService, { ANNOUNCE_SOURCE, projectControlPaths } from '../src/index.ts'

/** A provider of the `ctx.sandbox` contract that reports runner limitations (as the Landlock fallback does). */
class NotedSandbox extends SandboxService {
  async describe(): Promise<SandboxRunnerInfo> {
    return {
      runner: 'landlock',
      rejected: [{ runner: 'bwrap', reason: 'no user namespaces' }],
      notes: ['Runner note: setsid survivors are not ended.'],
    }
  }
  async wrap(): Promise<SandboxInvocation> {
    throw new Error('not used')
  }
}

let base: string
let ws: string
let other: string
let temp: string

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-sandbox-policy-')))
  ws = join(base, 'ws')
  other = join(base, 'other')
  temp = join(base, 'tmp')
  for (const dir of [ws, other, temp]) mkdirSync(dir)
  symlinkSync(ws, join(base, 'ws-link'))
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

async function boot(config: Record<string, unknown> = {}, extra: (ctx: Context) => Promise<void> = async () => {}) {
  const ctx = new Context()
  await ctx.plugin(SessionStore)
  await extra(ctx)
  await ctx.plugin(SandboxPolicyService, { tempDirs: [temp], fallbackRoot: other, ...config })
  return ctx
}

describe('resolution', () => {
  it('defaults to workspace-write over the session cwd (symlinks resolved) and the temp dirs, network off', async () => {
    const ctx = await boot()
    const session = ctx.sessions.create({ cwd: join(base, 'ws-link') })
    expect(ctx.sandboxPolicy.resolve({ sessionId: session.id })).toEqual({
      mode: 'workspace-write',
      workspaceRoot: ws,
      writableRoots: [ws, temp],
      network: false,
      readOnlyPaths: expect.any(Array),
      hiddenPaths: expect.any(Array),
      controlPaths: expect.any(Array),
    })
    expect(ctx.sandboxPolicy.resolve({ cwd: other }).workspaceRoot).toBe(other)
    expect(ctx.sandboxPolicy.resolve().workspaceRoot).toBe(other)
  })

  it('read-only has no writable roots; danger-full-access has network', async () => {
    const ro = await boot({ defaultMode: 'read-only', network: true })
    expect(ro.sandboxPolicy.resolve({ cwd: ws })).toEqual({
      mode: 'read-only',
      workspaceRoot: ws,
      writableRoots: [],
      network: true,
      readOnlyPaths: expect.any(Array),
      hiddenPaths: expect.any(Array),
      controlPaths: expect.any(Array),
    })
    const full = await boot({ defaultMode: 'danger-full-access' })
    expect(full.sandboxPolicy.resolve({ cwd: ws })).toEqual({
      mode: 'danger-full-access',
      workspaceRoot: ws,
      writableRoots: [],
      network: true,
    })
  })

  it('fixes a session workspace root at first use', async () => {
    const ctx = await boot()
    expect(ctx.sandboxPolicy.workspaceRoot({ sessionId: 'unknown-1', cwd: ws })).toBe(ws)
    expect(ctx.sandboxPolicy.workspaceRoot({ sessionId: 'unknown-1', cwd: other })).toBe(ws)
  })

  it('a per-session override wins, is logged, and survives a new service over the same log', async () => {
    const ctx = await boot()
    const a = ctx.sessions.create({ cwd: ws })
    const b = ctx.sessions.create({ cwd: ws })
    ctx.sandboxPolicy.setMode(a.id, 'read-only')
    expect(ctx.sandboxPolicy.modeFor(a.id)).toBe('read-only')
    expect(ctx.sandboxPolicy.modeFor(b.id)).toBe('workspace-write')
    expect(a.last('sandbox/mode')?.data).toEqual({ mode: 'read-only' })

    const fresh = new Context()
    fresh.provide('sessions', ctx.sessions)
    await fresh.plugin(SandboxPolicyService, { tempDirs: [temp] })
    expect(fresh.sandboxPolicy.modeFor(a.id)).toBe('read-only')
    ctx.sandboxPolicy.setMode(a.id, null)
    expect(ctx.sandboxPolicy.modeFor(a.id)).toBe('workspace-write')
  })

  it('follows permission presets when loaded; an explicit override still wins', async () => {
    const ctx = await boot({}, async (c) => {
      await c.plugin(PermissionPresetService, { default: 'danger-full-access', env: '' } as never)
    })
    const session = ctx.sessions.create({ cwd: ws })
    expect(ctx.sandboxPolicy.modeFor(session.id)).toBe('danger-full-access')
    expect(ctx.sandboxPolicy.modeFor()).toBe('danger-full-access')
    ctx.permissionPresets.set(session.id, 'workspace-write')
    expect(ctx.sandboxPolicy.modeFor(session.id)).toBe('workspace-write')
    ctx.sandboxPolicy.setMode(session.id, 'read-only')
    expect(ctx.sandboxPolicy.modeFor(session.id)).toBe('read-only')
  })

  it('looks an optional service up once, and again after it changed (no stale preset service)', async () => {
    const ctx = await boot()
    // Count lookups of permissionPresets through the reflect service (what ctx.get uses).
    const reflect = ctx.reflect as unknown as { get(name: string, strict?: boolean): unknown }
    const get = reflect.get
    let lookups = 0
    reflect.get = function (name: string, strict?: boolean) {
      if (name === 'permissionPresets') lookups++
      return get.call(this, name, strict)
    }
    expect(ctx.sandboxPolicy.modeFor()).toBe('workspace-write')
    expect(ctx.sandboxPolicy.modeFor()).toBe('workspace-write')
    expect(ctx.sandboxPolicy.resolve({ cwd: ws }).mode).toBe('workspace-write')
    expect(lookups).toBe(1)
    // A presets service that appears later is seen at once.
    const fiber = ctx.plugin(PermissionPresetService, { default: 'danger-full-access', env: '' } as never)
    await fiber
    expect(ctx.sandboxPolicy.modeFor()).toBe('danger-full-access')
    expect(ctx.sandboxPolicy.modeFor()).toBe('danger-full-access')
    expect(lookups).toBe(2)
    // And one that goes away is not used any more.
    await fiber.dispose()
    expect(ctx.sandboxPolicy.modeFor()).toBe('workspace-write')
    expect(lookups).toBe(3)
  })

  it('keeps the dsh home read-only and its credential files unreadable in confining modes', async () => {
    const home = join(base, 'home')
    mkdirSync(home, { recursive: true })
    const ctx = await boot({ readOnlyPaths: [other], hiddenPaths: [join(other, 'secret')] })
    ctx.provide('homePaths', { home } as never)
    for (const mode of ['workspace-write', 'read-only'] as const) {
      const session = ctx.sessions.create({ cwd: ws })
      ctx.sandboxPolicy.setMode(session.id, mode)
      const policy = ctx.sandboxPolicy.resolve({ sessionId: session.id })
      expect(policy.readOnlyPaths).toEqual([home, other])
      expect(policy.hiddenPaths).toEqual([join(home, '.credentials.yaml'), join(home, '.env'), join(other, 'secret')])
    }
    expect(ctx.sandboxPolicy.resolve({ cwd: ws })).toMatchObject({ readOnlyPaths: [home, other] })
    // A credential file that is a link (a dotfiles layout) is hidden where it really lies too, and
    // the harness refuses to read that real file directly.
    const dotfiles = join(base, 'dotfiles')
    mkdirSync(dotfiles, { recursive: true })
    writeFileSync(join(dotfiles, 'dsh.env'), 'SECRET=1\n')
    symlinkSync(join(dotfiles, 'dsh.env'), join(home, '.env'))
    const confined = ctx.sessions.create({ cwd: ws })
    ctx.sandboxPolicy.setMode(confined.id, 'workspace-write')
    const linked = ctx.sandboxPolicy.resolve({ sessionId: confined.id })
    expect(linked.hiddenPaths).toEqual([
      join(home, '.credentials.yaml'),
      join(home, '.env'),
      join(dotfiles, 'dsh.env'),
      join(other, 'secret'),
    ])
    expect(ctx.sandboxPolicy.readRefusal(join(dotfiles, 'dsh.env'), { sessionId: confined.id })).toMatch(
      /dsh's credentials/,
    )
    for (const config of [{ readOnlyPaths: ['rel'] }, { hiddenPaths: ['rel/x'] }]) {
      const bad = new Context()
      // The fiber settles with the config error: wait for that, not for time.
      await expect(bad.plugin(SandboxPolicyService, config as never)).rejects.toThrow(
        /must hold absolute paths, got "rel/,
      )
      expect(bad.get('sandboxPolicy')).toBeUndefined()
    }
  })

  it('lists the project control files of the workspace and of each configured writable root, the real git directories included', async () => {
    const git = (cwd: string, ...args: string[]) =>
      execFileSync('git', ['-C', cwd, ...args], {
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH,
          HOME: base,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_AUTHOR_NAME: 't',
          GIT_AUTHOR_EMAIL: 't@t',
          GIT_COMMITTER_NAME: 't',
          GIT_COMMITTER_EMAIL: 't@t',
          GIT_ALLOW_PROTOCOL: 'file',
        },
      })
    const repo = join(base, 'repo')
    const lib = join(base, 'lib')
    const tree = join(base, 'tree')
    const extra = join(base, 'extra')
    for (const dir of [repo, lib, extra]) mkdirSync(dir)
    git(lib, 'init', '-q')
    git(lib, 'commit', '-q', '--allow-empty', '-m', 'lib')
    git(repo, 'init', '-q')
    git(repo, 'commit', '-q', '--allow-empty', '-m', 'repo')
    git(repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'vendor/lib')
    git(repo, 'worktree', 'add', '-q', tree)
    const ctx = await boot({ writableRoots: [extra] })

    const main = ctx.sandboxPolicy.resolve({ cwd: repo }).controlPaths!
    for (const entry of [
      '.mcp.json',
      '.claude',
      '.codex',
      '.dsh',
      '.env',
      '.git/hooks',
      '.git/config',
      '.git/config.worktree',
      '.git/commondir',
    ])
      expect(main).toContain(join(repo, entry))
    // The submodule's git directory lies under .git/modules; the linked worktree's under .git/worktrees.
    for (const dir of [join(repo, '.git', 'modules', 'vendor', 'lib'), join(repo, '.git', 'worktrees', 'tree')]) {
      for (const entry of ['hooks', 'config', 'config.worktree', 'commondir']) expect(main).toContain(join(dir, entry))
    }
    // A directory .git is not itself a control path (git must write its index and objects).
    expect(main).not.toContain(join(repo, '.git'))
    // Each configured writable root is a project too; a temp dir is not.
    expect(main).toContain(join(extra, '.mcp.json'))
    expect(main.some((path) => path.startsWith(temp))).toBe(false)

    // A worktree's .git is a file: it and the directory it points to (and the common one) are listed.
    const linked = ctx.sandboxPolicy.resolve({ cwd: tree }).controlPaths!
    expect(linked).toContain(join(tree, '.git'))
    for (const path of [
      join(repo, '.git', 'worktrees', 'tree', 'config.worktree'),
      join(repo, '.git', 'worktrees', 'tree', 'commondir'),
      join(repo, '.git', 'config'),
      join(repo, '.git', 'hooks'),
    ]) {
      expect(linked).toContain(path)
    }
    // So is a submodule's checkout, whose .git file points into the parent's .git/modules.
    const sub = ctx.sandboxPolicy.resolve({ cwd: join(repo, 'vendor', 'lib') }).controlPaths!
    expect(sub).toContain(join(repo, 'vendor', 'lib', '.git'))
    expect(sub).toContain(join(repo, '.git', 'modules', 'vendor', 'lib', 'hooks'))
    // A directory of checkouts: the repositories one level down are covered too (not their missing .git).
    const checkouts = join(base, 'checkouts')
    mkdirSync(join(checkouts, 'plain'), { recursive: true })
    git(base, 'clone', '-q', repo, join(checkouts, 'clone'))
    const many = ctx.sandboxPolicy.resolve({ cwd: checkouts }).controlPaths!
    for (const entry of ['hooks', 'config']) expect(many).toContain(join(checkouts, 'clone', '.git', entry))
    expect(many.some((path) => path.startsWith(join(checkouts, 'plain')))).toBe(false)
    // One cloned later is seen at once (the directory's mtime changed).
    git(base, 'clone', '-q', repo, join(checkouts, 'later'))
    expect(ctx.sandboxPolicy.resolve({ cwd: checkouts }).controlPaths).toContain(
      join(checkouts, 'later', '.git', 'hooks'),
    )
    // No repository at all: .git itself (a directory or a pointer file one could create) is listed.
    expect(ctx.sandboxPolicy.resolve({ cwd: other }).controlPaths).toContain(join(other, '.git'))
    expect(projectControlPaths(other)).toEqual(
      expect.arrayContaining(PROJECT_CONTROL_PATHS.map((entry) => join(other, entry))),
    )
  })

  it('rejects bad config and bad calls', async () => {
    for (const config of [
      { tempDirs: ['tmp'] },
      { writableRoots: ['rel/dir'] },
      { fallbackRoot: 'x' },
      { defaultMode: 'yolo' },
    ]) {
      const ctx = new Context()
      await expect(ctx.plugin(SandboxPolicyService, config as never)).rejects.toThrow(
        /sandbox-policy: .* absolute path|yolo|defaultMode/,
      )
      expect(ctx.get('sandboxPolicy')).toBeUndefined()
    }
    const ctx = await boot()
    expect(() => ctx.sandboxPolicy.setMode('s', 'yolo' as never)).toThrow(/unknown mode "yolo"/)
    expect(() => ctx.sandboxPolicy.setMode('', 'read-only')).toThrow(TypeError)
  })
})

describe('model experience', () => {
  it('announces the policy before the first request and again only when it changes', async () => {
    const harness = await createHarness({
      cwd: ws,
      script: [{ text: 'one' }, { text: 'two' }, { text: 'three' }],
      plugins: [[SandboxPolicyService, { tempDirs: [temp] }]],
    })
    await harness.prompt('first')
    await harness.prompt('second')
    harness.ctx.sandboxPolicy.setMode(harness.session.id, 'read-only')
    await harness.prompt('third')
    const announcements = harness.session.events.filter(
      (e) =>
        e.type === 'user/message' &&
        (e.data as { source: { plugin?: string } }).source.plugin === ANNOUNCE_SOURCE.plugin,
    )
    expect(announcements).toHaveLength(2)
    const first = harness.model.requests[0].messages
    expect(JSON.stringify(first[0])).toContain(
      `[sandbox policy] workspace-write: commands and file edits may write only under ${ws}, ${temp}; network access is off; project control files (.mcp.json, .claude, .codex, .dsh, .env, .git/hooks, .git/config) stay read-only.`,
    )
    expect(JSON.stringify(first[1])).toContain('first')
    // The second request's history extends the first: the prefix (and the provider's cache) survives.
    expect(JSON.stringify(harness.model.requests[1].messages.slice(0, first.length))).toBe(JSON.stringify(first))
    expect(JSON.stringify(harness.model.requests[2].messages.at(-2))).toContain('[sandbox policy] read-only')
    await harness.dispose()
  })

  it("states what the sandbox runner cannot confine (the Landlock fallback's notes)", async () => {
    const harness = await createHarness({
      cwd: ws,
      script: [{ text: 'one' }, { text: 'two' }],
      plugins: [
        [NotedSandbox, {}],
        [SandboxPolicyService, { tempDirs: [temp] }],
      ],
    })
    await harness.prompt('first')
    await harness.prompt('second')
    const first = JSON.stringify(harness.model.requests[0].messages[0])
    expect(first).toContain('[sandbox policy] workspace-write')
    expect(first).toContain('Runner note: setsid survivors are not ended.')
    // Stable text: it is not announced again on the next request.
    expect(
      harness.model.requests[1].messages.filter((m) => JSON.stringify(m).includes('[sandbox policy]')),
    ).toHaveLength(1)
    await harness.dispose()
  })

  it('does not repeat an announcement already in a resumed log', async () => {
    const harness = await createHarness({
      cwd: ws,
      script: [{ text: 'a' }, { text: 'b' }],
      plugins: [[SandboxPolicyService, { tempDirs: [temp] }]],
    })
    await harness.prompt('hello')
    const resumed = await createHarness({
      cwd: ws,
      session: harness.session,
      script: [{ text: 'c' }],
      plugins: [[SandboxPolicyService, { tempDirs: [temp] }]],
    })
    await resumed.prompt('again')
    const count = harness.session.events.filter(
      (e) =>
        e.type === 'user/message' && (e.data as { source: { plugin?: string } }).source.plugin === 'sandbox-policy',
    ).length
    expect(count).toBe(1)
    await resumed.dispose()
    await harness.dispose()
  })

  it('announce: false adds nothing', async () => {
    const harness = await createHarness({
      cwd: ws,
      script: [{ text: 'a' }],
      plugins: [[SandboxPolicyService, { tempDirs: [temp], announce: false }]],
    })
    await harness.prompt('hello')
    expect(harness.model.requests[0].messages).toHaveLength(1)
    await harness.dispose()
  })
})

it('unloading the plugin removes the announcement listener', async () => {
  const harness = await createHarness({ cwd: ws, script: [{ text: 'a' }, { text: 'b' }] })
  const mounted = await harness.mount(SandboxPolicyService, { tempDirs: [temp] })
  await harness.prompt('one')
  await mounted.dispose()
  harness.session.append('sandbox/mode', { mode: 'read-only' })
  await harness.prompt('two')
  expect(harness.model.requests[1].messages.filter((m) => JSON.stringify(m).includes('[sandbox policy]'))).toHaveLength(
    1,
  )
  await harness.dispose()
})
