import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import ToolRegistry from '@dsh/tools'
import { withStandingScope } from '@dsh/scope'
import * as Presentation from '../src/index.ts'

describe('@dsh/agent-tool-presentation', () => {
  it('sets the presentation mode of the agent it is mounted for, and unloads it', async () => {
    const ctx = new Context()
    await ctx.plugin(ToolRegistry)
    const fiber = withStandingScope(ctx, 'agent:a').plugin(Presentation, { mode: 'code' })
    await fiber
    expect(ctx.tools.presentAs('agent:a')).toBe('code')
    expect(ctx.tools.presentAs('agent:b')).toBe('native')
    await fiber.dispose()
    expect(ctx.tools.presentAs('agent:a')).toBe('native')
  })

  it('refuses a bad mode and a mount outside a preset', async () => {
    expect(() => Presentation.Config({ mode: 'sideways' } as never)).toThrow()
    const ctx = new Context()
    await ctx.plugin(ToolRegistry)
    await expect(ctx.plugin(Presentation, { mode: 'code' })).rejects.toThrow(/is a row of an agent preset/)
    expect(ctx.tools.presentAs()).toBe('native')
  })
})
