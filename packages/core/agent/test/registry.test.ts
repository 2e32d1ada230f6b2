// ctx.agents with the real loop (@dsh/agent-loop through the testkit): factory selection, the
// registry's bookkeeping and events, and the stop path that ends running turns first.
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import AgentRegistry, { type Agent, type AgentFactory } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

describe('ctx.agents', () => {
  it('refuses to create an agent with no loop mounted, naming the row to add', async () => {
    const ctx = new Context()
    await ctx.plugin(AgentRegistry)
    expect(() => ctx.agents.create({ cwd: process.cwd() })).toThrow(
      /no agent loop is mounted: add the @dsh\/agent-loop row/,
    )
  })

  it('tracks created agents, emits created/disposed, and refuses a duplicate id', async () => {
    harness = await createHarness({ script: [{ text: 'hi' }] })
    const { ctx, agent } = harness
    const created: string[] = []
    const disposed: string[] = []
    ctx.on('agent/created', (a) => void created.push(a.id))
    ctx.on('agent/disposed', (a) => void disposed.push(a.id))
    expect(ctx.agents.get(agent.id)).toBe(agent)
    const second = ctx.agents.create({ cwd: process.cwd(), model: agent.model, id: 'second' })
    expect(created).toEqual(['second'])
    expect(ctx.agents.list().map((a) => a.id)).toEqual([agent.id, 'second'])
    expect(() => ctx.agents.create({ cwd: process.cwd(), model: agent.model, id: 'second' })).toThrow(
      /agent id 'second' is already in use/,
    )
    await second.dispose()
    expect(disposed).toEqual(['second'])
    expect(ctx.agents.get('second')).toBeUndefined()
  })

  it('uses the newest factory; unregistering it falls back to the previous one', async () => {
    harness = await createHarness()
    const { ctx } = harness
    const loop = ctx.agents.factory!
    const made: string[] = []
    // A factory that wraps the real loop, as an instrumenting plugin would.
    const wrapper: AgentFactory = { name: 'wrapper', create: (o) => (made.push(o.id ?? '?'), loop.create(o)) }
    const dispose = ctx.agents.registerFactory(wrapper)
    const a: Agent = ctx.agents.create({ cwd: process.cwd(), model: harness.agent.model, id: 'wrapped' })
    expect(made).toEqual(['wrapped'])
    dispose()
    expect(ctx.agents.factory).toBe(loop)
    ctx.agents.create({ cwd: process.cwd(), model: harness.agent.model, id: 'plain' })
    expect(made).toEqual(['wrapped'])
    await a.dispose()
  })

  it('app/stopping disposes every agent first: a running turn ends cancelled and is logged', async () => {
    harness = await createHarness({ script: [{ text: 'partial', hang: true }] })
    const { ctx, agent, session } = harness
    const turn = agent.send('go')
    await expect.poll(() => agent.status).toBe('running')
    await ctx.parallel('app/stopping' as never, { reason: 'signal', code: 130 } as never)
    expect((await turn).reason).toBe('cancelled')
    expect(agent.status).toBe('disposed')
    expect(ctx.agents.list()).toEqual([])
    expect(JSON.stringify(session.events.at(-1))).toMatch(/"type":"turn\/end".*cancelled/)
    harness = undefined
    await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
  })
})
