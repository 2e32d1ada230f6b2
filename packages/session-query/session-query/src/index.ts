// @dsh/session-query: `ctx.sessionQuery`, reads across sessions. Exact reads and filters are
// implemented here once, over `ctx.sessionPersistence` (stored logs) and `ctx.sessions` (live
// ones, preferred: they are ahead of their stored log); a provider implements full-text `search`.
import { type Context, Service } from 'cordis'
import type { AnySessionEvent, Session, SessionId } from '@dsh/session'
import { HEADER_VERSION, summarize, type SessionSummary } from '@dsh/session-persistence'

declare module 'cordis' {
  interface Context {
    sessionQuery: SessionQuery
  }
}

export interface SessionFilter {
  /** Only sessions whose cwd is exactly this. */
  cwd?: string
  /** Only these session ids. */
  sessionIds?: readonly string[]
  /** Updated at or after / before (epoch ms). */
  since?: number
  until?: number
  /** Case-insensitive substring of the title or first prompt. */
  titleContains?: string
  /** Leave out subagent and fork children (sessions with a parent). */
  topLevelOnly?: boolean
  limit?: number
}

/** A session as the query layer sees it: the stored summary, marked live when it is in `ctx.sessions`. */
export interface SessionInfo extends SessionSummary {
  live: boolean
}

export interface ReadOptions {
  /** First seq (default 0) and end seq, exclusive (default: the end). */
  fromSeq?: number
  toSeq?: number
  /** Only these event types. */
  types?: readonly string[]
  /** At most this many events. */
  limit?: number
}

export interface SearchQuery extends Omit<SessionFilter, 'limit' | 'titleContains'> {
  /** Searched as one literal phrase: quotes, operators and SQL are plain text. */
  text: string
  /** Only events of these types. */
  types?: readonly string[]
  /** Sessions returned, at most (default 20). */
  limit?: number
}

/** One session matching a search, represented by its strongest matching event. */
export interface SearchHit {
  sessionId: string
  cwd: string
  title?: string
  updatedAt: number
  live: boolean
  seq: number
  type: string
  /** Text around the match, the match in [brackets]. */
  snippet: string
  /** Matching events in this session. */
  matches: number
}

export class SessionQueryError extends Error {
  override name = 'SessionQueryError'
  constructor(
    readonly code: 'NOT_FOUND' | 'BAD_QUERY' | 'NO_PERSISTENCE',
    message: string,
  ) {
    super(message)
  }
}

/** The searchable text of an event, or '' (chunks, bookkeeping and reasoning are not searched). */
export function eventText(event: AnySessionEvent): string {
  switch (event.type) {
    case 'user/message':
      return event.data.content
        .map((b) => (b.type === 'text' ? b.text : ''))
        .filter(Boolean)
        .join('\n')
    case 'assistant/message':
      return event.data.message.content
        .map((b) => (b.type === 'text' ? b.text : b.type === 'tool-call' ? `${b.name} ${b.arguments}` : ''))
        .filter(Boolean)
        .join('\n')
    case 'tool/call':
      return `${event.data.name} ${event.data.arguments}`
    case 'tool/result':
      return event.data.message.content
        .map((b) => (b.type === 'text' ? b.text : ''))
        .filter(Boolean)
        .join('\n')
    case 'session/title':
      return event.data.title
    default:
      return ''
  }
}

/** Literal FTS5 phrase for `text`: the whole text quoted, inner quotes doubled. */
export function literalPhrase(text: string): string {
  return `"${text.replace(/"/g, '""')}"`
}

export abstract class SessionQuery extends Service {
  static inject = ['sessions']

  constructor(ctx: Context) {
    super(ctx, 'sessionQuery')
  }

  /** Full-text search; each hit is one session. Throws `SessionQueryError('BAD_QUERY')` for empty text. */
  abstract search(query: SearchQuery): Promise<SearchHit[]>

