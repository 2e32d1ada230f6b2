// Sections tagged with the tools they are guidance for leave the prompt while every one of those
// tools is deferred (sent as a catalogue line only), and come back once one of them is loaded.
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import SystemPrompt from '@dsh/system-prompt'

async function boot() {
  const ctx = new Context()
  await ctx.plugin(SystemPrompt, {
    identity: 'I.',
    sections: { 'dsh:working': false, 'dsh:environment': false, 'dsh:date': false },
  } as never)
  ctx.systemPrompt.registerSection({
    id: 'tool:web',
    order: 340,
    text: 'Web guidance.',
    tools: ['web_search', 'web_fetch'],
  })
  ctx.systemPrompt.registerSection({ id: 'plain', order: 350, text: 'Untagged.' })
  return ctx
}

const input = { provider: 'p', model: 'm', cwd: '/' }

describe('tool-tagged sections', () => {
  it('are left out while all their tools are deferred, and kept otherwise', async () => {
    const ctx = await boot()
    expect(ctx.systemPrompt.assemble(input).system).toBe('I.\n\nWeb guidance.\n\nUntagged.')
    const none = ctx.systemPrompt.assemble({ ...input, deferredTools: ['web_search', 'web_fetch', 'lsp'] })
    expect(none.system).toBe('I.\n\nUntagged.')
    const one = ctx.systemPrompt.assemble({ ...input, deferredTools: ['web_search'] })
    expect(one.system).toBe('I.\n\nWeb guidance.\n\nUntagged.')
    expect(ctx.systemPrompt.sections().find((s) => s.id === 'tool:web')?.tools).toEqual(['web_search', 'web_fetch'])
  })

  it('refuses a tools tag that is not a non-empty list of names', async () => {
    const ctx = await boot()
    for (const tools of [[], [''], 'web_search', [3]]) {
      expect(() => ctx.systemPrompt.registerSection({ id: 'x', order: 1, text: 't', tools: tools as never })).toThrow(
        'prompt section "x": tools must be a non-empty array of tool names when given',
      )
    }
  })
})
