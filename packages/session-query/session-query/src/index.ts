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

/** One event matching a search (the event-level form of `SearchHit`). */
export interface EventHit {
  sessionId: string
  cwd: string
  title?: string
  live: boolean
  seq: number
  type: string
  /** Text around the match, the match in [brackets]. */
  snippet: string
}

/** A tool call in a trace, paired with its result when one was logged. */
export interface TraceCall {
  seq: number
  callId: string
  name: string
  resultSeq?: number
  isError?: boolean
}

/** One model request of a turn: what it answered and which tools it called. */
export interface TraceStep {
  step: number
  seq: number
  /** Seq of the step's `assistant/message`, when it was logged. */
  answerSeq?: number
  /** The answer's text, whole (callers cut it). */
  answer?: string
  calls: TraceCall[]
}

export interface TraceTurn {
  turn: number
  seq: number
  endSeq?: number
  /** How the turn ended (`turn/end` reason); absent while it runs or when the log stops early. */
  reason?: string
  /** The person's prompt that started the turn, and its seq. */
  prompt?: string
  promptSeq?: number
  steps: TraceStep[]
}

/** A session's outline: turns, steps, calls and the sessions it started. */
export interface SessionTrace {
  session: SessionInfo
  turns: TraceTurn[]
  /** Sessions whose parent is this one (subagents, forks), oldest first. */
  children: SessionInfo[]
}

/** How an event of an event trace relates to the traced event. */
export type TraceRelation = 'turn' | 'prompt' | 'step' | 'answer' | 'call' | 'result' | 'target'

/** The chain that led to one event, and what it led to: turn, prompt, step, answer, call, result. */
export interface EventTrace {
  session: SessionInfo
  target: AnySessionEvent
  /** In log order; the target itself is included once, with relation `target`. */
  chain: Array<{ relation: TraceRelation; event: AnySessionEvent }>
  /** Sessions this one started during the target's turn. */
  children: SessionInfo[]
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

  /**
   * Full-text search; each hit is one event, best first, at most `limit` (default 20) events.
   * Throws `SessionQueryError('BAD_QUERY')` for empty text.
   */
  abstract searchEvents(query: SearchQuery): Promise<EventHit[]>

  /** The outline of one session (turns, steps, calls paired with results, child sessions). */
  async trace(sessionId: SessionId | string): Promise<SessionTrace> {
    const session = await this.session(sessionId)
    if (!session) throw new SessionQueryError('NOT_FOUND', `no session ${JSON.stringify(String(sessionId))}`)
    const events = await this.read(session.id)
    return { session, turns: foldTurns(events), children: await this.children(session.id) }
  }

  /**
   * What led to the event at `seq` and what it led to: its turn, the prompt that started the turn,
   * its step, the answer that issued a call, the call and its result. Throws `NOT_FOUND` for an
   * unknown session or seq.
   */
  async eventTrace(sessionId: SessionId | string, seq: number): Promise<EventTrace> {
    checkCount('seq', seq)
    const session = await this.session(sessionId)
    if (!session) throw new SessionQueryError('NOT_FOUND', `no session ${JSON.stringify(String(sessionId))}`)
    const events = await this.read(session.id)
    const index = events.findIndex((e) => e.seq === seq)
    if (index < 0)
      throw new SessionQueryError('NOT_FOUND', `session ${session.id} has no event ${seq} (it has ${events.length})`)
    const target = events[index]
    const picked = new Map<number, TraceRelation>([[target.seq, 'target']])
    const pick = (event: AnySessionEvent | undefined, relation: TraceRelation) => {
      if (event && !picked.has(event.seq)) picked.set(event.seq, relation)
    }
    // The turn: back to its turn/start, forward to its turn/end.
    let start = index
    while (start > 0 && events[start].type !== 'turn/start') start--
    let end = index
    while (end < events.length - 1 && events[end].type !== 'turn/end') end++
    const turn = events.slice(start, end + 1)
    pick(
      turn.find((e) => e.type === 'turn/start'),
      'turn',
    )
    pick(
      turn.find((e) => e.type === 'user/message' && e.data.source?.kind === 'human'),
      'prompt',
    )
    // The step that holds the target (the last step/start at or before it).
    for (let i = index; i >= start; i--) {
      if (events[i].type === 'step/start') {
        pick(events[i], 'step')
        break
      }
    }
    // A call and its result point at each other; the answer that issued the call is the last
    // assistant/message before the call that carries a tool-call block with its id.
    const callId =
      target.type === 'tool/call'
        ? target.data.callId
        : target.type === 'tool/result'
          ? target.data.message.callId
          : undefined
    if (callId !== undefined) {
      const callIndex =
        target.type === 'tool/call'
          ? index
          : findLast(events, index, (e) => e.type === 'tool/call' && e.data.callId === callId)
      if (callIndex >= 0) {
        pick(events[callIndex], 'call')
        const answer = findLast(
          events,
          callIndex,
          (e) =>
            e.type === 'assistant/message' &&
            e.data.message.content.some((b) => b.type === 'tool-call' && b.callId === callId),
        )
        if (answer >= 0) pick(events[answer], 'answer')
        const result = events.findIndex(
          (e, i) => i > callIndex && e.type === 'tool/result' && e.data.message.callId === callId,
        )
        if (result >= 0) pick(events[result], 'result')
      }
    }
    const chain = [...picked]
      .sort((a, b) => a[0] - b[0])
      .map(([at, relation]) => ({ relation, event: events.find((e) => e.seq === at)! }))
    const first = turn[0]?.seq ?? 0
    const last = turn.at(-1)?.seq ?? first
    const children = (await this.children(session.id)).filter(
      (child) =>
        child.parentSession && child.parentSession.boundary >= first && child.parentSession.boundary <= last + 1,
    )
    return { session, target, chain, children }
  }

