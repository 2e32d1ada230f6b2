// Edges of the sandbox policy that mutation testing (`pnpm mutation sandbox-policy`) showed no other
// test pinned: control files reached through symlinks, a worktree pointer file without a trailing
// newline, which home is protected when only $DSH_HOME names it, a preset service answering
// something that is not a mode, the model-facing statement per mode (runner notes included), and
// setMode's refusals.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import { createHarness } from '@dsh/agent-loop-testkit'
import { SandboxService, type SandboxInvocation, type SandboxRunnerInfo } from '@dsh/sandbox'
import SandboxPolicyService, { projectControlPaths } from '../src/index.ts'

let base: string
let temp: string
const contexts: Context[] = []

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-sandbox-policy-edges-')))
  temp = join(base, 'tmp')
  mkdirSync(temp)
})
afterEach(async () => {
  for (const ctx of contexts.splice(0)) await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

async function boot(config: Record<string, unknown> = {}, extra: (ctx: Context) => Promise<void> = async () => {}) {
  const ctx = new Context()
  contexts.push(ctx)
  await ctx.plugin(SessionStore)
  await extra(ctx)
  await ctx.plugin(SandboxPolicyService, { tempDirs: [temp], fallbackRoot: base, ...config })
  return ctx
}

const dir = (...parts: string[]) => {
  const path = join(base, ...parts)
  mkdirSync(path, { recursive: true })
  return path
}

describe('project control paths', () => {
  it('a control file that is a symlink is listed under its own path and its real path', () => {
    const ws = dir('linked-ws')
    const elsewhere = dir('elsewhere')
    writeFileSync(join(elsewhere, 'mcp.json'), '{}')
    symlinkSync(join(elsewhere, 'mcp.json'), join(ws, '.mcp.json'))
    symlinkSync(elsewhere, join(ws, '.claude'))
    const paths = projectControlPaths(ws)
    expect(paths).toEqual(
      expect.arrayContaining([join(ws, '.mcp.json'), join(elsewhere, 'mcp.json'), join(ws, '.claude'), elsewhere]),
    )
    // An entry that does not exist is listed once, as itself.
    expect(paths.filter((path) => path.endsWith('.codex'))).toEqual([join(ws, '.codex')])
  })

  it('a .git pointer file without a trailing newline still leads to the git directory it names', () => {
    const ws = dir('pointer-ws')
    const gitDir = dir('pointer-gitdir')
    mkdirSync(join(gitDir, 'hooks'))
    writeFileSync(join(ws, '.git'), `gitdir: ${gitDir}`)
    const paths = projectControlPaths(ws)
    expect(paths).toContain(join(ws, '.git'))
    expect(paths).toEqual(expect.arrayContaining([join(gitDir, 'hooks'), join(gitDir, 'config')]))
    // A relative pointer is resolved against the work tree.
    const relative = dir('pointer-rel')
    writeFileSync(join(relative, '.git'), 'gitdir: ../pointer-gitdir\n')
    expect(projectControlPaths(relative)).toContain(join(gitDir, 'hooks'))
  })

  it('a checkout one level down is covered through its .git file, and node_modules is not searched', () => {
    const checkouts = dir('checkouts-edges')
    const gitDir = dir('child-gitdir')
    const child = dir('checkouts-edges', 'child')
    writeFileSync(join(child, '.git'), `gitdir: ${gitDir}\n`)
    const vendored = dir('checkouts-edges', 'node_modules')
    execFileSync('git', ['init', '-q', vendored], {
      env: { PATH: process.env.PATH, HOME: base, GIT_CONFIG_NOSYSTEM: '1' },
    })
    const paths = projectControlPaths(checkouts)
    expect(paths).toEqual(expect.arrayContaining([join(child, '.git'), join(gitDir, 'hooks')]))
    expect(paths.some((path) => path.startsWith(vendored))).toBe(false)
  })
})

describe('the protected dsh home', () => {
  const saved = process.env.DSH_HOME
  afterEach(() => {
    if (saved === undefined) delete process.env.DSH_HOME
    else process.env.DSH_HOME = saved
  })

  it('follows $DSH_HOME (trimmed, ~ expanded), else ~/.dsh, when no home-paths service is loaded', async () => {
    const cases: Array<[string | undefined, string]> = [
      [`  ${join(base, 'home-a')}  `, join(base, 'home-a')],
      ['~', homedir()],
      ['~/dsh-home-b', join(homedir(), 'dsh-home-b')],
      ['   ', join(homedir(), '.dsh')],
      [undefined, join(homedir(), '.dsh')],
    ]
    for (const [value, home] of cases) {
      if (value === undefined) delete process.env.DSH_HOME
      else process.env.DSH_HOME = value
      const ctx = await boot()
      const { readOnlyPaths, hiddenPaths } = ctx.sandboxPolicy.protectedPaths()
      expect(readOnlyPaths[0], String(value)).toBe(realpathOrSelf(home))
      expect(hiddenPaths.slice(0, 2)).toEqual([
        join(realpathOrSelf(home), '.credentials.yaml'),
        join(realpathOrSelf(home), '.env'),
      ])
    }
  })
})

function realpathOrSelf(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

describe('modes', () => {
  it('a permission-preset service that answers something other than a mode leaves the default in force', async () => {
    let answer: unknown = 'read-only'
    const ctx = await boot({ defaultMode: 'workspace-write' }, async (c) => {
      c.provide('permissionPresets')
      ;(c as unknown as { permissionPresets: unknown }).permissionPresets = { modeFor: () => answer }
    })
    expect(ctx.sandboxPolicy.modeFor('s1')).toBe('read-only')
    answer = 'yolo'
    expect(ctx.sandboxPolicy.modeFor('s1')).toBe('workspace-write')
    answer = undefined
    expect(ctx.sandboxPolicy.modeFor()).toBe('workspace-write')
  })

  it('tells the model how a blocked action surfaces, except when nothing is confined', async () => {
    const ctx = await boot()
    const tail =
      ' Reading is always allowed. A command or edit the sandbox blocks fails with a permission error; the result then says so and how to ask the user for an exception.'
    for (const mode of ['workspace-write', 'read-only'] as const) {
      ctx.sandboxPolicy.setMode('s-' + mode, mode)
      const text = ctx.sandboxPolicy.describe({ sessionId: 's-' + mode, cwd: base })
      expect(text.startsWith(`[sandbox policy] ${mode}`)).toBe(true)
      expect(text.endsWith(tail)).toBe(true)
    }
    ctx.sandboxPolicy.setMode('s-full', 'danger-full-access')
    const full = ctx.sandboxPolicy.describe({ sessionId: 's-full', cwd: base })
    expect(full.startsWith('[sandbox policy] danger-full-access')).toBe(true)
    expect(full).not.toContain('Reading is always allowed')
  })

  it('setMode refuses a missing session id and an unknown mode with one clear line each', async () => {
    const ctx = await boot()
    expect(() => ctx.sandboxPolicy.setMode(undefined as never, 'read-only')).toThrow(
      /^sandboxPolicy\.setMode: sessionId must be a non-empty string$/,
    )
    expect(() => ctx.sandboxPolicy.setMode(7 as never, 'read-only')).toThrow(
      /^sandboxPolicy\.setMode: sessionId must be a non-empty string$/,
    )
    expect(() => ctx.sandboxPolicy.setMode('s1', 'yolo' as never)).toThrow(
      /^sandboxPolicy\.setMode: unknown mode "yolo" \(valid: read-only, workspace-write, danger-full-access\)$/,
    )
    const changes: unknown[] = []
    ctx.on('sandbox/mode-changed', (...args: unknown[]) => void changes.push(args))
    ctx.sandboxPolicy.setMode('s1', 'read-only')
    ctx.sandboxPolicy.setMode('s1', null)
    expect(changes).toEqual([
      ['s1', 'read-only'],
      ['s1', 'workspace-write'],
    ])
  })
})

/** A `ctx.sandbox` provider whose runner reports notes, one of them not text. */
class NotingSandbox extends SandboxService {
  async describe(): Promise<SandboxRunnerInfo> {
    return { runner: 'landlock', rejected: [], notes: ['Note one.', 42 as never, 'Note two.'] }
  }
  async wrap(): Promise<SandboxInvocation> {
    throw new Error('not used')
  }
}

describe('the announcement', () => {
  it("appends the runner's text notes, space-separated, only when something is confined", async () => {
    const ws = dir('announce-ws')
    const harness = await createHarness({
      cwd: ws,
      script: [{ text: 'a' }],
      plugins: [
        [NotingSandbox, {}],
        [SandboxPolicyService, { tempDirs: [temp] }],
      ],
    })
    const full = await createHarness({
      cwd: ws,
      script: [{ text: 'b' }],
      plugins: [
        [NotingSandbox, {}],
        [SandboxPolicyService, { tempDirs: [temp] }],
      ],
    })
    try {
      await harness.prompt('go')
      const confined = JSON.stringify(harness.model.requests[0].messages[0])
      expect(confined).toContain('for an exception. Note one. Note two.')
      expect(confined).not.toContain('42')
      full.ctx.sandboxPolicy.setMode(full.session.id, 'danger-full-access')
      await full.prompt('go')
      const open = JSON.stringify(full.model.requests[0].messages[0])
      expect(open).toContain('[sandbox policy] danger-full-access')
      expect(open).not.toContain('Note one.')
    } finally {
      await full.dispose()
      await harness.dispose()
    }
  })
})
