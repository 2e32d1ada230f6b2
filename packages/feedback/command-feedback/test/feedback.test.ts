// `/feedback` through the real commands service on a real agent and session, the config schema,
// and the persistence of `feedback/record` (a strict JSONL store refuses unregistered types).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import CommandRegistry from '@dsh/commands'
import SessionStore from '@dsh/session'
import { DurableSessions } from '@dsh/session-persistence'
// Not a dependency of this package: reached through the workspace tree (test-only).
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import * as CommandFeedback from '../src/index.ts'
import { Config, recordFeedback } from '../src/index.ts'

let root: string
const harnesses: Harness[] = []
const trees: Context[] = []
const dispose = (ctx: Context) => (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-command-feedback-'))
})
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.dispose()
  for (const ctx of trees.splice(0)) await dispose(ctx)
  await rm(root, { recursive: true, force: true })
})

async function harness(config?: Record<string, unknown>) {
  const h = await createHarness({ plugins: [[CommandRegistry], [CommandFeedback, config]] })
  harnesses.push(h)
  return h
}

const feedbackEvents = (h: Harness) => h.session.events.filter((e) => e.type === 'feedback/record')

describe('/feedback', () => {
  it('records the trimmed text as one feedback/record event in the session log, without a model turn', async () => {
    const h = await harness()
    expect(h.ctx.commands.get('feedback')).toEqual({
      name: 'feedback',
      description: expect.stringContaining('never sent to the model'),
      usage: '<text>',
    })
    const result = await h.ctx.commands.dispatch(h.agent, '/feedback   the diff view was great  ')
    const [event] = feedbackEvents(h)
    expect(event).toMatchObject({
      type: 'feedback/record',
      data: { text: 'the diff view was great', source: 'command' },
    })
    expect(result).toEqual({
      handled: true,
      name: 'feedback',
      ok: true,
      output: `Thanks: feedback recorded in the session log (seq ${event.seq}).`,
    })
    expect(h.session.events).toHaveLength(1)
    expect(h.model.requests).toHaveLength(0)
    // Multi-line feedback is kept whole.
    await h.ctx.commands.dispatch(h.agent, '/feedback first line\nsecond line')
    expect(feedbackEvents(h).map((e) => e.data.text)).toEqual(['the diff view was great', 'first line\nsecond line'])
  })

  it('refuses empty text and text over maxChars in one line, logging nothing', async () => {
    const h = await harness({ maxChars: 10 })
    expect(await h.ctx.commands.dispatch(h.agent, '/feedback')).toEqual({
      handled: true,
      name: 'feedback',
      ok: false,
      error: {
        code: 'COMMAND_FAILED',
        message: '/feedback failed: feedback text is empty; usage: /feedback <what went well or wrong>',
      },
    })
    expect(await h.ctx.commands.dispatch(h.agent, '/feedback   \t  ')).toMatchObject({
      ok: false,
      error: { message: expect.stringContaining('feedback text is empty') },
    })
    expect(await h.ctx.commands.dispatch(h.agent, '/feedback 12345678901')).toEqual({
      handled: true,
      name: 'feedback',
      ok: false,
      error: { code: 'COMMAND_FAILED', message: '/feedback failed: feedback is 11 characters; the limit is 10' },
    })
    expect(h.session.events).toHaveLength(0)
    // Exactly the limit is accepted.
    expect(await h.ctx.commands.dispatch(h.agent, '/feedback 1234567890')).toMatchObject({ ok: true })
    expect(feedbackEvents(h).map((e) => e.data.text)).toEqual(['1234567890'])
  })

  it('takes its name from config, and unloading withdraws the command', async () => {
    const h = await createHarness({ plugins: [[CommandRegistry]] })
    harnesses.push(h)
    const fiber = await h.mount(CommandFeedback, { command: 'rate-session' })
    expect(h.ctx.commands.get('feedback')).toBeUndefined()
    expect(await h.ctx.commands.dispatch(h.agent, '/rate-session slow today')).toMatchObject({ ok: true })
    expect(feedbackEvents(h).map((e) => e.data)).toEqual([{ text: 'slow today', source: 'command' }])
    await fiber.dispose()
    expect(h.ctx.commands.get('rate-session')).toBeUndefined()
    expect(await h.ctx.commands.dispatch(h.agent, '/rate-session again')).toMatchObject({
      ok: false,
      error: { code: 'UNKNOWN_COMMAND' },
    })
  })
})

