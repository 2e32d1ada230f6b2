// The subagents of one session, folded from its log (`subagent/started`, `subagent/report`,
// `subagent/finished`), plus the host's word on children the log leaves open. Pure and
// browser-safe: the panel and the tool card both read it.
import type { WireSubagent, WireSubagentStatus, WireTokenUsage } from './contract.ts'

interface LoggedEvent {
  type: string
  time?: number
  data?: unknown
}

export interface SubagentNode {
  id: string
  provider: string
  description: string
  depth: number
  background: boolean
  /** From the log: `running` until `subagent/finished`; `resolveOpen` refines open ones. */
  status: WireSubagentStatus
  callId?: string
  sessionId?: string
  startedAt?: number
  finishedAt?: number
  usage?: WireTokenUsage
  reports: string[]
  /** The child's final (or last) text. */
  text?: string
  error?: { code: string; message: string }
}

const FINAL = new Set(['completed', 'failed', 'cancelled'])
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)

/**
 * An incremental fold over a log that only grows (a feed's `events`): `update(events)` reads the
 * events it has not seen and returns the same array while nothing about subagents changed, a new
 * one (with new node objects) when something did. A shorter log than last time refolds.
 */
export class SubagentFold {
  private byId = new Map<string, SubagentNode>()
  private seen = 0
  private snapshot: SubagentNode[] = []

  update(events: readonly LoggedEvent[]): SubagentNode[] {
    if (events.length < this.seen) {
      this.byId.clear()
      this.seen = 0
      this.snapshot = []
    }
    let changed = false
    for (let i = this.seen; i < events.length; i++) if (this.add(events[i])) changed = true
    this.seen = events.length
    if (changed) this.snapshot = [...this.byId.values()].map((n) => ({ ...n, reports: [...n.reports] }))
    return this.snapshot
  }

  private add(event: LoggedEvent): boolean {
    if (typeof event?.type !== 'string' || !event.type.startsWith('subagent/')) return false
    const d = (event.data ?? {}) as Record<string, unknown>
    const id = str(d.id)
    if (!id) return false
    if (event.type === 'subagent/started') {
      const callId = str(d.callId)
      const sessionId = str(d.sessionId)
      this.byId.set(id, {
        id,
        provider: str(d.provider) ?? '?',
        description: str(d.description) ?? '',
        depth: typeof d.depth === 'number' ? d.depth : 1,
        background: d.background === true,
        status: 'running',
        reports: [],
        ...(callId !== undefined ? { callId } : {}),
        ...(sessionId !== undefined ? { sessionId } : {}),
        ...(typeof event.time === 'number' ? { startedAt: event.time } : {}),
      })
      return true
    }
    const node = this.byId.get(id)
    if (!node) return false
    if (event.type === 'subagent/report') {
      const message = str(d.message)
      if (message === undefined) return false
      node.reports.push(message)
      return true
    }
    if (event.type !== 'subagent/finished') return false
    const status = str(d.status)
    node.status = status && FINAL.has(status) ? (status as WireSubagentStatus) : 'failed'
    if (typeof event.time === 'number') node.finishedAt = event.time
    const text = str(d.text)
    if (text) node.text = text
    const error = d.error as { code?: unknown; message?: unknown } | undefined
    if (error && typeof error === 'object')
      node.error = { code: String(error.code ?? 'ERROR'), message: String(error.message ?? '') }
    if (d.usage && typeof d.usage === 'object') node.usage = d.usage as WireTokenUsage
    return true
  }
}

/** Children in start order. Events of unknown children, or malformed ones, are skipped. */
export function foldSubagents(events: readonly LoggedEvent[]): SubagentNode[] {
  return new SubagentFold().update(events)
}

/** Ids of children the log leaves open (no `subagent/finished`). */
export function openIds(nodes: readonly SubagentNode[]): string[] {
  return nodes.filter((n) => n.status === 'running').map((n) => n.id)
}

/**
 * Applies the host's `subagents.list` answer (given to the question about `asked` open ids) to children the log leaves open: the host's status
 * when it lists the child, else `interrupted` (nothing in the host runs it). Finished children
 * keep what the log says. Without an answer (`undefined`), nodes are returned as they are.
 */
export function resolveOpen(
  nodes: SubagentNode[],
  host: readonly WireSubagent[] | undefined,
  asked?: ReadonlySet<string>,
): SubagentNode[] {
  if (!host) return nodes
  const byId = new Map(host.map((c) => [c.id, c]))
  let changed = false
  const out = nodes.map((node): SubagentNode => {
    if (node.status !== 'running') return node
    const known = byId.get(node.id)
    // A child started after the question was asked is not judged by the old answer.
    if (!known && asked && !asked.has(node.id)) return node
    if (known?.status === 'running') return node
    changed = true
    if (!known) return { ...node, status: 'interrupted' }
    return {
      ...node,
      status: known.status,
      ...(known.finishedAt !== undefined ? { finishedAt: known.finishedAt } : {}),
      ...(known.usage ? { usage: known.usage } : {}),
      ...(known.error ? { error: known.error } : {}),
    }
  })
  return changed ? out : nodes
}

/** Milliseconds the child ran (until `now` while it runs); undefined without a start time. */
export function durationOf(node: SubagentNode, now: number): number | undefined {
  if (node.startedAt === undefined) return undefined
  const end = node.finishedAt ?? (node.status === 'running' ? now : undefined)
  return end === undefined ? undefined : Math.max(0, end - node.startedAt)
}

/** Tokens the child used (input, cache and output), or undefined when not reported. */
export function tokensOf(node: SubagentNode): number | undefined {
  const u = node.usage
  if (!u) return undefined
  return (u.input ?? 0) + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0) + (u.output ?? 0) + (u.reasoning ?? 0)
}

export function formatDuration(ms: number | undefined): string | undefined {
  if (ms === undefined) return undefined
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const min = Math.floor(ms / 60_000)
  return `${min} min ${Math.round((ms % 60_000) / 1000)} s`
}

export function formatTokens(n: number | undefined): string | undefined {
  if (n === undefined) return undefined
  if (n < 1000) return String(n)
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`
  return `${(n / 1_000_000).toFixed(1)}M`
}
