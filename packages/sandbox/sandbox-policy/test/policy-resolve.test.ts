// More of what a resolved policy holds, from the edges mutation testing (`pnpm mutation
// sandbox-policy`) left open: a workspace root is fixed per session but never for calls without
// one, dsh's private temp directory is protected only where commands may write, the patch layers
// the process booted from are read-only, a resumed session is not told the policy again, and the
// harness's read refusal names every root and only per-process /proc entries.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import { createHarness } from '@dsh/agent-loop-testkit'
import { processTempDir } from '@dsh/spill-files'
import SandboxPolicyService, { harnessReadRefusal, isProcessEntry } from '../src/index.ts'

let base: string
let temp: string
const contexts: Context[] = []

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-sandbox-policy-resolve-')))
  temp = join(base, 'tmp')
  mkdirSync(temp)
})
afterEach(async () => {
  for (const ctx of contexts.splice(0)) await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

async function boot(config: Record<string, unknown> = {}) {
  const ctx = new Context()
  contexts.push(ctx)
  await ctx.plugin(SessionStore)
  await ctx.plugin(SandboxPolicyService, { tempDirs: [temp], fallbackRoot: base, ...config })
  return ctx
}

const dir = (...parts: string[]) => {
  const path = join(base, ...parts)
  mkdirSync(path, { recursive: true })
  return path
}

describe('the workspace root', () => {
  it('is fixed at first use for a session id, and follows the cwd of each call without one', async () => {
    const ctx = await boot()
    const a = dir('root-a')
    const b = dir('root-b')
    expect(ctx.sandboxPolicy.resolve({ cwd: a }).workspaceRoot).toBe(a)
    expect(ctx.sandboxPolicy.resolve({ cwd: b }).workspaceRoot).toBe(b)
    expect(ctx.sandboxPolicy.workspaceRoot({ cwd: a })).toBe(a)
    expect(ctx.sandboxPolicy.workspaceRoot({})).toBe(base)
    // A session id the store does not know: its first call's cwd, then that root for good.
    expect(ctx.sandboxPolicy.workspaceRoot({ sessionId: 'not-stored', cwd: a })).toBe(a)
    expect(ctx.sandboxPolicy.workspaceRoot({ sessionId: 'not-stored', cwd: b })).toBe(a)
    expect(ctx.sandboxPolicy.resolve({ sessionId: 'not-stored', cwd: b }).writableRoots).toContain(a)
  })
})

describe('protected paths', () => {
  it("dsh's private temp directory is a control path in workspace-write only", async () => {
    const ctx = await boot()
    const ws = dir('spill-ws')
    const spill = realpathSync(processTempDir().path)
    const session = ctx.sessions.create({ cwd: ws })
    expect(ctx.sandboxPolicy.resolve({ sessionId: session.id }).controlPaths).toContain(spill)
    ctx.sandboxPolicy.setMode(session.id, 'read-only')
    expect(ctx.sandboxPolicy.resolve({ sessionId: session.id }).controlPaths).not.toContain(spill)
  })

  it('the patch layers this process booted from are read-only, symlinks resolved, once each', async () => {
    const ctx = await boot()
    const home = dir('boot-home')
    const layer = join(dir('layers'), 'mine.patch.yml')
    writeFileSync(layer, '[]\n')
    ctx.provide('homePaths', { home } as never)
    ctx.provide('bootInfo', { layerFiles: [layer, layer] } as never)
    expect(ctx.sandboxPolicy.protectedPaths().readOnlyPaths).toEqual([home, layer])
    expect(ctx.sandboxPolicy.resolve({ cwd: dir('boot-ws') }).readOnlyPaths).toEqual([home, layer])
  })
})

describe('the announcement of a resumed session', () => {
  it('is not repeated when the log already ends with the same policy, and is when the policy changed', async () => {
    const ws = dir('resume-ws')
    const harness = await createHarness({
      cwd: ws,
      script: [{ text: 'one' }, { text: 'two' }, { text: 'three' }],
      plugins: [[SandboxPolicyService, { tempDirs: [temp] }]],
    })
    try {
      await harness.prompt('first')
      const announced = (request: number) =>
        harness.model.requests[request].messages.filter((m) => JSON.stringify(m).includes('[sandbox policy]')).length
      expect(announced(0)).toBe(1)
      // A new agent on a copy of the log (what a resume loads): the policy in the log is current.
      const sessions = harness.ctx.sessions
      const copy = sessions.create({ cwd: ws, events: harness.session.events })
      const resumed = harness.ctx.agents.create({ cwd: ws, model: harness.agent.model, session: copy })
      await resumed.send('second')
      expect(announced(1)).toBe(1)
      const newest = harness.model.requests[1].messages.at(-1)
      expect(JSON.stringify(newest)).not.toContain('[sandbox policy]')
      // The mode changed since: the resumed session is told again.
      harness.ctx.sandboxPolicy.setMode(copy.id, 'read-only')
      await resumed.send('third')
      const told = harness.model.requests[2].messages.filter((m) =>
        JSON.stringify(m).includes('[sandbox policy] read-only'),
      )
      expect(told).toHaveLength(1)
      await resumed.dispose()
    } finally {
      await harness.dispose()
    }
  })
})

describe('harness reads', () => {
  it('names every root a refused path lies outside of', () => {
    const one = dir('roots-one')
    const two = dir('roots-two')
    const outside = join(dir('roots-outside'), 'f.md')
    writeFileSync(outside, 'x')
    expect(harnessReadRefusal(outside, undefined, { roots: [one, two] })).toBe(
      `it resolves to ${outside}, outside ${one}, ${two}, and only files there are read`,
    )
    const gone = join(one, 'gone')
    expect(harnessReadRefusal(join(gone, 'x'), undefined, { roots: [one, two] })).toBeUndefined()
  })

  it('a /proc or /dev/fd name elsewhere in a path is not a per-process entry', () => {
    expect(isProcessEntry('/tmp/proc/self', false)).toBe(false)
    expect(isProcessEntry(`/tmp/proc/${process.pid}/environ`, false)).toBe(false)
    expect(isProcessEntry('/home/dev/fd/1', false)).toBe(false)
    expect(isProcessEntry('/proc/42', false)).toBe(true)
    expect(isProcessEntry('/proc/thread-self/environ', false)).toBe(true)
    expect(isProcessEntry('/proc/selfish', false)).toBe(false)
    expect(isProcessEntry('/dev/stdout', false)).toBe(true)
    expect(isProcessEntry('/dev/stdout2', false)).toBe(false)
    expect(isProcessEntry('/dev/fdx', false)).toBe(false)
    expect(isProcessEntry('/dev/stderr/x', false)).toBe(false)
  })
})
