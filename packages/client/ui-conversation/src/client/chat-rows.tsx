// The rows of the chat view: one memoised component per conversation node kind (context,
// thinking, assistant answer, turn end, notice; user messages are in user-message.tsx and tool
// calls are rendered by the caller's `renderTool`), and `renderNode`, which picks the row for a
// node. A row re-renders only when its node (or the callbacks it is given) changes identity.
import { memo, useMemo, useRef, useState, type ReactNode } from 'react'
import type {
  AssistantNode,
  ContextNode,
  ConversationNode,
  NoticeNode,
  ThinkingNode,
  ToolNode,
  TurnEndNode,
  UserNode,
} from '@dsh/conversation-model'
import { Markdown } from '@dsh/ui-markdown'
import { GitFork, IconButton } from '@dsh/client-design'
import type { Translate } from './strings.ts'
import { CopyAction, type MessageActions, UserMessage } from './user-message.tsx'

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

/** The row of one node (keyed by the node's key). */
export function renderNode(
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
