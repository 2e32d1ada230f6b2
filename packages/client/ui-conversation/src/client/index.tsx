// @dsh/ui-conversation/client: the browser half. It fills `conversation.main` with the chat view
// and `conversation.composer` with the composer, both over one ConversationModel per session
// (./store.ts), registers the `conversation` dictionaries (en, zh) and its stylesheet, and
// declares `conversation.chat.node`: each tool call is rendered through that slot's `tool` key
// (ui-tool fills it), with a plain one-line fallback when nothing does.
import type { Context } from 'cordis'
import { memo, useCallback, useEffect, useMemo } from 'react'
import { installStyles, Slot, useCtx, type SessionSlotProps } from '@dsh/client-runtime'
import type { AssistantNode, ConversationSnapshot, ToolNode } from '@dsh/conversation-model'
import { ChatView, type MessageActions } from './chat-view.tsx'
import { Composer, type SendMode } from '@dsh/conversation-composer'
import { useSnapshot, useSnapshotSlice, useStableT } from './hooks.ts'
import { ContextSection, PlanSection } from './panel.tsx'
import { ConversationStore } from './store.ts'
import { en, zh, type Translate } from './strings.ts'
import { CSS } from './styles.ts'
import { type FenceProps, MARKDOWN_CSS, MarkdownFences, warmUp } from '@dsh/ui-markdown'
import type { PromptReference } from '@dsh/web-protocol'
import type {} from '@dsh/ui-input-trigger/shared'

/** A fenced block another half renders (`conversation.fence`, keyed by the fence's language); others stay code. */
function SlotFence(p: FenceProps) {
  return (
    <Slot
      name="conversation.fence"
      slotKey={p.lang}
      single
      props={{ lang: p.lang, code: p.code, complete: p.complete }}
      fallback={p.fallback}
    />
  )
}

export { ChatView, turnClosers, turnOpeners, type ChatViewProps, type MessageActions } from './chat-view.tsx'
export { Composer, type ComposerProps, type SendMode } from '@dsh/conversation-composer'
export { PlanSection, ContextSection } from './panel.tsx'
export { ConversationStore } from './store.ts'
export { useSnapshot, useSnapshotSlice, useStableT } from './hooks.ts'
export { en, zh, translator, type Translate } from './strings.ts'
export * from '@dsh/conversation-model'

/** Props of `conversation.chat.node` entries (keyed by node kind; `tool` today). */
export interface ChatNodeSlotProps {
  sessionId: string
  node: ToolNode
}

/** Props of `conversation.message.actions` entries: more buttons in a committed answer's action bar. */
export interface MessageActionsSlotProps {
  sessionId: string
  /** A committed, uninterrupted answer (`seq`: its `assistant/message` event). */
  node: AssistantNode & { seq: number }
}

declare module '@dsh/client-runtime' {
  interface SlotProps {
    'conversation.chat.node': ChatNodeSlotProps
    'conversation.message.actions': MessageActionsSlotProps
  }
}

export const MESSAGE_ACTIONS_SLOT = 'conversation.message.actions'

export const CHAT_NODE_SLOT = 'conversation.chat.node'
export const NAMESPACE = 'conversation'

function PlainTool({ node, t }: { node: ToolNode; t: Translate }) {
  return (
    <div className="dsh-tool-plain" data-status={node.status}>
      {node.name} · {t(`tool.${node.status}`)}
      {node.result?.isError ? ` · ${node.result.error?.message ?? node.result.text}` : ''}
    </div>
  )
}

const ToolNodeView = memo(function ToolNodeView({
  sessionId,
  node,
  t,
}: {
  sessionId: string
  node: ToolNode
  t: Translate
}) {
  return (
    <Slot
      name={CHAT_NODE_SLOT}
      slotKey="tool"
      single
      props={{ sessionId, node }}
      fallback={<PlainTool node={node} t={t} />}
    />
  )
})

const MemoComposer = memo(Composer)

/** What the composer seat shows from the snapshot: running state and the prompts (by count). */
const composerSlice = (s: ConversationSnapshot) => [
  s.turnRunning,
  s.status,
  s.nodes.reduce((n, node) => (node.kind === 'user' ? n + 1 : n), 0),
]
/** What the panel sections show: the plan, the usage figures and the model. */
const panelSlice = (s: ConversationSnapshot) => [s.todos, s.usage, s.lastInputTokens, s.model?.provider, s.model?.model]

export const name = '@dsh/ui-conversation'
export const inject = ['slots', 'locale', 'remote', 'connection', 'router']

const STARTERS = ['starter.explain', 'starter.tests', 'starter.review']

