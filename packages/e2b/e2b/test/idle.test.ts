// Idle sandboxes (`idle.afterMs`, `idle.action`) against the local stand-in, with the idle timer's
// clock driven by hand (`useClock`): nothing here waits for time. A sandbox unused since its last
// call is paused and resumed on the next use with its files; a running command holds the timer
// off until it ends; `kill` saves the change, kills the sandbox and the next use starts a new one.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'
import type { ProcessExit } from '@dsh/subprocess'
import type { PreStepPayload } from '@dsh/agent'
import E2bService, { type E2bConfig, type IdleClock } from '../src/index.ts'
import E2bSubprocessService from '@dsh/subprocess-e2b'
import E2bFileSystem from '@dsh/fs-e2b'

let standin: E2bStandin
const cwd = '/work/idle-project'

beforeAll(async () => {
  standin = await startE2bStandin()
  process.env.E2B_API_KEY = standin.apiKey
})
afterAll(async () => {
  await standin.close()
})

/** A clock whose timers fire only when the test says so. */
class HandClock implements IdleClock {
  private next = 0
  readonly timers = new Map<number, { fire: () => Promise<void>; ms: number }>()
  setTimeout(fire: () => Promise<void>, ms: number): unknown {
    this.timers.set(++this.next, { fire, ms })
    return this.next
  }
  clearTimeout(timer: unknown): void {
    this.timers.delete(timer as number)
  }
  /** Fires every armed timer (the idle period passed) and waits for what they started. */
  async elapse(): Promise<void> {
    const due = [...this.timers.values()]
    this.timers.clear()
    await Promise.all(due.map((t) => t.fire()))
  }
}

async function world(idle: E2bConfig['idle'], extra: Partial<E2bConfig> = {}) {
  const ctx = new Context()
  const fibers = [
    await ctx.plugin(E2bService, {
      apiUrl: standin.url,
      sandboxUrl: standin.url,
      cwd,
      retryDelayMs: 10,
      upload: { enabled: false, maxBytes: 1 << 20, exclude: [] },
      idle,
      ...extra,
    }),
    await ctx.plugin(E2bSubprocessService, {}),
    await ctx.plugin(E2bFileSystem),
  ]
  await new Promise<void>((resolve) => ctx.inject(['e2b', 'subprocess', 'fs'], () => resolve()))
  const clock = new HandClock()
  ctx.e2b.useClock(clock)
  return {
    ctx,
    clock,
    close: async () => {
      for (const fiber of fibers.reverse()) await fiber.dispose()
    },
  }
}

/** The messages `agent/pre-step` adds to a request of the run's agent (as the agent loop asks it). */
async function preStep(ctx: Context, sessionId?: string): Promise<string[]> {
  const agent = sessionId === undefined ? {} : { session: { id: sessionId } }
  const payload = { agent, turn: 0, step: 0, messages: [] } as unknown as PreStepPayload
  const decision = await ctx.waterfall('agent/pre-step', payload, async () => ({
    action: 'enter' as const,
    messages: payload.messages,
  }))
  if (decision.action !== 'enter') throw new Error('pre-step rejected')
  return decision.messages
    .filter((m) => m.source.kind === 'plugin' && m.source.plugin === '@dsh/e2b')
    .map((m) => String(m.content))
}

const text = (exit: ProcessExit) => new TextDecoder().decode(exit.output.merged?.head ?? new Uint8Array())
const run = (ctx: Context, command: string) =>
  ctx.subprocess.spawn({ file: 'bash', args: ['-c', command], cwd, kill: { graceMs: 200 }, stderr: 'stdout' })

