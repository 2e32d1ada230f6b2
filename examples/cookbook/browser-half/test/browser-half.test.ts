// The browser-half recipe in the page's own runtime pieces: the real slot registry of
// @dsh/client-runtime (a browser Cordis context), the component rendered by React from a session
// feed, and the unload that takes it out of the slot. The full page path (the web host serving
// `./client`, Chromium loading it) is covered by the packages/client/ui-* browser tests.
import { Context } from 'cordis'
import { renderToStaticMarkup } from 'react-dom/server'
import { createElement } from 'react'
import { expect, it } from 'vitest'
import { SlotRegistry, type SessionFeedState } from '@dsh/client-runtime'
import half, { ToolTally } from '../client.ts'

it('registers its panel while loaded and renders the tally from the session log', async () => {
  const ctx = new Context()
  await ctx.plugin(SlotRegistry)
  const fiber = ctx.plugin(half)
  await fiber
  const entries = ctx.slots.entries('panel.side')
  expect(entries.map((e) => e.id)).toEqual(['cookbook-tool-tally'])

  const events = [
    { seq: 0, type: 'turn/start', data: {} },
    { seq: 1, type: 'tool/call', data: { callId: 'a', name: 'bash', arguments: '{}' } },
    { seq: 2, type: 'tool/call', data: { callId: 'b', name: 'read', arguments: '{}' } },
    { seq: 3, type: 'tool/call', data: { callId: 'c', name: 'bash', arguments: '{}' } },
  ]
  const feed = { events } as unknown as SessionFeedState
  const html = renderToStaticMarkup(createElement(entries[0].component, { sessionId: 's1', feed }))
  expect(html).toContain('<li data-tool="bash">bash: 2</li><li data-tool="read">read: 1</li>')
  expect(
    renderToStaticMarkup(
      createElement(ToolTally, { sessionId: 's1', feed: { events: [] } as unknown as SessionFeedState }),
    ),
  ).toContain('No tool calls yet.')

  await fiber.dispose()
  expect(ctx.slots.entries('panel.side')).toEqual([])
})
