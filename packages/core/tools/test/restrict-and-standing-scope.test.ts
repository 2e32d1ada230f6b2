import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import ToolRegistry, { type ToolDefinition } from '@dsh/tools'
import { withStandingScope } from '@dsh/scope'

const echo = (name: string): ToolDefinition => ({
  name,
  description: `${name} tool`,
  parameters: { type: 'object', properties: {} },
  execute: () => ({ content: name }),
})

async function boot() {
  const ctx = new Context()
  await ctx.plugin(ToolRegistry)
  return ctx
}

describe('restrict', () => {
  it('hides tools outside the allowed set from one scope only, and unknown-tools a hidden call', async () => {
    const ctx = await boot()
    ctx.tools.register(echo('read'))
    ctx.tools.register(echo('write'))
    ctx.tools.register(echo('bash'))
    const undo = ctx.tools.restrict('agent:a', (name) => name !== 'write')
    expect(ctx.tools.schemas('agent:a').map((s) => s.name)).toEqual(['bash', 'read'])
    expect(ctx.tools.schemas('agent:b').map((s) => s.name)).toEqual(['bash', 'read', 'write'])
    expect(ctx.tools.get('write', 'agent:a')).toBeUndefined()
    const hidden = await ctx.tools.execute(
      { callId: 'c1', name: 'write', arguments: '{}' },
      { cwd: '/', scope: 'agent:a' },
    )
    expect(hidden.error?.code).toBe('UNKNOWN_TOOL')
    expect(hidden.message.content[0]).toMatchObject({ text: expect.stringContaining('Available tools: bash, read.') })
    // A tool registered for the scope itself is not limited by the restriction.
    ctx.tools.register({ ...echo('exit_plan_mode'), scope: 'agent:a' })
    expect(ctx.tools.schemas('agent:a').map((s) => s.name)).toEqual(['bash', 'exit_plan_mode', 'read'])
    expect(ctx.tools.get('exit_plan_mode', 'agent:a')).toBeDefined()
    expect(() => ctx.tools.restrict('agent:a', () => true)).toThrow(/already registered/)
    undo()
    expect(ctx.tools.schemas('agent:a').map((s) => s.name)).toEqual(['bash', 'exit_plan_mode', 'read', 'write'])
  })

  it('is undone when the restricting plugin unloads', async () => {
    const ctx = await boot()
    ctx.tools.register(echo('read'))
    const fiber = ctx.plugin({
      name: 'limiter',
      inject: ['tools'],
      apply: (inner: Context) => void inner.tools.restrict('agent:a', () => false),
    })
    await fiber
    expect(ctx.tools.list('agent:a')).toEqual([])
    await fiber.dispose()
    expect(ctx.tools.list('agent:a').map((t) => t.name)).toEqual(['read'])
  })
})

describe('standing scope', () => {
  it("puts a plugin's scope-less registrations into the standing scope of its context", async () => {
    const ctx = await boot()
    ctx.tools.register(echo('edit'))
    const scoped = withStandingScope(ctx, 'agent:a')
    const fiber = scoped.plugin({
      name: 'preset-tool',
      inject: ['tools'],
      apply: (inner: Context) => void inner.tools.register(echo('edit')),
    })
    await fiber
    // Same name as the global tool: no conflict, it shadows it for agent a only.
    expect(ctx.tools.list('agent:a').map((t) => t.name)).toEqual(['edit'])
    expect(ctx.tools.get('edit', 'agent:a')?.scope).toBeUndefined()
    expect(ctx.tools.get('edit', 'agent:a')).not.toBe(ctx.tools.get('edit'))
    // A second mount for another agent does not collide either.
    const other = withStandingScope(ctx, 'agent:b').plugin({
      name: 'preset-tool',
      inject: ['tools'],
      apply: (inner: Context) => void inner.tools.register(echo('edit')),
    })
    await other
    await fiber.dispose()
    expect(ctx.tools.get('edit', 'agent:a')).toBe(ctx.tools.get('edit'))
    expect(ctx.tools.get('edit', 'agent:b')).not.toBe(ctx.tools.get('edit'))
  })
})
