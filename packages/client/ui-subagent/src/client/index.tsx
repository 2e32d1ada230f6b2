// @dsh/ui-subagent/client: the subagent tree in the browser. A "Subagents" section in the side
// panel (`panel.side`) lists the children started in the open session, folded from its log, with
// the host's `subagents.list` deciding whether a child the log leaves open still runs; a child's
// own session opens from its row, and its children nest under it once its session is loaded. The
// `subagent` / `subagent_fork` tool cards get a strip with the child's status and session link
// above the generic card (the unkeyed `tool.call.toolview` entry, ui-tool's).
import type { Context } from 'cordis'
import { memo, useEffect, useMemo, useState, type MouseEvent, type ReactNode } from 'react'
import {
  installStyles,
  RemoteError,
  Slot,
  sessionPath,
  useSessionFeed,
  useT,
  type SessionFeedState,
  type SessionSlotProps,
  type Translate,
} from '@dsh/client-runtime'
import type { ToolNode } from '@dsh/conversation-model'
import { subagentsList, type WireSubagent } from '../contract.ts'
import {
  durationOf,
  formatDuration,
  formatTokens,
  openIds,
  resolveOpen,
  SubagentFold,
  tokensOf,
  type SubagentNode,
} from '../fold.ts'
import { en, zh } from './strings.ts'
import { CSS } from './styles.ts'

export { en, zh } from './strings.ts'

export const name = '@dsh/ui-subagent'
export const inject = ['slots', 'locale', 'remote', 'connection', 'router']
export const NAMESPACE = 'subagent'
export const TOOL_NAMES = ['subagent', 'subagent_fork'] as const

interface ToolViewProps {
  sessionId: string
  node: ToolNode
}

interface HostAnswer {
  key: string
  asked: ReadonlySet<string>
  children?: readonly WireSubagent[]
  error?: string
}

/** The runtime's `useT` for this namespace (stable identity; the locale read once per component). */
function useStableT(_ctx: Context): Translate {
  return useT(NAMESPACE)
}

