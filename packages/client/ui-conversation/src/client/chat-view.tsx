// The chat view: renders a ConversationSnapshot's nodes in order. Props only: the tool card
// renderer comes from the caller (the plugin passes a slot), strings from `t`. It follows the
// newest content while the reader is at the bottom and stops following when they scroll up.
// Only the newest WINDOW nodes are mounted at first (a long history paints as fast as a short
// one); older ones are mounted STEP at a time when the reader scrolls to the top (or presses
// "Show earlier"), keeping what is on screen in place. The rows themselves are in chat-rows.tsx.
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from 'react'
import type { AssistantNode, ConversationNode, ConversationSnapshot, ToolNode, UserNode } from '@dsh/conversation-model'
import { UserText } from '@dsh/conversation-composer'
import { renderNode } from './chat-rows.tsx'
import type { Translate } from './strings.ts'
import type { MessageActions } from './user-message.tsx'

export type { MessageActions } from './user-message.tsx'
export { BODY_BLOCK, textBlocks } from './chat-rows.tsx'

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
              <UserText text={q.text} t={t} />
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
