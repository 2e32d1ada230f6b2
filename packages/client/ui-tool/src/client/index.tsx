// @dsh/ui-tool/client: tool presentation. It answers the `tool` key of ui-conversation's
// `conversation.chat.node` slot with a dispatcher that renders the `tool.call.toolview` entry
// keyed by the call's tool name, else the unkeyed (generic) entry, else the built-in generic
// card. The built-in cards are registered into that slot at order 100, so another package
// replaces one by registering the same key with a lower order.
import type { Context } from 'cordis'
import { memo, type ComponentType } from 'react'
import { installStyles, Slot } from '@dsh/client-runtime'
import { useStableT } from './use-t.ts'
import type { ToolNode } from '@dsh/conversation-model'
import { BUILTIN_CARDS, GenericCard, type ToolCardProps } from './cards.tsx'
import { en, zh } from './strings.ts'
import { CSS } from './styles.ts'

export {
  BashCard,
  DiffCard,
  SummaryCard,
  TodoCard,
  GenericCard,
  BUILTIN_CARDS,
  cardFor,
  type ToolCardProps,
} from './cards.tsx'
export { LongText, type LongTextProps } from './long-text.tsx'
export * from '../present.ts'
export { en, zh, translator } from './strings.ts'

/** Props of `tool.call.toolview` entries. */
export interface ToolViewProps {
  sessionId: string
  node: ToolNode
}

declare module '@dsh/client-runtime' {
  interface SlotProps {
    'tool.call.toolview': ToolViewProps
  }
}

export const NAMESPACE = 'tool'
export const TOOL_VIEW_SLOT = 'tool.call.toolview'

/** Wraps a props-only card so it takes the slot's props and translates through `ctx.locale`. */
export function slotCard(Card: ComponentType<ToolCardProps>): ComponentType<ToolViewProps> {
  const Wrapped = memo(
    function ToolView({ node }: ToolViewProps) {
      const t = useStableT(NAMESPACE)
      return <Card node={node} t={t} />
    },
    (a, b) => a.node === b.node,
  )
  Wrapped.displayName = `ToolView(${Card.displayName ?? Card.name ?? 'card'})`
  return Wrapped
}

const Generic = slotCard(GenericCard)

const Dispatch = memo(
  function ToolDispatch(props: ToolViewProps) {
    return (
      <Slot
        name={TOOL_VIEW_SLOT}
        slotKey={props.node.name}
        single
        props={props}
        fallback={<Slot name={TOOL_VIEW_SLOT} single props={props} fallback={<Generic {...props} />} />}
      />
    )
  },
  (a, b) => a.node === b.node && a.sessionId === b.sessionId,
)

export const name = '@dsh/ui-tool'
export const inject = ['slots', 'locale']

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-tool: stylesheet')
  ctx.slots.register('conversation.chat.node', { id: 'ui-tool', key: 'tool', order: 0, component: Dispatch })
  for (const [tool, Card] of Object.entries(BUILTIN_CARDS)) {
    ctx.slots.register(TOOL_VIEW_SLOT, { id: 'ui-tool', key: tool, order: 100, component: slotCard(Card) })
  }
  ctx.slots.register(TOOL_VIEW_SLOT, { id: 'ui-tool', order: 100, component: Generic })
}

export default { name, inject, apply }