/** Puts `text` in the page's composer (whichever fills the seat) and focuses it, caret at the end. */
function fillComposer(text: string): void {
  const area = document.querySelector<HTMLTextAreaElement>('textarea[data-composer]')
  if (!area) return
  Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value')?.set?.call(area, text)
  area.dispatchEvent(new Event('input', { bubbles: true }))
  area.focus()
  area.setSelectionRange(text.length, text.length)
}

/** A new session: what dsh can do here, the folder it works in, and a few starters. */
function EmptyState({ sessionId, t }: { sessionId: string; t: Translate }) {
  const cwd = useCtx().catalog.get(sessionId)?.cwd
  return (
    <div className="dsh-empty" data-testid="empty-state">
      <h2 className="dsh-empty-title">{t('empty.title')}</h2>
      {cwd ? <p className="dsh-empty-where">{t('empty.where', { path: cwd })}</p> : null}
      <p className="dsh-empty-what">{t('empty.what')}</p>
      <ul className="dsh-empty-starters" aria-label={t('empty.starters')}>
        {STARTERS.map((key) => (
          <li key={key}>
            <button type="button" className="dsh-starter" onClick={() => fillComposer(t(key))}>
              {t(key)}
            </button>
          </li>
        ))}
      </ul>
    </div>
  )
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  const store = new ConversationStore(ctx.connection)
  ctx.effect(() => () => store.dispose(), 'ui-conversation: session models')
  // The composer's `@` picks (@dsh/ui-input-trigger), while that half is loaded.
  let pickedReferences: ((sessionId: string, text: string) => PromptReference[]) | undefined
  ctx.inject(['inputTriggers'], (inner) => {
    const take = (sessionId: string, text: string) => inner.inputTriggers.takeReferences(sessionId, text)
    pickedReferences = take
    inner.effect(() => () => {
      if (pickedReferences === take) pickedReferences = undefined
    })
  })
  installStyles(ctx, name, CSS + MARKDOWN_CSS, 'ui-conversation: stylesheet')
  // Compile the Markdown lexer's expressions while the page is idle: the first answer of a fresh
  // page then renders without that one-time cost inside its frame. No timeout: a forced run
  // could land in the middle of a stream, which is what this avoids.
  ctx.effect(() => {
    const idle = (globalThis as { requestIdleCallback?: (run: () => void) => number }).requestIdleCallback
    if (typeof idle !== 'function' || typeof document === 'undefined') return () => {}
    let cancelled = false
    idle(() => void (cancelled || warmUp()))
    return () => void (cancelled = true)
  }, 'ui-conversation: markdown warm-up')

  /**
   * Retry and edit-and-resend: a fork of the session before the message's turn (the host's
   * `sessions.fork`), the text sent there, and the fork opened. This session is left as it is.
   * When the send fails the fork still opens, with the text in its composer.
   */
  function messageActions(sessionId: string): MessageActions {
    return {
      async resend(node, text) {
        const { session } = await ctx.remote.call('sessions.fork', { sessionId, beforeTurn: node.turn })
        const fork = session.sessionId
        try {
          await ctx.remote.call('sessions.prompt', { sessionId: fork, text })
        } catch (error) {
          store.drafts.set(fork, text)
          ctx.router.openSession(fork)
          throw error
        }
        ctx.router.openSession(fork)
      },
      async fork(beforeTurn) {
        const { session } = await ctx.remote.call('sessions.fork', {
          sessionId,
          ...(beforeTurn !== undefined ? { beforeTurn } : {}),
        })
        ctx.router.openSession(session.sessionId)
      },
    }
  }

  /** The session's model, held while the calling seat is mounted. */
  function useSessionModel(sessionId: string) {
    const model = useMemo(() => store.model(sessionId), [sessionId])
    useEffect(() => store.hold(sessionId), [sessionId])
    return model
  }

  function ConversationMain({ sessionId, feed }: SessionSlotProps) {
    // The settled feed changes with every event but a streamed delta; the chat needs only whether
    // the log loaded or failed. The body re-renders on those and on the model's own changes, so
    // the feed readers' render (synchronous, in the frame) does not carry the whole chat with it.
    return (
      <ConversationBody
        sessionId={sessionId}
        hasFeed={feed !== undefined}
        loaded={feed?.loaded === true}
        failed={feed?.error ? feed.error.message : undefined}
      />
    )
  }

  const ConversationBody = memo(function ConversationBody({
    sessionId,
    hasFeed,
    loaded,
    failed,
  }: {
    sessionId: string
    hasFeed: boolean
    loaded: boolean
    failed?: string
  }) {
    const t = useStableT(NAMESPACE)
    const model = useSessionModel(sessionId)
    const snapshot = useSnapshot(model)
    const renderTool = useMemo(
      () => (node: ToolNode) => <ToolNodeView sessionId={sessionId} node={node} t={t} />,
      [sessionId, t],
    )
    const actions = useMemo(() => messageActions(sessionId), [sessionId])
    const renderAnswerActions = useMemo(
      () => (node: AssistantNode) => (
        <Slot name={MESSAGE_ACTIONS_SLOT} props={{ sessionId, node: node as AssistantNode & { seq: number } }} />
      ),
      [sessionId],
    )
    // Before the first replay, an empty list means "not loaded yet", not "nothing said yet".
    const empty =
      failed !== undefined ? (
        <span role="alert" className="dsh-warn">
          {t('loadFailed', { message: failed })}
        </span>
      ) : hasFeed && !loaded ? (
        <span role="status">{t('loading')}</span>
      ) : (
        <EmptyState sessionId={sessionId} t={t} />
      )
    return (
      <div className="dsh-conv" data-session={sessionId} data-loaded={loaded || undefined}>
        <MarkdownFences.Provider value={SlotFence}>
          <ChatView
            key={sessionId}
            snapshot={snapshot}
            t={t}
            renderTool={renderTool}
            actions={actions}
            renderAnswerActions={renderAnswerActions}
            {...(empty ? { empty } : {})}
          />
        </MarkdownFences.Provider>
      </div>
    )
  })

  function ComposerSeat({ sessionId, row, feed }: SessionSlotProps) {
    const t = useStableT(NAMESPACE)
    const c = useCtx()
    const model = useSessionModel(sessionId)
    // Re-renders when the running state or the prompts change, not on every streamed frame.
    const snapshot = useSnapshotSlice(model, composerSlice)
    // biome-ignore lint/correctness/useExhaustiveDependencies: the prompts change only when a user node is added (or the session changes), so the memo is keyed on that count, not on every streamed frame
    const history = useMemo(
      () => snapshot.nodes.flatMap((n) => (n.kind === 'user' ? [n.text] : [])),
      [snapshot.nodes.filter((n) => n.kind === 'user').length, sessionId],
    )
    const running = snapshot.turnRunning || snapshot.status === 'running' || snapshot.status === 'waiting'
    // Stable props: the composer (and the pickers in its tools slot) re-render only when what
    // they show changes.
    const onSend = useCallback(
      async (text: string, mode: SendMode) => {
        const sentAfter = model.snapshot().lastSeq
        // With the `@` picker loaded, the picked files and sessions go along (even none): only they
        // become context, and `@words` typed in the text stay text.
        const references = pickedReferences?.(sessionId, text)
        const result = await c.remote.call('sessions.prompt', {
          sessionId,
          text,
          mode,
          ...(references ? { references } : {}),
        })
        if (result.disposition === 'queued') model.addQueued(text, 'queue', sentAfter)
        else if (result.disposition === 'steered') model.addQueued(text, 'steer', sentAfter)
      },
      [c, model, sessionId],
    )
    const onCancel = useCallback(() => {
      void c.remote.call('sessions.cancel', { sessionId }).catch(() => {})
    }, [c, sessionId])
    const onDraftChange = useCallback(
      (text: string) => {
        if (text) store.drafts.set(sessionId, text)
        else store.drafts.delete(sessionId)
      },
      [sessionId],
    )
    const tools = useMemo(
      () => <Slot name="conversation.composer.tools" props={{ sessionId, feed, ...(row ? { row } : {}) }} />,
      [sessionId, feed, row],
    )
    return (
      <MemoComposer
        key={sessionId}
        t={t}
        running={running}
        disabled={row?.archived === true}
        onSend={onSend}
        onCancel={onCancel}
        history={history}
        tools={tools}
        autoFocus
        initialText={store.drafts.get(sessionId) ?? ''}
        onDraftChange={onDraftChange}
      />
    )
  }

  function PanelSections({ sessionId }: SessionSlotProps) {
    const t = useStableT(NAMESPACE)
    const model = useSessionModel(sessionId)
    const snapshot = useSnapshotSlice(model, panelSlice)
    return (
      <>
        <PlanSection snapshot={snapshot} t={t} />
        <ContextSection snapshot={snapshot} t={t} />
      </>
    )
  }

  ctx.slots.register('conversation.main', { id: 'ui-conversation', order: 0, component: ConversationMain })
  ctx.slots.register('conversation.composer', { id: 'ui-conversation', order: 0, component: ComposerSeat })
  ctx.slots.register('panel.side', { id: 'ui-conversation', order: 0, component: PanelSections })
}

export default { name, inject, apply }