  /** Sessions whose parent is `sessionId`, oldest first. */
  protected async children(sessionId: string): Promise<SessionInfo[]> {
    return (await this.sessions())
      .filter((row) => row.parentSession?.sessionId === sessionId)
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
  }

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

/** Index of the last event before `before` that satisfies `test`, or -1. */
function findLast(events: readonly AnySessionEvent[], before: number, test: (e: AnySessionEvent) => boolean): number {
  for (let i = before - 1; i >= 0; i--) if (test(events[i])) return i
  return -1
}

/** The text blocks of a message, joined. */
function textOf(blocks: ReadonlyArray<{ type: string; text?: string }>): string {
  return blocks
    .map((b) => (b.type === 'text' ? (b.text ?? '') : ''))
    .filter(Boolean)
    .join('\n')
}

/**
 * The turns of a log, in order. Calls are paired with the first later result carrying their id,
 * so a provider that repeats call ids across steps still pairs each call with its own result.
 */
export function foldTurns(events: readonly AnySessionEvent[]): TraceTurn[] {
  const turns: TraceTurn[] = []
  let turn: TraceTurn | undefined
  let step: TraceStep | undefined
  let pendingPrompt: { text: string; seq: number } | undefined
  const open = new Map<string, TraceCall[]>()
  const currentTurn = (seq: number): TraceTurn => {
    if (!turn) {
      turn = { turn: turns.length, seq, steps: [] }
      turns.push(turn)
    }
    return turn
  }
  const currentStep = (seq: number): TraceStep => {
    const t = currentTurn(seq)
    if (!step) {
      step = { step: t.steps.length, seq, calls: [] }
      t.steps.push(step)
    }
    return step
  }
  for (const event of events) {
    switch (event.type) {
      case 'turn/start':
        turn = { turn: event.data.turn, seq: event.seq, steps: [] }
        turns.push(turn)
        step = undefined
        if (pendingPrompt) {
          turn.prompt = pendingPrompt.text
          turn.promptSeq = pendingPrompt.seq
          pendingPrompt = undefined
        }
        break
      case 'turn/end':
        if (turn) {
          turn.endSeq = event.seq
          turn.reason = event.data.reason
        }
        turn = undefined
        step = undefined
        break
      case 'step/start': {
        const t = currentTurn(event.seq)
        step = { step: event.data.step, seq: event.seq, calls: [] }
        t.steps.push(step)
        break
      }
      case 'user/message':
        if (event.data.source?.kind !== 'human') break
        if (!turn) pendingPrompt ??= { text: textOf(event.data.content), seq: event.seq }
        else if (turn.prompt === undefined) {
          turn.prompt = textOf(event.data.content)
          turn.promptSeq = event.seq
        }
        break
      case 'assistant/message': {
        const s = currentStep(event.seq)
        s.answerSeq = event.seq
        const answer = textOf(event.data.message.content)
        if (answer) s.answer = answer
        break
      }
      case 'tool/call': {
        const call: TraceCall = { seq: event.seq, callId: event.data.callId, name: event.data.name }
        currentStep(event.seq).calls.push(call)
        const list = open.get(call.callId) ?? []
        list.push(call)
        open.set(call.callId, list)
        break
      }
      case 'tool/result': {
        const call = open.get(event.data.message.callId)?.shift()
        if (call) {
          call.resultSeq = event.seq
          if (event.data.message.isError) call.isError = true
        }
        break
      }
    }
  }
  return turns
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
