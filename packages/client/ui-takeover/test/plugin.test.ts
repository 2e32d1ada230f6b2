// ui-takeover's browser half as a Cordis plugin on a real root with the runtime's slot and locale
// services: what it registers, and that unloading the plugin takes all of it away.
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { Locale, Remote, SlotRegistry } from '@dsh/client-runtime'
import uiTakeover from '../src/client/index.tsx'

async function root() {
  const ctx = new Context()
  await ctx.plugin(SlotRegistry)
  await ctx.plugin(Locale, { lang: 'zh' })
  await ctx.plugin(Remote, { baseUrl: 'http://127.0.0.1:9' })
  return ctx
}

describe('browser half', () => {
  it('ui-takeover fills the approval and question keys of the takeover seat; unloading removes them', async () => {
    const ctx = await root()
    const fiber = ctx.plugin(uiTakeover)
    await fiber
    expect(ctx.slots.entries('conversation.composer.takeover', 'approval').map((e) => e.id)).toEqual(['ui-takeover'])
    expect(ctx.slots.entries('conversation.composer.takeover', 'question').map((e) => e.id)).toEqual(['ui-takeover'])
    await fiber.dispose()
    expect(ctx.slots.names()).toEqual([])
  })
})
