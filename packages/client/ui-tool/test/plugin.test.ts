// ui-tool's browser half as a Cordis plugin on a real root with the runtime's slot and locale
// services: what it registers, and that unloading the plugin takes all of it away.
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { Locale, Remote, SlotRegistry } from '@dsh/client-runtime'
import uiTool from '../src/client/index.tsx'

async function root() {
  const ctx = new Context()
  await ctx.plugin(SlotRegistry)
  await ctx.plugin(Locale, { lang: 'zh' })
  await ctx.plugin(Remote, { baseUrl: 'http://127.0.0.1:9' })
  return ctx
}

describe('browser halves', () => {
  it('ui-tool fills the tool key of the chat node slot and one card per built-in tool; unloading removes them', async () => {
    const ctx = await root()
    const fiber = ctx.plugin(uiTool)
    await fiber
    expect(ctx.slots.entries('conversation.chat.node', 'tool').map((e) => e.id)).toEqual(['ui-tool'])
    for (const tool of ['bash', 'edit', 'write', 'read', 'grep', 'glob', 'todo_write']) {
      expect(ctx.slots.entries('tool.call.toolview', tool)).toHaveLength(1)
    }
    expect(ctx.slots.entries('tool.call.toolview').map((e) => e.order)).toEqual([100])
    expect(ctx.locale.t('tool', 'status.error')).toBe('失败')
    await fiber.dispose()
    expect(ctx.slots.names()).toEqual([])
    expect(ctx.locale.t('tool', 'status.error')).toBe('tool.status.error')
  })

  it('a tool package overrides a built-in card by registering the same key with a lower order', async () => {
    const ctx = await root()
    await ctx.plugin(uiTool)
    const Mine = () => null
    ctx.slots.register('tool.call.toolview', { id: 'mine', key: 'bash', order: 0, component: Mine })
    expect(ctx.slots.entries('tool.call.toolview', 'bash')[0].component).toBe(Mine)
  })
})