/** A clock that ticks every second while `active`. */
function useNow(active: boolean): number {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    if (!active) return
    setNow(Date.now())
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [active])
  return now
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-subagent: stylesheet')

  // One incremental fold per feed log (keyed by the log array, which a feed appends in place).
  const folds = new WeakMap<readonly unknown[], SubagentFold>()
  const foldOf = (feed: SessionFeedState | undefined): SubagentNode[] => {
    if (!feed) return []
    // Subagent events are never streamed deltas: fold the log without them (a long answer's
    // 100,000 deltas are not scanned at all).
    let fold = folds.get(feed.withoutDeltas)
    if (!fold) folds.set(feed.withoutDeltas, (fold = new SubagentFold()))
    return fold.update(feed.withoutDeltas)
  }
  // One `subagents.list` question in flight per session and set of open children.
  const inflight = new Map<string, Promise<HostAnswer>>()
  const ask = (sessionId: string, key: string, asked: ReadonlySet<string>): Promise<HostAnswer> => {
    const id = `${sessionId}\0${key}`
    let pending = inflight.get(id)
    if (!pending) {
      pending = ctx.remote.call(subagentsList, { sessionId }).then(
        (r): HostAnswer => ({ key, asked, children: r.children }),
        // Without the method (no subagent seam in this host), the log is all there is.
        (e: unknown): HostAnswer =>
          e instanceof RemoteError && e.code === 'UNKNOWN_METHOD'
            ? { key, asked }
            : { key, asked, error: (e as Error).message },
      )
      inflight.set(id, pending)
      void pending.finally(() => setTimeout(() => inflight.delete(id), 0))
    }
    return pending
  }

  /** The children of a session: its log, with open ones resolved by the host. */
  function useSubagents(
    sessionId: string,
    feed: SessionFeedState | undefined,
  ): { nodes: SubagentNode[]; error?: string } {
    const logged = foldOf(feed)
    const open = openIds(logged)
    const key = `${open.join(',')}|${feed?.status ?? ''}|${feed?.live ? 1 : 0}`
    const [answer, setAnswer] = useState<HostAnswer>()
    const ready = feed?.loaded === true && feed.live && open.length > 0
    // biome-ignore lint/correctness/useExhaustiveDependencies: open is a new array each render; key carries its ids, so the effect re-runs exactly when they change
    useEffect(() => {
      if (!ready) return
      let alive = true
      void ask(sessionId, key, new Set(open)).then((a) => alive && setAnswer(a))
      return () => void (alive = false)
    }, [sessionId, key, ready])
    const nodes = useMemo(() => resolveOpen(logged, answer?.children, answer?.asked), [logged, answer])
    return { nodes, ...(answer?.error ? { error: answer.error } : {}) }
  }

  function SessionLink({ sessionId, id, t }: { sessionId: string; id: string; t: Translate }) {
    const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
      if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
      e.preventDefault()
      ctx.router.openSession(sessionId)
    }
    return (
      <a
        className="dsh-subagent-link"
        href={sessionPath(sessionId)}
        onClick={onClick}
        title={t('openTitle', { id })}
        data-testid="subagent-open"
        data-session={sessionId}
      >
        {t('open')}
      </a>
    )
  }

  function StatusBadge({ node, t }: { node: SubagentNode; t: Translate }) {
    return (
      <span className="dsh-subagent-status" data-status={node.status}>
        {node.status === 'running' ? (
          <span className="dsh-subagent-spinner" role="progressbar" aria-label={t('status.running')} />
        ) : null}
        {t(`status.${node.status}`)}
      </span>
    )
  }

  function Nested({ sessionId, t, now }: { sessionId: string; t: Translate; now: number }) {
    const feed = useSessionFeed(sessionId, { deltas: false })
    const { nodes } = useSubagents(sessionId, feed)
    if (feed?.error)
      return (
        <div className="dsh-subagent-error" role="alert">
          {t('nestedFailed', { message: feed.error.message })}
        </div>
      )
    if (!feed?.loaded)
      return (
        <div className="dsh-muted" role="status">
          {t('nestedLoading')}
        </div>
      )
    if (nodes.length === 0)
      return (
        <div className="dsh-muted" data-testid="subagent-nested-none">
          {t('nestedNone')}
        </div>
      )
    return <Tree nodes={nodes} t={t} now={now} />
  }

  const Row = memo(function Row({ node, t, now }: { node: SubagentNode; t: Translate; now: number }) {
    // Nested children show at once when the child's session is already open in this page.
    const [expanded, setExpanded] = useState(() =>
      node.sessionId ? ctx.connection.peek(node.sessionId) !== undefined : false,
    )
    const duration = formatDuration(durationOf(node, now))
    const tokens = formatTokens(tokensOf(node))
    return (
      <li
        className="dsh-subagent"
        data-subagent={node.id}
        data-status={node.status}
        data-background={node.background || undefined}
      >
        <div className="dsh-subagent-head">
          <StatusBadge node={node} t={t} />
          <span className="dsh-subagent-id">{node.id}</span>
          <span className="dsh-badge">{node.provider}</span>
          {node.background ? <span className="dsh-badge">{t('background')}</span> : null}
          <span className="dsh-subagent-desc" title={node.description}>
            {node.description}
          </span>
        </div>
        <div className="dsh-subagent-meta">
          {duration ? <span data-testid="subagent-duration">{duration}</span> : null}
          {tokens ? <span data-testid="subagent-tokens">{t('tokens', { tokens })}</span> : null}
          {node.sessionId ? (
            <SessionLink sessionId={node.sessionId} id={node.id} t={t} />
          ) : (
            <span>{t('noSession')}</span>
          )}
          {node.sessionId ? (
            <button
              type="button"
              className="dsh-subagent-toggle"
              aria-expanded={expanded}
              data-testid="subagent-nested-toggle"
              onClick={() => setExpanded(!expanded)}
            >
              {t(expanded ? 'hideNested' : 'showNested')}
            </button>
          ) : null}
        </div>
        {node.error && node.status !== 'completed' ? (
          <div className="dsh-subagent-error">
            {node.error.code}: {node.error.message}
          </div>
        ) : null}
        {node.reports.length > 0 ? (
          <ol className="dsh-subagent-reports" aria-label={t('reports')}>
            {node.reports.map((r, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a child's reports are append-only and may repeat; the index is their identity
              <li key={i} data-testid="subagent-report">
                {r}
              </li>
            ))}
          </ol>
        ) : null}
        {expanded && node.sessionId ? <Nested sessionId={node.sessionId} t={t} now={now} /> : null}
      </li>
    )
  })

  function Tree({ nodes, t, now }: { nodes: SubagentNode[]; t: Translate; now: number }) {
    return (
      <ul className="dsh-subagents">
        {nodes.map((n) => (
          <Row key={n.id} node={n} t={t} now={now} />
        ))}
      </ul>
    )
  }

  function SubagentSection({ sessionId, feed }: SessionSlotProps) {
    const t = useStableT(ctx)
    const { nodes, error } = useSubagents(sessionId, feed)
    const now = useNow(nodes.some((n) => n.status === 'running'))
    if (nodes.length === 0) return null
    return (
      <section className="dsh-panel-section" data-panel="subagents">
        <h3>{t('title')}</h3>
        <Tree nodes={nodes} t={t} now={now} />
        {error ? (
          <div className="dsh-muted" role="note">
            {t('statusFailed', { message: error })}
          </div>
        ) : null}
      </section>
    )
  }

  function SubagentToolView(props: ToolViewProps) {
    const t = useStableT(ctx)
    const feed = useSessionFeed(props.sessionId, { deltas: false })
    const { nodes } = useSubagents(props.sessionId, feed)
    const child = nodes.find((n) => n.callId === props.node.callId)
    const now = useNow(child?.status === 'running')
    let strip: ReactNode = null
    if (child) {
      const duration = formatDuration(durationOf(child, now))
      strip = (
        <div
          className="dsh-subagent-strip"
          data-testid="subagent-strip"
          data-subagent={child.id}
          data-status={child.status}
        >
          <StatusBadge node={child} t={t} />
          <span className="dsh-subagent-id">{t('card', { id: child.id })}</span>
          {child.background ? <span className="dsh-badge">{t('background')}</span> : null}
          {duration ? <span className="dsh-muted">{duration}</span> : null}
          {child.sessionId ? <SessionLink sessionId={child.sessionId} id={child.id} t={t} /> : null}
        </div>
      )
    } else if (props.node.status === 'running' || props.node.status === 'streaming') {
      strip = (
        <div className="dsh-subagent-strip dsh-muted" data-testid="subagent-strip">
          {t('cardStarting')}
        </div>
      )
    }
    return (
      <div className="dsh-subagent-card" data-call={props.node.callId}>
        {strip}
        <Slot name="tool.call.toolview" single props={props} />
      </div>
    )
  }

  ctx.slots.register('panel.side', { id: 'ui-subagent', order: 20, component: SubagentSection })
  for (const tool of TOOL_NAMES)
    ctx.slots.register('tool.call.toolview', { id: 'ui-subagent', key: tool, order: 50, component: SubagentToolView })
}

export default { name, inject, apply }
