// The chat view: renders a ConversationSnapshot's nodes in order. Props only: the tool card
// renderer comes from the caller (the plugin passes a slot), strings from `t`. It follows the
// newest content while the reader is at the bottom and stops following when they scroll up.
// Only the newest WINDOW nodes are mounted at first (a long history paints as fast as a short
// one); older ones are mounted STEP at a time when the reader scrolls to the top (or presses
// "Show earlier"), keeping what is on screen in place.
import { memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from 'react'
import type {
  AssistantNode,
  ContextNode,
  ConversationNode,
  ConversationSnapshot,
  NoticeNode,
  ThinkingNode,
  ToolNode,
  TurnEndNode,
  UserNode,
} from '@dsh/conversation-model'
import { Markdown } from '@dsh/ui-markdown'
import { GitFork, IconButton } from '@dsh/client-runtime/ui'
import type { Translate } from './strings.ts'
import { CopyAction, type MessageActions, UserMessage } from './user-message.tsx'

export type { MessageActions } from './user-message.tsx'

export interface ChatViewProps {
  snapshot: ConversationSnapshot
  t: Translate
  /** Renders one tool call (the plugin passes the `conversation.chat.node` slot). */
  renderTool: (node: ToolNode) => ReactNode
  /** Shown when the conversation has no nodes yet. */
  empty?: ReactNode
  /** Edit-and-resend and retry on user messages (the plugin passes fork + prompt). */
  actions?: MessageActions
  /** More actions of a committed answer (the plugin passes the `conversation.message.actions` slot). */
  renderAnswerActions?: ((node: AssistantNode) => ReactNode) | undefined
}

const ContextRow = memo(function ContextRow({ node, t }: { node: ContextNode; t: Translate }) {
  const origin = node.origin.startsWith('plugin:') ? (node.label ?? node.origin.slice(7)) : undefined
  return (
    <details className="dsh-context" data-node="context">
      <summary>{origin ? t('contextFrom', { origin }) : t('systemContext')}</summary>
      <div className="dsh-context-body">{node.text}</div>
    </details>
  )
})

/** The end of the newest reasoning line, for a one-line preview while it streams (read from the node's bounded `preview`, never the whole text). */
function tail(text: string, max = 90): string {
  const line = text.slice(text.lastIndexOf('\n', text.length - 2) + 1).trim()
  return line.length > max ? `…${line.slice(-max)}` : line
}

/** An opened reasoning body is cut into blocks of at least this many characters, each ending after a newline. */
export const BODY_BLOCK = 4096

/**
 * Cuts `text` into blocks that end after a newline once they hold `size` characters (the last
 * block holds the rest). The complete blocks of `previous` (the cut of an earlier text) are
 * reused while `text` still starts with them, so while reasoning streams only the last block is
 * new: the earlier ones keep their identity and their rows skip re-rendering. Blocks of a text
 * that does not extend `previous` are cut afresh.
 */
export function textBlocks(text: string, previous: readonly string[] = [], size = BODY_BLOCK): string[] {
  const blocks: string[] = []
  let at = 0
  for (let i = 0; i < previous.length - 1 && text.startsWith(previous[i], at); i++) {
    blocks.push(previous[i])
    at += previous[i].length
  }
  while (at < text.length) {
    const nl = text.length - at > size ? text.indexOf('\n', at + size - 1) : -1
    const end = nl < 0 ? text.length : nl + 1
    blocks.push(text.slice(at, end))
    at = end
  }
  return blocks
}

const TextBlock = memo(function TextBlock({ text }: { text: string }) {
  return <div>{text}</div>
})

/** The whole reasoning while its row is open; as it streams, only the last block re-renders. */
function ThinkingBody({ text }: { text: string }) {
  const last = useRef<string[]>([])
  const blocks = useMemo(() => (last.current = textBlocks(text, last.current)), [text])
  return (
    <div className="dsh-thinking-body">
      {blocks.map((block, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the blocks of one text in order; the index is their identity, so while the text streams only the last block re-renders
        <TextBlock key={i} text={block} />
      ))}
    </div>
  )
}

const ThinkingRow = memo(function ThinkingRow({ node, t }: { node: ThinkingNode; t: Translate }) {
  const label = node.streaming
    ? t('thinking')
    : node.durationMs !== undefined && node.durationMs >= 1000
      ? t('thought', { seconds: Math.round(node.durationMs / 1000) })
      : t('thoughtBriefly')
  // The body (possibly very long reasoning) is rendered only while the row is open.
  const [open, setOpen] = useState(false)
  return (
    <details
      className="dsh-thinking"
      data-node="thinking"
      data-streaming={node.streaming || undefined}
      open={open}
      onToggle={(e) => setOpen(e.currentTarget.open)}
    >
      <summary>
        {node.streaming ? <span className="dsh-pulse" aria-hidden="true" /> : null}
        {label}
        {node.streaming && !open ? (
          <span className="dsh-thinking-preview" aria-hidden="true">
            {tail(node.preview ?? node.text)}
          </span>
        ) : null}
      </summary>
      {open ? <ThinkingBody text={node.text} /> : null}
    </details>
  )
})

/** "Fork from here" on the answer that closed a turn: a new session holding the log up to it. */
function ForkAction({ t, onFork }: { t: Translate; onFork: () => Promise<void> }) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  return (
    <>
      <IconButton
        label={t('message.fork')}
        icon={GitFork}
        size={14}
        data-action="fork"
        disabled={busy}
        onClick={() => {
          setBusy(true)
          setError(undefined)
          onFork().then(
            () => setBusy(false),
            (e: unknown) => {
              setBusy(false)
              setError(t('message.forkFailed', { message: (e as Error)?.message ?? String(e) }))
            },
          )
        }}
      />
      {error ? (
        <span className="dsh-msg-meta dsh-msg-error" role="alert">
          {error}
        </span>
      ) : null}
    </>
  )
}