  /** Stored and live sessions matching the filter, newest first. */
  async sessions(filter: SessionFilter = {}): Promise<SessionInfo[]> {
    checkCount('limit', filter.limit)
    const persistence = this.ctx.get('sessionPersistence')
    const stored = persistence ? await persistence.list() : []
    const byId = new Map<string, SessionInfo>(stored.map((row) => [row.id, { ...row, live: false }]))
    for (const session of this.ctx.sessions.list()) {
      const row = byId.get(session.id)
      // The live log is ahead of the stored one: its title, first prompt and turns win.
      const fresh = liveSummary(session)
      byId.set(session.id, {
        ...row,
        ...fresh,
        createdAt: row?.createdAt ?? fresh.createdAt,
        live: true,
        events: Math.max(row?.events ?? 0, session.length),
        updatedAt: session.last()?.time ?? row?.updatedAt ?? Date.now(),
      })
    }
    const needle = filter.titleContains?.toLowerCase()
    const ids = filter.sessionIds ? new Set(filter.sessionIds) : undefined
    const rows = [...byId.values()].filter(
      (row) =>
        (filter.cwd === undefined || row.cwd === filter.cwd) &&
        (!ids || ids.has(row.id)) &&
        (filter.since === undefined || row.updatedAt >= filter.since) &&
        (filter.until === undefined || row.updatedAt < filter.until) &&
        (!filter.topLevelOnly || row.parentSession === undefined) &&
        (!needle || `${row.title ?? ''}\n${row.firstPrompt ?? ''}`.toLowerCase().includes(needle)),
    )
    rows.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : 1))
    return filter.limit !== undefined ? rows.slice(0, filter.limit) : rows
  }

  /** One session's info; undefined when neither the store nor persistence knows it. */
  async session(sessionId: SessionId | string): Promise<SessionInfo | undefined> {
    return (await this.sessions({ sessionIds: [sessionId] }))[0]
  }

  /** Events of one session (live preferred), filtered. Throws `NOT_FOUND` for an unknown id. */
  async read(sessionId: SessionId | string, options: ReadOptions = {}): Promise<AnySessionEvent[]> {
    const from = options.fromSeq ?? 0
    checkCount('fromSeq', from)
    checkCount('toSeq', options.toSeq)
    checkCount('limit', options.limit)
    const live = this.ctx.sessions.get(sessionId)
    let events: AnySessionEvent[]
    if (live) events = live.slice(from, options.toSeq)
    else {
      const persistence = this.ctx.get('sessionPersistence')
      if (!persistence)
        throw new SessionQueryError(
          'NO_PERSISTENCE',
          `session ${sessionId} is not live and no session-persistence row is mounted`,
        )
      try {
        events = await persistence.readFrom(sessionId, from)
      } catch (error) {
        const code = (error as { code?: string }).code
        if (code === 'NOT_FOUND' || code === 'BAD_ID')
          throw new SessionQueryError('NOT_FOUND', `no session ${JSON.stringify(String(sessionId))}`)
        throw error
      }
      if (options.toSeq !== undefined) events = events.filter((e) => e.seq < options.toSeq!)
    }
    if (options.types) {
      const types = new Set(options.types)
      events = events.filter((e) => types.has(e.type))
    }
    return options.limit !== undefined ? events.slice(0, options.limit) : events
  }

  /** The live session object, if the session is in `ctx.sessions`. */
  liveSession(sessionId: string): Session | undefined {
    return this.ctx.sessions.get(sessionId)
  }
}

/** Throws `BAD_QUERY` unless `value` is undefined or a non-negative integer. */
function checkCount(name: string, value: number | undefined): void {
  if (value !== undefined && (!Number.isInteger(value) || value < 0))
    throw new SessionQueryError('BAD_QUERY', `${name} must be a non-negative integer, got ${String(value)}`)
}

/** The summary persistence would compute for the live log (title, first prompt, turns, ...). */
function liveSummary(session: Session): SessionSummary {
  const createdAt = session.events[0]?.time ?? Date.now()
  const parentSession = session.parent
    ? { sessionId: session.parent.sessionId as SessionId, boundary: session.parent.boundary }
    : undefined
  return summarize(
    {
      version: HEADER_VERSION,
      id: session.id,
      cwd: session.cwd,
      createdAt,
      ...(parentSession ? { parentSession } : {}),
    },
    session.events,
  )
}

export const name = '@dsh/session-query'
