// The read methods of the SDK server: `session/list` (stored sessions merged with this server's
// live ones), `session/history` (a live session's log, or a stored one's from persistence) and
// `session/search` (through ctx.sessionQuery when mounted).
import type { Context } from 'cordis'
import type { Session } from '@dsh/session'
import { SessionPersistenceError } from '@dsh/session-persistence'
import {
  Method,
  RpcError,
  type SessionHistoryResult,
  type SessionInfo,
  type SessionListResult,
  type SessionSearchHit,
  type SessionSearchResult,
  type SessionStatus,
  type WireEvent,
} from '@dsh/sdk-protocol'
import { sessionRowOf } from '@dsh/surface-kit'
import * as p from './params.ts'

/** The optional services the reads use, when mounted. */
export type ReadServices = Partial<Pick<Context, 'durableSessions' | 'sessionPersistence'>> & {
  /** What session/search uses of `ctx.sessionQuery` (@dsh/session-query), read by shape. */
  sessionQuery?: { search(query: { text: string; cwd?: string; limit?: number }): Promise<SessionSearchHit[]> }
}

/** What the reads need of a live session of the server. */
export interface LiveRow {
  session: Session
  status: SessionStatus
}

export async function list(services: ReadServices, live: Iterable<LiveRow>, raw: unknown): Promise<SessionListResult> {
  const params = p.object(Method.sessionList, raw, true)
  const cwd = p.string(Method.sessionList, params, 'cwd', true)
  const rows = new Map<string, SessionInfo>()
  const stored = (await services.durableSessions?.list().catch(() => [])) ?? []
  for (const s of stored) {
    rows.set(s.id, {
      sessionId: s.id,
      cwd: s.cwd,
      live: false,
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
      ...(s.title !== undefined ? { title: s.title } : {}),
      ...(s.firstPrompt !== undefined ? { firstPrompt: s.firstPrompt } : {}),
      turns: s.turns,
      events: s.events,
    })
  }
  for (const entry of live) {
    const id = entry.session.id
    const events = entry.session.events
    const row = rows.get(id)
    // Counted as the stored summaries count them; what the stored row holds beyond that stays.
    const fold = sessionRowOf(id, entry.session.cwd, events)
    rows.set(id, {
      ...(row ?? { sessionId: id, cwd: entry.session.cwd }),
      live: true,
      status: entry.status,
      events: fold.events,
      turns: fold.turns,
      ...(events.length ? { updatedAt: fold.updatedAt } : {}),
    })
  }
  const sessions = [...rows.values()].filter((r) => cwd === undefined || r.cwd === cwd)
  sessions.sort((a, b) => Number(b.live) - Number(a.live) || (b.updatedAt ?? 0) - (a.updatedAt ?? 0))
  return { sessions }
}

export async function history(
  services: ReadServices,
  sessions: ReadonlyMap<string, LiveRow>,
  raw: unknown,
): Promise<SessionHistoryResult> {
  const params = p.object(Method.sessionHistory, raw)
  const sessionId = p.string(Method.sessionHistory, params, 'sessionId')
  const fromSeq = p.seq(Method.sessionHistory, params, 'fromSeq', 0) ?? 0
  const limit = p.seq(Method.sessionHistory, params, 'limit', 1)
  const live = sessions.get(sessionId)
  let events: readonly WireEvent[]
  if (live) {
    events = live.session.slice(fromSeq, limit === undefined ? undefined : fromSeq + limit) as readonly WireEvent[]
  } else {
    const persistence = services.sessionPersistence
    if (!persistence)
      throw new RpcError(
        'SESSION_NOT_FOUND',
        `session/history: no live session ${JSON.stringify(sessionId)} and no persistence row`,
        { sessionId },
      )
    try {
      events = await persistence.readFrom(sessionId, fromSeq)
    } catch (error) {
      if (error instanceof SessionPersistenceError && error.code === 'NOT_FOUND') {
        throw new RpcError('SESSION_NOT_FOUND', `session/history: no session ${JSON.stringify(sessionId)}`, {
          sessionId,
        })
      }
      throw error
    }
    if (limit !== undefined) events = events.slice(0, limit)
  }
  const last = events[events.length - 1]
  return { events: [...events], nextSeq: last ? last.seq + 1 : fromSeq }
}

export async function search(services: ReadServices, raw: unknown): Promise<SessionSearchResult> {
  const params = p.object(Method.sessionSearch, raw)
  const text = p.string(Method.sessionSearch, params, 'text')
  const cwd = p.string(Method.sessionSearch, params, 'cwd', true)
  const limit = p.seq(Method.sessionSearch, params, 'limit', 1)
  const query = services.sessionQuery
  if (!query)
    throw new RpcError(
      'METHOD_NOT_FOUND',
      `${Method.sessionSearch}: this server has no session-query row (capabilities.search is false)`,
    )
  try {
    return {
      hits: await query.search({
        text,
        ...(cwd !== undefined ? { cwd } : {}),
        ...(limit !== undefined ? { limit } : {}),
      }),
    }
  } catch (error) {
    if ((error as { code?: string }).code === 'BAD_QUERY')
      throw new RpcError('INVALID_PARAMS', `${Method.sessionSearch}: ${(error as Error).message}`)
    throw error
  }
}