describe('config', () => {
  it('defaults to /feedback with a 4000 character limit', async () => {
    expect(Config({})).toEqual({ command: 'feedback', maxChars: 4000 })
    const h = await harness({})
    expect(h.ctx.commands.get('feedback')).toBeDefined()
    expect(await h.ctx.commands.dispatch(h.agent, `/feedback ${'x'.repeat(4000)}`)).toMatchObject({ ok: true })
    expect(await h.ctx.commands.dispatch(h.agent, `/feedback ${'x'.repeat(4001)}`)).toMatchObject({
      ok: false,
      error: { message: '/feedback failed: feedback is 4001 characters; the limit is 4000' },
    })
  })

  it('refuses a bad command name or limit at load and registers nothing', async () => {
    for (const bad of [
      { command: 'Feed Back' },
      { command: '/feedback' },
      { command: '' },
      { maxChars: 0 },
      { maxChars: -3 },
      { maxChars: 'lots' },
    ]) {
      expect(() => Config(bad as never)).toThrow()
      const h = await createHarness({ plugins: [[CommandRegistry]] })
      harnesses.push(h)
      const fiber = h.ctx.plugin(CommandFeedback, bad as never)
      const outcome = await Promise.race([
        Promise.resolve(fiber).then(
          () => 'loaded',
          () => 'refused',
        ),
        new Promise<string>((resolve) => setTimeout(() => resolve('pending'), 100)),
      ])
      expect(outcome, JSON.stringify(bad)).not.toBe('loaded')
      expect(h.ctx.commands.list().map((c) => c.name)).toEqual(['help'])
    }
  })
})

describe('recordFeedback', () => {
  it('appends for any caller with its source, and refuses blank text', async () => {
    const ctx = new Context()
    trees.push(ctx)
    await ctx.plugin(SessionStore)
    const session = ctx.sessions.create({ cwd: '/w' })
    const event = recordFeedback(session, ' from the web ', 'web')
    expect(event).toMatchObject({ seq: 0, type: 'feedback/record', data: { text: 'from the web', source: 'web' } })
    expect(() => recordFeedback(session, '  \n ')).toThrow(
      'feedback text is empty; usage: /feedback <what went well or wrong>',
    )
    expect(session.events).toHaveLength(1)
  })
})

describe('persistence', () => {
  async function tree(withFeedback: boolean) {
    const ctx = new Context()
    trees.push(ctx)
    await ctx.plugin(SessionStore)
    await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, unknownEventTypes: 'refuse' })
    await ctx.plugin(DurableSessions, { origin: 'test' })
    await ctx.plugin(CommandRegistry)
    if (withFeedback) await ctx.plugin(CommandFeedback, {})
    return ctx
  }

  it('registers feedback/record, so a strict store accepts it and a log holding it reloads', async () => {
    const a = await tree(true)
    const s = a.sessions.create({ cwd: '/w' })
    recordFeedback(s, 'keep this')
    // The strict store refuses an unregistered type: checkpoint would reject.
    await a.durableSessions.checkpoint(s.id)
    await dispose(a)
    trees.splice(trees.indexOf(a), 1)

    // A build without the plugin does not know the type (it is not ignorable)...
    const bare = await tree(false)
    await expect(bare.durableSessions.resume(s.id)).rejects.toMatchObject({ code: 'UNKNOWN_EVENT_TYPE' })
    await dispose(bare)
    trees.splice(trees.indexOf(bare), 1)
    // ...one with it reloads the log.
    const b = await tree(true)
    const { session } = await b.durableSessions.resume(s.id)
    expect(session.events.map((e) => [e.type, e.data])).toEqual([
      ['feedback/record', { text: 'keep this', source: 'command' }],
    ])
  })
})