const AssistantMessage = memo(function AssistantMessage({
  node,
  t,
  fork,
  more,
}: {
  node: AssistantNode
  t: Translate
  /** Present on the answer that closed a finished turn. */
  fork?: (() => Promise<void>) | undefined
  more?: ((node: AssistantNode) => ReactNode) | undefined
}) {
  return (
    <div className="dsh-msg dsh-msg-assistant" data-node="assistant" data-streaming={node.streaming || undefined}>
      <Markdown text={node.text} streaming={node.streaming} t={t} />
      {node.streaming ? <span className="dsh-caret" aria-hidden="true" /> : null}
      {node.interrupted ? <div className="dsh-msg-meta dsh-warn">{t('interrupted')}</div> : null}
      {!node.streaming && node.text ? (
        <div className="dsh-msg-actions" data-actions="assistant">
          <CopyAction text={node.text} t={t} label={t('message.copyAnswer')} />
          {fork ? <ForkAction t={t} onFork={fork} /> : null}
          {more && node.seq !== undefined && !node.interrupted ? more(node) : null}
        </div>
      ) : null}
    </div>
  )
})

const TurnEndRow = memo(function TurnEndRow({ node, t }: { node: TurnEndNode; t: Translate }) {
  const known = ['cancelled', 'error', 'max-tokens', 'blocked', 'interrupted']
  const title =
    node.reason === 'completed'
      ? null
      : known.includes(node.reason)
        ? t(`turn.${node.reason}`)
        : t('turn.other', { reason: node.reason })
  return (
    <div
      className={`dsh-turn-end dsh-turn-${node.reason}`}
      data-node="turn-end"
      data-reason={node.reason}
      role="status"
    >
      {title ? <div className="dsh-turn-end-title">{title}</div> : null}
      {node.error ? <div className="dsh-turn-end-error">{node.error.message}</div> : null}
      {node.rejected.map((text, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: an append-only list of texts that may repeat; the index is their identity
        <div key={i} className="dsh-msg-meta">
          {t('notSent', { text })}
        </div>
      ))}
    </div>
  )
})

const NoticeRow = memo(function NoticeRow({ node, t }: { node: NoticeNode; t: Translate }) {
  return (
    <div className="dsh-notice" data-node="notice">
      {t(`notice.${node.code}`, { detail: node.detail ?? '' })}
    </div>
  )
})