describe('idle sandboxes', () => {
  it('pause: the idle sandbox is paused and the next use resumes it with its files', async () => {
    const { ctx, clock, close } = await world({ afterMs: 60_000, action: 'pause' })
    try {
      expect(text(await run(ctx, 'echo one > a.txt; echo ok').exited)).toBe('ok\n')
      const id = ctx.e2b.sandboxId as string
      // Armed from the last use, with the configured period.
      expect([...clock.timers.values()].map((t) => t.ms)).toEqual([60_000])
      const mark = standin.requests.length
      await clock.elapse()
      expect(standin.get(id)?.record.state).toBe('paused')
      expect(standin.requests.slice(mark).map((r) => `${r.method} ${r.path}`)).toEqual([`POST /sandboxes/${id}/pause`])
      // Nothing is armed for a paused sandbox.
      expect(clock.timers.size).toBe(0)
      // The next use resumes the same machine, files kept.
      expect(text(await run(ctx, 'cat a.txt').exited)).toBe('one\n')
      expect(ctx.e2b.sandboxId).toBe(id)
      expect(standin.get(id)?.record.state).toBe('running')
      expect(
        standin.requests.slice(mark).some((r) => r.method === 'POST' && r.path === `/sandboxes/${id}/connect`),
      ).toBe(true)
      expect(standin.requests.slice(mark).filter((r) => r.method === 'POST' && r.path === '/sandboxes')).toEqual([])
      expect(clock.timers.size).toBe(1)
    } finally {
      await close()
    }
  })

  it('a running command holds the timer off; its end arms it again', async () => {
    const { ctx, clock, close } = await world({ afterMs: 30_000, action: 'pause' })
    let id = ''
    try {
      const long = run(ctx, 'while [ ! -f go ]; do sleep 0.05; done; echo released')
      await ctx.fs.writeFile(join(cwd, 'touch.txt'), 'x\n', { createParents: true })
      // The file call above was a use (positive control: the sandbox is open), yet nothing is
      // armed while the command runs.
      id = ctx.e2b.sandboxId as string
      expect(standin.get(id)?.record.state).toBe('running')
      expect(clock.timers.size).toBe(0)
      writeFileSync(join(standin.rootOf(id), cwd, 'go'), '')
      expect(text(await long.exited)).toBe('released\n')
      expect(clock.timers.size).toBe(1)
      await clock.elapse()
      expect(standin.get(id)?.record.state).toBe('paused')
    } finally {
      await close()
    }
    // The end of the run resumed it to take its change, then killed it (onExit: kill).
    expect(id).not.toBe('')
    expect(standin.get(id)).toBeUndefined()
  })

  it('kill: the change is saved, the sandbox killed, and the next use starts a new one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-e2b-idle-patches-'))
    const { ctx, clock, close } = await world({ afterMs: 5_000, action: 'kill' }, { patch: { enabled: true, dir } })
    try {
      expect(text(await run(ctx, 'echo kept > b.txt; echo ok').exited)).toBe('ok\n')
      const id = ctx.e2b.sandboxId as string
      // Nothing to say while the sandbox lives.
      expect(await preStep(ctx)).toEqual([])
      await clock.elapse()
      expect(standin.get(id)).toBeUndefined()
      const patch = join(dir, `${id}.patch`)
      expect(readFileSync(patch, 'utf8')).toContain('+kept')
      // The model is told in its next request, once, that its files there are gone.
      expect(await preStep(ctx)).toEqual([
        `Note from the e2b world: the E2B sandbox ${id} was idle for 5 s and was killed. Files you created or changed there are not in the next sandbox (the user has them as a patch, not yet applied locally); the next command starts a new sandbox holding a fresh copy of the user's local project, so redo any change you still need.`,
      ])
      expect(await preStep(ctx)).toEqual([])
      // A new machine: the killed one's files are not there (they are in the patch).
      expect(text(await run(ctx, 'test -e b.txt && echo present || echo absent').exited)).toBe('absent\n')
      const next = ctx.e2b.sandboxId as string
      expect(next).not.toBe(id)
      const report = await ctx.e2b.finish()
      expect(report.lines[0]).toBe(
        `the E2B sandbox ${id} was idle for 5 s and was killed (idle.action: kill); its change was saved to ${patch}; the next command starts a new sandbox from the local tree`,
      )
      expect(standin.get(next)).toBeUndefined()
      expect(existsSync(patch)).toBe(true)
    } finally {
      await close()
    }
  })

  it('kill: every session that worked in the shared sandbox is told once; a later one is not', async () => {
    const { ctx, clock, close } = await world({ afterMs: 5_000, action: 'kill' })
    try {
      // Two sessions (a web host's sessions of one workspace) step and work in the one sandbox.
      expect(await preStep(ctx, 'ses_a')).toEqual([])
      expect(await preStep(ctx, 'ses_b')).toEqual([])
      expect(text(await run(ctx, 'echo ok').exited)).toBe('ok\n')
      const id = ctx.e2b.sandboxId as string
      await clock.elapse()
      expect(standin.get(id)).toBeUndefined()
      const note = `Note from the e2b world: the E2B sandbox ${id} was idle for 5 s and was killed.`
      // A session that never worked there has nothing to redo.
      expect(await preStep(ctx, 'ses_new')).toEqual([])
      expect((await preStep(ctx, 'ses_a'))[0]).toMatch(new RegExp(`^${note.replace(/[.]/g, '\\.')}`))
      expect(await preStep(ctx, 'ses_a')).toEqual([])
      expect((await preStep(ctx, 'ses_b'))[0]).toMatch(new RegExp(`^${note.replace(/[.]/g, '\\.')}`))
      expect(await preStep(ctx, 'ses_b')).toEqual([])
    } finally {
      await close()
    }
  })

  it('pause: a paused sandbox gone before the next use is replaced, and the model told so', async () => {
    const { ctx, clock, close } = await world({ afterMs: 60_000, action: 'pause' })
    try {
      expect(text(await run(ctx, 'echo one > a.txt; echo ok').exited)).toBe('ok\n')
      const id = ctx.e2b.sandboxId as string
      await clock.elapse()
      expect(standin.get(id)?.record.state).toBe('paused')
      // A paused sandbox that resumes says nothing; this one is killed behind dsh's back.
      expect(await preStep(ctx)).toEqual([])
      expect(standin.kill(id)).toBe(true)
      expect(text(await run(ctx, 'test -e a.txt && echo present || echo absent').exited)).toBe('absent\n')
      expect(ctx.e2b.sandboxId).not.toBe(id)
      expect(await preStep(ctx)).toEqual([
        `Note from the e2b world: the E2B sandbox ${id} was paused while idle and is gone (killed or expired). Files you created or changed there are not in the next sandbox; the next command starts a new sandbox holding a fresh copy of the user's local project, so redo any change you still need.`,
      ])
      expect(await preStep(ctx)).toEqual([])
    } finally {
      await close()
    }
  })

  it('bad config is refused with the field named', () => {
    expect(() => E2bService.Config({ idle: { afterMs: -1, action: 'pause' } } as never)).toThrow(/afterMs/)
    expect(() => E2bService.Config({ idle: { afterMs: 1000, action: 'sleep' } } as never)).toThrow(/action/)
  })
})
