import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { createHarness } from '@dsh/agent-loop-testkit'
import AgentDefaultModel from '../src/index.ts'

async function mount(config?: unknown) {
  const ctx = new Context()
  const fiber = ctx.plugin(AgentDefaultModel, config as never)
  await fiber
  return { ctx, fiber }
}

describe('ctx.agentDefaultModel', () => {
  it('defaults to deepseek-official / deepseek-v4-flash with nothing else set', async () => {
    const { ctx } = await mount()
    expect(ctx.agentDefaultModel.get()).toEqual({ provider: 'deepseek-official', model: 'deepseek-v4-flash' })
  })

  it('returns the configured selection as a fresh copy each time', async () => {
    const { ctx } = await mount({
      provider: 'openrouter',
      model: 'some/model',
      reasoningEffort: 'max',
      maxTokens: 2048,
    })
    const first = ctx.agentDefaultModel.get()
    expect(first).toEqual({ provider: 'openrouter', model: 'some/model', reasoningEffort: 'max', maxTokens: 2048 })
    first.model = 'changed'
    expect(ctx.agentDefaultModel.get().model).toBe('some/model')
  })

  it('refuses bad config and provides no service', async () => {
    for (const bad of [{ reasoningEffort: 'medium' }, { model: '' }, { maxTokens: 0 }, { provider: 7 }]) {
      expect(() => AgentDefaultModel.Config(bad as never)).toThrow()
      const ctx = new Context()
      let failed = false
      try {
        await ctx.plugin(AgentDefaultModel, bad as never)
      } catch {
        failed = true
      }
      expect(failed || ctx.get('agentDefaultModel') === undefined).toBe(true)
      expect(ctx.get('agentDefaultModel')).toBeUndefined()
    }
  })

  it('is withdrawn when unloaded', async () => {
    const { ctx, fiber } = await mount({})
    await fiber.dispose()
    expect(ctx.get('agentDefaultModel')).toBeUndefined()
  })

  it('gives an entry point the selection to create an agent with', async () => {
    const h = await createHarness({
      script: [{ text: 'hi' }],
      plugins: [[AgentDefaultModel, { provider: 'scripted', model: 'scripted-1' }]],
    })
    try {
      const agent = h.ctx.agents.create({ cwd: process.cwd(), model: h.ctx.agentDefaultModel.get() })
      expect(agent.model).toEqual({ provider: 'scripted', model: 'scripted-1' })
      expect((await agent.send('hello')).text).toBe('hi')
      await agent.dispose()
    } finally {
      await h.dispose()
    }
  })
})

describe('settings.yaml `model:` section', () => {
  it('overrides the row field by field, follows edits, and ignores an invalid section', async () => {
    const { MemorySettings } = await import('@dsh/settings')
    const ctx = new Context()
    await ctx.plugin(MemorySettings, { initial: { model: { model: 'deepseek-v4-pro', reasoningEffort: 'high' } } })
    await ctx.plugin(AgentDefaultModel, { maxTokens: 1000 } as never)
    expect(ctx.agentDefaultModel.get()).toEqual({
      provider: 'deepseek-official',
      model: 'deepseek-v4-pro',
      reasoningEffort: 'high',
      maxTokens: 1000,
    })
    await ctx.settings.update('model', { reasoningEffort: undefined, maxTokens: 50 })
    expect(ctx.agentDefaultModel.get()).toEqual({
      provider: 'deepseek-official',
      model: 'deepseek-v4-pro',
      maxTokens: 50,
    })
    await ctx.settings.replace('model', { reasoningEffort: 'medium' })
    expect(ctx.agentDefaultModel.get()).toEqual({
      provider: 'deepseek-official',
      model: 'deepseek-v4-flash',
      maxTokens: 1000,
    })
  })
})
