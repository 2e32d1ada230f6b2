import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import SessionStore, { type Session } from '@dsh/session'
import { emptyUsage, type TokenUsage } from '@dsh/llm'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import TokenMeter from '../src/index.ts'

const u = (input: number, output: number, cacheRead = 0, reasoning = 0, cacheWrite = 0): TokenUsage => ({
  input,
  output,
  cacheRead,
  cacheWrite,
  reasoning,
})

let ctx: Context | undefined
let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
  await (ctx?.fiber as unknown as { dispose?(): Promise<void> } | undefined)?.dispose?.()
  ctx = undefined
})

async function boot() {
  ctx = new Context()
  await ctx.plugin(SessionStore)
  const fiber = ctx.plugin(TokenMeter)
  await fiber
  return { ctx, fiber }
}

/** One closed turn with one request of the given usage. */
function turn(session: Session, n: number, usage?: TokenUsage) {
  session.append('turn/start', { turn: n })
  session.append('step/start', { turn: n, step: 0 })
  session.append('assistant/message', {
    message: { role: 'assistant', content: [{ type: 'text', text: `answer ${n}` }] },
    ...(usage ? { usage } : {}),
  })
  session.append('step/end', { turn: n, step: 0 })
  session.append('turn/end', { turn: n, reason: 'completed' })
}

describe('ctx.tokenMeter', () => {
  it('folds assistant/message usage incrementally and reports the last request input', async () => {
    const { ctx } = await boot()
    const session = ctx.sessions.create({ cwd: '/tmp' })
    expect(ctx.tokenMeter.usage(session.id)).toMatchObject({ total: emptyUsage(), requests: 0 })
    expect(ctx.tokenMeter.lastRequestInput(session.id)).toBeUndefined()
    turn(session, 0, u(100, 10, 0, 4))
    turn(session, 1, u(20, 5, 110, 0, 3))
    turn(session, 2) // an interrupted or usage-less message counts nothing
    const usage = ctx.tokenMeter.usage(session.id)!
    expect(usage.total).toEqual(u(120, 15, 110, 4, 3))
    expect(usage.live).toEqual(usage.total)
    expect(usage.seeded).toEqual(emptyUsage())
    expect(usage.requests).toBe(2)
    expect(usage.last).toEqual(u(20, 5, 110, 0, 3))
    expect(ctx.tokenMeter.lastRequestInput(session.id)).toBe(20 + 110 + 3)
    // Asking twice folds nothing twice.
    expect(ctx.tokenMeter.usage(session.id)!.total).toEqual(u(120, 15, 110, 4, 3))
  })

  it("counts a fork's seeded prefix once, as seeded", async () => {
    const { ctx } = await boot()
    const source = ctx.sessions.create({ cwd: '/tmp' })
    turn(source, 0, u(50, 5))
    turn(source, 1, u(10, 5, 50))
    const fork = ctx.sessions.fork(source)
    let usage = ctx.tokenMeter.usage(fork.id)!
    expect(usage.total).toEqual(u(60, 10, 50))
    expect(usage.seeded).toEqual(u(60, 10, 50))
    expect(usage.live).toEqual(emptyUsage())
    expect(usage.seededRequests).toBe(2)
    // The fork's context pressure is the seeded last request until it makes its own.
    expect(ctx.tokenMeter.lastRequestInput(fork.id)).toBe(60)
    turn(fork, 2, u(7, 3, 60))
    usage = ctx.tokenMeter.usage(fork.id)!
    expect(usage.seeded).toEqual(u(60, 10, 50))
    expect(usage.live).toEqual(u(7, 3, 60))
    expect(usage.total).toEqual(u(67, 13, 110))
    expect(ctx.tokenMeter.lastRequestInput(fork.id)).toBe(67)
    // The source is untouched by its fork.
    expect(ctx.tokenMeter.usage(source.id)!.total).toEqual(u(60, 10, 50))
  })

  it('folds a restored log from its events on first sight', async () => {
    const { ctx } = await boot()
    const original = ctx.sessions.create({ cwd: '/tmp' })
    turn(original, 0, u(30, 3))
    const events = original.events
    ctx.sessions.delete(original.id)
    const restored = ctx.sessions.create({ cwd: '/tmp', id: 'restored', events })
    expect(ctx.tokenMeter.usage('restored')).toMatchObject({ total: u(30, 3), requests: 1, seededRequests: 0 })
    turn(restored, 1, u(4, 4, 30))
    expect(ctx.tokenMeter.usage('restored')!.total).toEqual(u(34, 7, 30))
  })

  it('meters a session outside the store when given the Session', async () => {
    const { ctx } = await boot()
    const other = new Context()
    await other.plugin(SessionStore)
    const foreign = other.sessions.create({ cwd: '/tmp' })
    turn(foreign, 0, u(9, 1))
    expect(ctx.tokenMeter.usage(foreign.id)).toBeUndefined()
    expect(ctx.tokenMeter.usage(foreign)!.total).toEqual(u(9, 1))
    await (other.fiber as unknown as { dispose(): Promise<void> }).dispose()
  })

  it('forgets deleted sessions and stops listening when unloaded', async () => {
    const { ctx, fiber } = await boot()
    const session = ctx.sessions.create({ cwd: '/tmp' })
    turn(session, 0, u(1, 1))
    ctx.sessions.delete(session.id)
    expect(ctx.tokenMeter.usage(session.id)).toBeUndefined()
    await fiber.dispose()
    expect(ctx.get('tokenMeter')).toBeUndefined()
  })

  it('estimates four characters a token', async () => {
    const { ctx } = await boot()
    expect(ctx.tokenMeter.estimate('')).toBe(0)
    expect(ctx.tokenMeter.estimate('abcd')).toBe(1)
    expect(ctx.tokenMeter.estimate('abcde')).toBe(2)
    expect(ctx.tokenMeter.estimate('x'.repeat(4000))).toBe(1000)
  })

  it('follows a real agent turn by turn', async () => {
    harness = await createHarness({
      script: [
        { text: 'one', usage: { input: 40, output: 4 } },
        { text: 'two', usage: { input: 6, output: 2, cacheRead: 44 } },
      ],
      plugins: [[TokenMeter]],
    })
    await harness.prompt('first')
    expect(harness.ctx.tokenMeter.lastRequestInput(harness.session.id)).toBe(40)
    await harness.prompt('second')
    expect(harness.ctx.tokenMeter.usage(harness.session.id)).toMatchObject({
      total: u(46, 6, 44),
      requests: 2,
    })
    expect(harness.ctx.tokenMeter.lastRequestInput(harness.session.id)).toBe(50)
  })
})
