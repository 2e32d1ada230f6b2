import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import ShellEnvRegistry from '../src/index.ts'

async function boot(config: Record<string, unknown> = { home: '/srv/dsh-home' }) {
  const ctx = new Context()
  await ctx.plugin(ShellEnvRegistry, config)
  return ctx
}

describe('shell-env', () => {
  it('provides the built-in facts', async () => {
    const ctx = await boot()
    expect(ctx.shellEnv.collect({ sessionId: 's-1' })).toEqual({
      DSH_HOME: '/srv/dsh-home',
      DSH_SHELL: '1',
      DSH_SESSION_ID: 's-1',
    })
    // Without a session the session id is simply absent.
    expect(ctx.shellEnv.collect({})).toEqual({ DSH_HOME: '/srv/dsh-home', DSH_SHELL: '1' })
    expect(ctx.shellEnv.list().map((v) => v.name)).toEqual(['DSH_HOME', 'DSH_SESSION_ID', 'DSH_SHELL'])
  })

  it('defaults DSH_HOME to $DSH_HOME', async () => {
    const saved = process.env.DSH_HOME
    process.env.DSH_HOME = '/tmp/from-env'
    try {
      const ctx = await boot({})
      expect(ctx.shellEnv.collect().DSH_HOME).toBe('/tmp/from-env')
    } finally {
      if (saved === undefined) delete process.env.DSH_HOME
      else process.env.DSH_HOME = saved
    }
  })

  it('adds plugin variables that unwind with the disposer and with the plugin', async () => {
    const ctx = await boot()
    const dispose = ctx.shellEnv.register({ name: 'DSH_AGENT_ID', description: 'agent', value: (c) => c.agentId })
    expect(ctx.shellEnv.collect({ agentId: 'a-7' }).DSH_AGENT_ID).toBe('a-7')
    dispose()
    expect(ctx.shellEnv.collect({ agentId: 'a-7' }).DSH_AGENT_ID).toBeUndefined()

    const fiber = ctx.plugin({
      name: 'profile-facts',
      inject: ['shellEnv'],
      apply(c: Context) {
        c.shellEnv.register({ name: 'DSH_PROFILE', description: 'active profile', value: 'headless' })
      },
    })
    await fiber
    expect(ctx.shellEnv.collect().DSH_PROFILE).toBe('headless')
    expect(ctx.shellEnv.list().find((v) => v.name === 'DSH_PROFILE')?.owner).toBe('profile-facts')
    await fiber.dispose()
    expect(ctx.shellEnv.collect().DSH_PROFILE).toBeUndefined()
  })

  it('fails loudly on duplicates, bad names and bad values', async () => {
    const ctx = await boot()
    expect(() => ctx.shellEnv.register({ name: 'DSH_SHELL', description: 'x', value: '2' })).toThrow(
      /already registered by shell-env/,
    )
    ctx.shellEnv.register({ name: 'DSH_X', description: 'x', value: '1' })
    expect(() => ctx.shellEnv.register({ name: 'DSH_X', description: 'x', value: '1' })).toThrow(/already registered/)
    expect(() => ctx.shellEnv.register({ name: 'PATH', description: 'x', value: '1' })).toThrow(/invalid name/)
    expect(() => ctx.shellEnv.register({ name: 'DSH_lower', description: 'x', value: '1' })).toThrow(/invalid name/)
    expect(() => ctx.shellEnv.register({ name: 'DSH_NODESC', description: '', value: '1' })).toThrow(/description/)
    expect(() => ctx.shellEnv.register({ name: 'DSH_NUL', description: 'x', value: 'a\0b' })).toThrow(/NUL/)
    ctx.shellEnv.register({ name: 'DSH_BROKEN', description: 'x', value: () => 42 as unknown as string })
    expect(() => ctx.shellEnv.collect()).toThrow(/DSH_BROKEN .* produced number/)
  })

  it('names the variable whose value function throws', async () => {
    const ctx = await boot()
    ctx.shellEnv.register({
      name: 'DSH_THROWS',
      description: 'x',
      value: () => {
        throw new Error('boom')
      },
    })
    expect(() => ctx.shellEnv.collect()).toThrow(/DSH_THROWS .*failed: boom/)
  })
})