function renderNode(
  node: ConversationNode,
  t: Translate,
  renderTool: (node: ToolNode) => ReactNode,
  actionsFor: (node: UserNode) => MessageActions | undefined,
  forkFor: (node: AssistantNode) => (() => Promise<void>) | undefined,
  more?: (node: AssistantNode) => ReactNode,
): ReactNode {
  switch (node.kind) {
    case 'user': {
      const actions = actionsFor(node)
      return <UserMessage key={node.key} node={node} t={t} {...(actions ? { actions } : {})} />
    }
    case 'context':
      return <ContextRow key={node.key} node={node} t={t} />
    case 'thinking':
      return <ThinkingRow key={node.key} node={node} t={t} />
    case 'assistant':
      return <AssistantMessage key={node.key} node={node} t={t} fork={forkFor(node)} more={more} />
    case 'tool':
      return (
        <div key={node.key} className="dsh-tool-slot" data-node="tool" data-tool={node.name} data-status={node.status}>
          {renderTool(node)}
        </div>
      )
    case 'turn-end':
      return <TurnEndRow key={node.key} node={node} t={t} />
    case 'notice':
      return <NoticeRow key={node.key} node={node} t={t} />
  }
}

/** Whether the last node is already showing progress (so no separate "working" row is needed). */
function tailIsLive(nodes: readonly ConversationNode[]): boolean {
  const last = nodes.at(-1)
  if (!last) return false
  return (
    ((last.kind === 'assistant' || last.kind === 'thinking') && last.streaming) ||
    (last.kind === 'tool' && (last.status === 'running' || last.status === 'streaming'))
  )
}

/** Nodes mounted at first, and how many more each reveal of older ones adds. */
export const WINDOW = 60
const STEP = 60

/**
 * The keys of the user messages that opened their turn: a fork before that turn starts with the
 * message, so it can be resent (a message steered into or queued behind it cannot).
 */
export function turnOpeners(nodes: readonly ConversationNode[]): Set<string> {
  const keys = new Set<string>()
  let turn: number | undefined
  for (const node of nodes) {
    if (node.kind !== 'user') continue
    if (node.turn >= 0 && node.turn !== turn) keys.add(node.key)
    turn = node.turn
  }
  return keys
}

/**
 * The answers that closed a finished turn, each with the `beforeTurn` of a fork that keeps the log
 * up to it: the next turn's number, or undefined for the last turn (the whole log). A turn still
 * running has none.
 */
export function turnClosers(nodes: readonly ConversationNode[], turnRunning: boolean): Map<string, number | undefined> {
  const last = new Map<number, string>()
  let newest = -1
  for (const node of nodes) {
    if (!('turn' in node)) continue
    newest = Math.max(newest, node.turn)
    if (node.kind === 'assistant' && !node.streaming && node.text) last.set(node.turn, node.key)
  }
  const closers = new Map<string, number | undefined>()
  for (const [turn, key] of last) {
    if (turn < newest) closers.set(key, turn + 1)
    else if (!turnRunning) closers.set(key, undefined)
  }
  return closers
}

