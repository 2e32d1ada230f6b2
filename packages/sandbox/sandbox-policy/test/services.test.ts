// How sandbox-policy meets the optional services around it, and the exact words the model is told:
// `sandbox/mode` registered with session persistence whenever that arrives, the announcement made
// before any other pre-step listener runs, preset and home services of the wrong shape ignored, no
// session store at all, the statement with no runner, a failing runner or a runner without notes
// (no stray space, no invented note), and which logged messages count as an earlier announcement.
// Then the harness-read edges: every root named, symlink loops, dangling parents, procfs mounted
// under another name. Mutation testing (`pnpm mutation sandbox-policy`) showed these unpinned.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import type { PreStepDecision, PreStepPayload } from '@dsh/agent'
import SessionStore from '@dsh/session'
import { createHarness } from '@dsh/agent-loop-testkit'
import {
  describePolicy,
  SandboxService,
  type SandboxInvocation,
  type SandboxPolicy,
  type SandboxRunnerInfo,
} from '@dsh/sandbox'
import SandboxPolicyService, {
  ANNOUNCE_SOURCE,
  harnessReadRefusal,
  isProcessEntry,
  realLocation,
} from '../src/index.ts'

let base: string
let temp: string
const contexts: Context[] = []

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-policy-services-')))
  temp = join(base, 'tmp')
  mkdirSync(temp)
})
afterEach(async () => {
  for (const ctx of contexts.splice(0)) await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

const dir = (...parts: string[]) => {
  const path = join(base, ...parts)
  mkdirSync(path, { recursive: true })
  return path
}

/** `name` provided on `ctx` as a plain object (what a foreign provider of that service hands out). */
function provide(ctx: Context, name: string, value: unknown) {
  ctx.provide(name)
  ;(ctx as unknown as Record<string, unknown>)[name] = value
}

async function boot(config: Record<string, unknown> = {}, before: (ctx: Context) => void = () => {}) {
  const ctx = new Context()
  contexts.push(ctx)
  await ctx.plugin(SessionStore)
  before(ctx)
  await ctx.plugin(SandboxPolicyService, { tempDirs: [temp], fallbackRoot: base, ...config })
  return ctx
}

describe('optional services', () => {
  it('registers sandbox/mode with session persistence when persistence arrives after it', async () => {
    const ctx = await boot()
    const registered: string[] = []
    provide(ctx, 'sessionPersistence', {
      registerEventType: (type: string) => {
        registered.push(type)
        return () => {}
      },
    })
    await expect.poll(() => registered).toEqual(['sandbox/mode'])
  })

  it('a permission-preset service without modeFor leaves the default in force', async () => {
    const ctx = await boot({ defaultMode: 'read-only' }, (c) => provide(c, 'permissionPresets', { modeFor: 'nope' }))
    expect(ctx.sandboxPolicy.modeFor('s1')).toBe('read-only')
  })

  it('a home-paths service without a home string falls back to $DSH_HOME', async () => {
    const saved = process.env.DSH_HOME
    process.env.DSH_HOME = join(base, 'env-home')
    try {
      const ctx = await boot({}, (c) => provide(c, 'homePaths', { home: 42 }))
      expect(ctx.sandboxPolicy.protectedPaths().readOnlyPaths[0]).toBe(join(base, 'env-home'))
    } finally {
      if (saved === undefined) delete process.env.DSH_HOME
      else process.env.DSH_HOME = saved
    }
  })

  it('works without a session store: overrides and policies still resolve', async () => {
    const ctx = new Context()
    contexts.push(ctx)
    await ctx.plugin(SandboxPolicyService, { tempDirs: [temp], fallbackRoot: base })
    ctx.sandboxPolicy.setMode('loose', 'read-only')
    expect(ctx.sandboxPolicy.modeFor('loose')).toBe('read-only')
    expect(ctx.sandboxPolicy.resolve({ sessionId: 'loose', cwd: base })).toMatchObject({
      mode: 'read-only',
      workspaceRoot: base,
    })
  })

  it('readRefusal resolves the call’s policy first: the credential files are refused only when confined', async () => {
    const home = dir('svc-home')
    const ctx = await boot({}, (c) => provide(c, 'homePaths', { home }))
    const ws = dir('svc-ws')
    expect(ctx.sandboxPolicy.readRefusal(join(home, '.env'), { cwd: ws })).toBe(
      `it is under ${join(home, '.env')}, dsh's credentials, which are not readable in workspace-write mode`,
    )
    ctx.sandboxPolicy.setMode('free', 'danger-full-access')
    expect(ctx.sandboxPolicy.readRefusal(join(home, '.env'), { sessionId: 'free', cwd: ws })).toBeUndefined()
  })

  it('the statement in danger-full-access is the policy and nothing more', async () => {
    const ctx = await boot({ defaultMode: 'danger-full-access' })
    const policy = ctx.sandboxPolicy.resolve({ cwd: base })
    expect(ctx.sandboxPolicy.describe({ cwd: base })).toBe(`[sandbox policy] ${describePolicy(policy)}`)
  })
})

/** A `ctx.sandbox` provider whose describe() answers `info` (or throws it when it is an Error). */
function runnerSaying(info: SandboxRunnerInfo | Error) {
  return class extends SandboxService {
    async describe(): Promise<SandboxRunnerInfo> {
      if (info instanceof Error) throw info
      return info
    }
    async wrap(): Promise<SandboxInvocation> {
      throw new Error('not used')
    }
  }
}

/** The text of each announcement in a model request. */
function announcements(request: { messages: unknown[] }): string[] {
  return request.messages
    .map((message) => JSON.stringify(message))
    .filter((text) => text.includes('[sandbox policy]'))
    .map((text) => {
      const match = /(\[sandbox policy\][^"]*)"/.exec(text)
      return match ? JSON.parse(`"${match[1]}"`) : text
    })
}

describe('the announcement', () => {
  const cases: Array<[string, Array<[unknown, unknown]>]> = [
    ['no sandbox runner at all', []],
    ['a runner whose describe() fails', [[runnerSaying(new Error('probe broke')), {}]]],
    ['a runner whose notes are not a list', [[runnerSaying({ rejected: [], notes: 'loose text' as never }), {}]]],
    ['a runner without notes', [[runnerSaying({ runner: 'bwrap', rejected: [] }), {}]]],
  ]
  it.each(cases)('with %s it is exactly the policy statement', async (_label, runner) => {
    const ws = dir('announce-exact')
    const harness = await createHarness({
      cwd: ws,
      script: [{ text: 'ok' }],
      plugins: [...(runner as never[]), [SandboxPolicyService, { tempDirs: [temp] }]],
    })
    try {
      await harness.prompt('go')
      expect(announcements(harness.model.requests[0])).toEqual([
        harness.ctx.sandboxPolicy.describe({ sessionId: harness.session.id, cwd: ws }),
      ])
    } finally {
      await harness.dispose()
    }
  })

  it('in danger-full-access the runner is not asked for notes', async () => {
    const ws = dir('announce-full')
    const harness = await createHarness({
      cwd: ws,
      script: [{ text: 'ok' }],
      plugins: [
        [runnerSaying({ runner: 'landlock', rejected: [], notes: ['A runner note.'] }), {}],
        [SandboxPolicyService, { tempDirs: [temp], defaultMode: 'danger-full-access' }],
      ],
    })
    try {
      await harness.prompt('go')
      expect(announcements(harness.model.requests[0])).toEqual([
        harness.ctx.sandboxPolicy.describe({ sessionId: harness.session.id, cwd: ws }),
      ])
    } finally {
      await harness.dispose()
    }
  })

  it('is in the request before any other pre-step listener looks at it', async () => {
    const ws = dir('announce-first')
    const seen: boolean[] = []
    const observer = {
      name: 'pre-step-observer',
      apply(ctx: Context) {
        ctx.on('agent/pre-step', (payload: PreStepPayload, next: () => Promise<PreStepDecision>) => {
          seen.push(
            payload.messages.some(
              (message) => message.source?.kind === 'plugin' && message.source.plugin === ANNOUNCE_SOURCE.plugin,
            ),
          )
          return next()
        })
      },
    }
    const harness = await createHarness({
      cwd: ws,
      script: [{ text: 'ok' }],
      plugins: [
        [observer, {}],
        [SandboxPolicyService, { tempDirs: [temp] }],
      ],
    })
    try {
      await harness.prompt('go')
      expect(seen).toEqual([true])
    } finally {
      await harness.dispose()
    }
  })

  it('an announcement as the first event of a resumed log counts; another plugin’s same words do not', async () => {
    const ws = dir('announce-resume')
    const harness = await createHarness({
      cwd: ws,
      script: [{ text: 'one' }, { text: 'two' }],
      plugins: [[SandboxPolicyService, { tempDirs: [temp] }]],
    })
    try {
      const { sessions, agents, sandboxPolicy } = harness.ctx
      const logged = (plugin: string) => {
        const session = sessions.create({ cwd: ws })
        const text = sandboxPolicy.describe({ sessionId: session.id, cwd: ws })
        session.append('user/message', {
          content: [{ type: 'text', text }],
          source: { ...ANNOUNCE_SOURCE, plugin },
        } as never)
        return session
      }
      const own = agents.create({ cwd: ws, model: harness.agent.model, session: logged(ANNOUNCE_SOURCE.plugin) })
      await own.send('first')
      expect(announcements(harness.model.requests[0])).toHaveLength(1)
      await own.dispose()
      const other = agents.create({ cwd: ws, model: harness.agent.model, session: logged('someone-else') })
      await other.send('second')
      expect(announcements(harness.model.requests[1])).toHaveLength(2)
      await other.dispose()
    } finally {
      await harness.dispose()
    }
  })
})

describe('harness reads', () => {
  let ws: string
  let home: string
  let policy: SandboxPolicy
  beforeAll(() => {
    ws = dir('read-ws')
    home = dir('read-home')
    policy = {
      mode: 'workspace-write',
      workspaceRoot: ws,
      writableRoots: [ws],
      network: false,
      readOnlyPaths: [home],
      hiddenPaths: [join(home, '.env')],
      controlPaths: [],
    }
  })

  it('an unresolvable link names every root', () => {
    const other = dir('read-other')
    symlinkSync(join(base, 'vanished'), join(ws, 'vanished-dir'))
    expect(harnessReadRefusal(join(ws, 'vanished-dir', 'x'), undefined, { roots: [ws, other] })).toBe(
      `it is a link whose target cannot be resolved, and only files under ${ws}, ${other} are read`,
    )
    // Without roots, a path under a dangling link is nobody's credentials or /proc entry.
    expect(harnessReadRefusal(join(ws, 'vanished-dir', 'x'), policy)).toBeUndefined()
  })

  it('a per-process entry named directly is “it is”; one reached through a link names where it leads', () => {
    expect(harnessReadRefusal('/proc/self/environ', policy)).toMatch(/^it is a per-process \/proc entry/)
    symlinkSync('/proc/self/environ', join(ws, 'env-link'))
    expect(harnessReadRefusal(join(ws, 'env-link'), policy)).toMatch(/^it leads to \/proc\/\S+, which is a per-process/)
  })

  it('a symlink loop ends in an answer', () => {
    symlinkSync(join(ws, 'loop-b'), join(ws, 'loop-a'))
    symlinkSync(join(ws, 'loop-a'), join(ws, 'loop-b'))
    expect(harnessReadRefusal(join(ws, 'loop-a'), policy)).toBeUndefined()
  })

  it('a dangling link is located where it lies', () => {
    symlinkSync(join(base, 'nothing-here'), join(ws, 'dangling'))
    expect(realLocation(join(ws, 'dangling'))).toBe(join(ws, 'dangling'))
    expect(harnessReadRefusal(join(ws, 'dangling'), policy, { roots: [ws] })).toBeUndefined()
  })

  it('procfs reached under another name is a process entry only when the filesystem is asked', () => {
    symlinkSync('/proc/sys/kernel', join(ws, 'kernel'))
    expect(isProcessEntry(join(ws, 'kernel', 'ostype'))).toBe(true)
    expect(isProcessEntry(join(ws, 'kernel', 'ostype'), false)).toBe(false)
    // The harness asks the filesystem when no place is a per-process entry by name.
    expect(harnessReadRefusal(join(ws, 'kernel', 'ostype'), policy)).toMatch(/^it is a per-process \/proc entry/)
  })
})
