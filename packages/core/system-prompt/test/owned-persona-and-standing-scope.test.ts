import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import SystemPrompt from '@dsh/system-prompt'
import { withStandingScope } from '@dsh/scope'

const input = { provider: 'p', model: 'm', cwd: '/w', date: '2026-01-02' }
const WITHOUT_BUILTINS = { 'dsh:working': false, 'dsh:environment': false, 'dsh:date': false }

async function boot() {
  const ctx = new Context()
  await ctx.plugin(SystemPrompt, { identity: 'IDENTITY', persona: 'DEPLOYMENT', sections: WITHOUT_BUILTINS } as never)
  return ctx
}

describe('a persona that owns the prompt', () => {
  it('replaces identity and every section for its scope only, with variables rendered', async () => {
    const ctx = await boot()
    ctx.systemPrompt.registerSection({ id: 'rules', order: 1, text: 'RULES' })
    const undo = ctx.systemPrompt.setPersona('You are Ada, working in {{cwd}}.', 'agent:a', { owns: true })
    expect(
      ctx.systemPrompt.assemble({
        ...input,
        scope: 'agent:a',
        tools: [{ name: 'z', description: '', parameters: { type: 'object' } }],
      }),
    ).toEqual({
      system: 'You are Ada, working in /w.',
      tools: [{ name: 'z', description: '', parameters: { type: 'object' } }],
    })
    expect(ctx.systemPrompt.personaOwns('agent:a')).toBe(true)
    expect(ctx.systemPrompt.assemble({ ...input, scope: 'agent:b' }).system).toBe('IDENTITY\n\nRULES\n\nDEPLOYMENT')
    undo()
    expect(ctx.systemPrompt.assemble({ ...input, scope: 'agent:a' }).system).toBe('IDENTITY\n\nRULES\n\nDEPLOYMENT')
  })
})

describe('standing scope', () => {
  it("scopes a plugin's sections and persona when they name no scope", async () => {
    const ctx = await boot()
    const fiber = withStandingScope(ctx, 'agent:a').plugin({
      name: 'preset-row',
      inject: ['systemPrompt'],
      apply(inner: Context) {
        inner.systemPrompt.registerSection({ id: 'tool:x', order: 300, text: 'X GUIDANCE' })
        inner.systemPrompt.setPersona('SHADOW')
      },
    })
    await fiber
    expect(ctx.systemPrompt.assemble({ ...input, scope: 'agent:a' }).system).toBe('IDENTITY\n\nX GUIDANCE\n\nSHADOW')
    expect(ctx.systemPrompt.assemble(input).system).toBe('IDENTITY\n\nDEPLOYMENT')
    await fiber.dispose()
    expect(ctx.systemPrompt.assemble({ ...input, scope: 'agent:a' }).system).toBe('IDENTITY\n\nDEPLOYMENT')
  })
})