export function ChatView({ snapshot, t, renderTool, empty, actions, renderAnswerActions }: ChatViewProps) {
  const scroller = useRef<HTMLDivElement>(null)
  const following = useRef(true)
  const [showJump, setShowJump] = useState(false)

  const onScroll = useCallback(() => {
    const el = scroller.current
    if (!el) return
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 48
    following.current = atBottom
    setShowJump(!atBottom)
  }, [])

  // biome-ignore lint/correctness/useExhaustiveDependencies: runs after each new snapshot is rendered, to keep the newest row in view while following
  useLayoutEffect(() => {
    const el = scroller.current
    if (el && following.current) el.scrollTop = el.scrollHeight
  }, [snapshot.version])

  // Content also grows without a new snapshot (rows laid out late, code highlighted): keep the
  // bottom in view while following.
  const inner = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const el = scroller.current
    const content = inner.current
    if (!el || !content || typeof ResizeObserver !== 'function') return
    const observer = new ResizeObserver(() => {
      if (following.current) el.scrollTop = el.scrollHeight
    })
    observer.observe(content)
    return () => observer.disconnect()
  }, [])

  const jump = () => {
    const el = scroller.current
    if (!el) return
    following.current = true
    el.scrollTop = el.scrollHeight
    setShowJump(false)
  }

  // The first node index the reader revealed (undefined: the newest WINDOW only).
  const [pinned, setPinned] = useState<number | undefined>(undefined)
  const all = snapshot.nodes
  const tailStart = Math.max(0, all.length - WINDOW)
  const start = pinned === undefined ? tailStart : Math.min(pinned, tailStart)
  const nodes = start === 0 ? all : all.slice(start)
  const openers = useMemo(() => (actions ? turnOpeners(all) : undefined), [actions, all])
  const actionsFor = useCallback(
    (node: UserNode) => (actions && openers?.has(node.key) ? actions : undefined),
    [actions, openers],
  )
  const closers = useMemo(
    () => (actions ? turnClosers(all, snapshot.turnRunning) : undefined),
    [actions, all, snapshot.turnRunning],
  )
  // One function per answer and fork point, kept while they stay the same (the rows are memoized).
  const forks = useRef(new Map<string, { before: number | undefined; run: () => Promise<void> }>())
  const forkFor = useCallback(
    (node: AssistantNode) => {
      if (!actions || !closers?.has(node.key)) return undefined
      const before = closers.get(node.key)
      const known = forks.current.get(node.key)
      if (known && known.before === before) return known.run
      const run = () => actions.fork(before)
      forks.current.set(node.key, { before, run })
      return run
    },
    [actions, closers],
  )
  // Keep the reader's place when older rows are mounted above it.
  const fromBottom = useRef<number | undefined>(undefined)
  const revealEarlier = useCallback(() => {
    const el = scroller.current
    if (el) fromBottom.current = el.scrollHeight - el.scrollTop
    setPinned(Math.max(0, start - STEP))
  }, [start])
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs after older rows were mounted (start moved) to restore the reader's place
  useLayoutEffect(() => {
    const el = scroller.current
    if (!el || fromBottom.current === undefined) return
    el.scrollTop = el.scrollHeight - fromBottom.current
    fromBottom.current = undefined
  }, [start])
  // Scrolled to the top (or the rows do not fill the view): mount older rows.
  const sentinel = useRef<HTMLButtonElement>(null)
  useEffect(() => {
    const el = sentinel.current
    const root = scroller.current
    if (!el || !root || typeof IntersectionObserver !== 'function') return
    const observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting)) revealEarlier()
      },
      { root, rootMargin: '200px 0px 0px 0px' },
    )
    observer.observe(el)
    return () => observer.disconnect()
    // revealEarlier changes with start, so this also re-runs when the sentinel mounts or unmounts.
  }, [revealEarlier])

  return (
    <div className="dsh-chat" ref={scroller} onScroll={onScroll} data-running={snapshot.turnRunning || undefined}>
      <div className="dsh-chat-inner" ref={inner} role="log" aria-live="polite" aria-relevant="additions">
        {start > 0 ? (
          <button
            type="button"
            ref={sentinel}
            className="dsh-link-button dsh-earlier"
            data-earlier={start}
            onClick={revealEarlier}
          >
            {t('earlier', { count: start })}
          </button>
        ) : null}
        {nodes.length === 0 ? (
          <div className="dsh-chat-empty">{empty ?? t('empty')}</div>
        ) : (
          nodes.map((node) => renderNode(node, t, renderTool, actionsFor, forkFor, renderAnswerActions))
        )}
        {snapshot.turnRunning &&
        !tailIsLive(nodes) &&
        snapshot.approvals.length === 0 &&
        snapshot.questions.length === 0 ? (
          <div className="dsh-working" role="status">
            <span className="dsh-pulse" aria-hidden="true" />
            {t('working')}
          </div>
        ) : null}
        {snapshot.queued.map((q) => (
          <div key={q.id} className="dsh-msg dsh-msg-user dsh-queued" data-node="queued">
            <div className="dsh-msg-bubble">
              <span className="dsh-badge">{q.mode === 'steer' ? t('steering') : t('queued')}</span>
              {q.text}
            </div>
          </div>
        ))}
      </div>
      {showJump ? (
        <button type="button" className="dsh-jump" onClick={jump}>
          {t('jumpToLatest')}
        </button>
      ) : null}
    </div>
  )
}
