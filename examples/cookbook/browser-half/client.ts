// Recipe: a browser half, browser side. Its default export is a Cordis plugin for the page: it
// registers a component in the `panel.side` slot, which shows how often the session called each
// tool. The component is a pure fold of the session's event log (`props.feed.events`), so it needs
// no request of its own and is the same after a reload. React, Cordis and @dsh/client-runtime stay
// bare imports: the page shares one copy of each with every half.
import { createElement } from 'react'
import type { Context } from 'cordis'
import type { SessionSlotProps } from '@dsh/client-runtime'

/** Tool name -> calls, in first-call order, from `tool/call` events. */
export function tally(events: readonly { type: string; data?: unknown }[]): [string, number][] {
  const counts = new Map<string, number>()
  for (const e of events) {
    if (e.type !== 'tool/call') continue
    const name = (e.data as { name?: unknown } | undefined)?.name
    if (typeof name === 'string') counts.set(name, (counts.get(name) ?? 0) + 1)
  }
  return [...counts]
}

export function ToolTally(props: SessionSlotProps) {
  const rows = tally(props.feed.events as unknown as { type: string; data?: unknown }[])
  return createElement(
    'section',
    { className: 'cookbook-tool-tally', 'data-session': props.sessionId },
    createElement('h3', null, 'Tools used'),
    rows.length
      ? createElement(
          'ul',
          null,
          ...rows.map(([tool, n]) => createElement('li', { key: tool, 'data-tool': tool }, `${tool}: ${n}`)),
        )
      : createElement('p', null, 'No tool calls yet.'),
  )
}

export default {
  name: 'cookbook-tool-tally/client',
  inject: ['slots'],
  apply(ctx: Context) {
    ctx.slots.register('panel.side', { id: 'cookbook-tool-tally', order: 50, component: ToolTally })
  },
}
