// @dsh/tool-session-query: model tools over `ctx.sessionQuery`. `session_search` finds earlier
// sessions containing a literal phrase and `session_event_search` the events themselves;
// `session_trace` outlines a session (turns, steps, calls), `session_event_trace` shows what led
// to one event and what it led to, `session_event_read` reads one event whole, and `session_read`
// pages through a session's events. All are limited to sessions of the calling session's
// workspace (its cwd) unless the row says `all`.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { AnySessionEvent } from '@dsh/session'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import {
  SessionQueryError,
  eventText,
  type EventHit,
  type EventTrace,
  type SearchHit,
  type SessionInfo,
  type SessionTrace,
} from '@dsh/session-query'

export const name = '@dsh/tool-session-query'
export const inject = ['tools', 'sessionQuery', 'sessions']

export interface Config {
  /** `workspace`: only sessions whose cwd is the calling session's; `all`: every stored session. */
  scope: 'workspace' | 'all'
  maxResults: number
  /** Characters of event text `session_read` returns per call, at most. */
  maxReadChars: number
  /** Characters of one event shown by `session_read`, at most (longer ones are cut with a marker). */
  maxEventChars: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  scope: Schema.union(['workspace', 'all'] as const)
    .default('workspace')
    .description('Which sessions the tools may see.'),
  maxResults: Schema.natural().min(1).max(100).default(10),
  maxReadChars: Schema.natural().min(1000).default(20_000),
  maxEventChars: Schema.natural().min(200).default(4000),
})

function fail(code: string, message: string): ToolOutput {
  return { content: `Error [${code}]: ${message}`, isError: true, error: { code, message } }
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z')

/** One search hit as the model sees it. */
export function formatHit(hit: SearchHit): string {
  return `- session ${hit.sessionId}: ${hit.title ?? '(untitled)'} | updated ${iso(hit.updatedAt)}${hit.live ? ' | running' : ''} | ${hit.matches} matching event${hit.matches === 1 ? '' : 's'}\n  best match at seq ${hit.seq} (${hit.type}): ${hit.snippet}`
}

/** One event hit as the model sees it. */
export function formatEventHit(hit: EventHit): string {
  return `- session ${hit.sessionId} #${hit.seq} ${hit.type} (${hit.title ?? 'untitled'}${hit.live ? ', running' : ''}): ${hit.snippet}`
}

/** `text` on one line, cut to `max` characters with an ellipsis. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

/** A session's outline as the model sees it, bounded by `maxChars` (later turns are cut first). */
export function formatTrace(trace: SessionTrace, maxChars: number): string {
  const { session } = trace
  const lines = [
    `Session ${session.id}: ${session.title ?? '(untitled)'} | cwd ${session.cwd} | ${session.events} events${session.live ? ' | running' : ''}`,
  ]
  if (session.parentSession) lines.push(`Started by session ${session.parentSession.sessionId}.`)
  for (const turn of trace.turns) {
    const range = turn.endSeq !== undefined ? `#${turn.seq}-#${turn.endSeq}` : `#${turn.seq}-`
    const prompt = turn.prompt !== undefined ? ` prompt #${turn.promptSeq}: "${oneLine(turn.prompt, 160)}"` : ''
    lines.push(`turn ${turn.turn} (${range}, ${turn.reason ?? 'not ended'})${prompt}`)
    for (const step of turn.steps) {
      const calls = step.calls.map(
        (c) =>
          `${c.name} #${c.seq}${c.resultSeq !== undefined ? ` -> #${c.resultSeq}${c.isError ? ' error' : ' ok'}` : ' (no result)'}`,
      )
      const answer = step.answer !== undefined ? ` answer #${step.answerSeq}: "${oneLine(step.answer, 120)}"` : ''
      lines.push(`  step ${step.step} #${step.seq}:${answer}${calls.length ? ` calls: ${calls.join(', ')}` : ''}`)
    }
  }
  if (trace.children.length) {
    lines.push('Sessions it started:')
    for (const child of trace.children)
      lines.push(`- ${child.id}: ${child.title ?? '(untitled)'} (from #${child.parentSession?.boundary ?? '?'})`)
  }
  let text = ''
  for (const [i, line] of lines.entries()) {
    if (text.length + line.length + 1 > maxChars && i > 0) {
      return `${text}[... ${lines.length - i} more lines; read events with session_read or session_event_trace]`
    }
    text += `${line}\n`
  }
  return text.trimEnd()
}

/** An event trace as the model sees it: one headed block per event, bounded per event. */
export function formatEventTrace(trace: EventTrace, maxEventChars: number): string {
  const blocks = trace.chain.map(({ relation, event }) => {
    const body = eventText(event)
    const shown = body.length > maxEventChars ? `${body.slice(0, maxEventChars)} [...]` : body
    const head = `#${event.seq} ${event.type} [${relation}]`
    if (event.type === 'turn/start') return `${head}: turn ${event.data.turn}`
    if (event.type === 'step/start') return `${head}: step ${event.data.step}`
    return shown ? `${head}:\n${shown}` : head
  })
  const children = trace.children.map((c) => `- ${c.id}: ${c.title ?? '(untitled)'}`)
  return [
    `Session ${trace.session.id}, event #${trace.target.seq} (${trace.target.type}):`,
    ...blocks,
    ...(children.length ? ['Sessions started in this turn:', ...children] : []),
  ].join('\n\n')
}

/** Events as text lines, bounded; returns the text and the seq to continue from (if cut). */
export function formatEvents(
  events: readonly AnySessionEvent[],
  maxChars: number,
  maxEventChars: number,
): { text: string; next?: number } {
  const lines: string[] = []
  let used = 0
  for (const event of events) {
    let body = eventText(event)
    if (!body) continue
    if (body.length > maxEventChars)
      body = `${body.slice(0, maxEventChars)}\n[... ${body.length - maxEventChars} more characters of this event not shown]`
    const line = `#${event.seq} ${event.type}${event.type === 'user/message' && event.data.source?.kind !== 'human' ? ' (context)' : ''}:\n${body}`
    if (used + line.length > maxChars && lines.length > 0) return { text: lines.join('\n\n'), next: event.seq }
    lines.push(line)
    used += line.length
  }
  return { text: lines.join('\n\n') }
}

export function apply(ctx: Context, config: Config): void {
  const workspaceOf = (call: ToolCallContext) =>
    (call.sessionId !== undefined ? ctx.sessions.get(call.sessionId)?.cwd : undefined) ?? call.cwd
  const scopeNote =
    config.scope === 'workspace' ? ' Only sessions of the current workspace (directory) are visible.' : ''
  /** The session when the caller may see it; an unknown and a hidden session look the same. */
  const visible = async (id: unknown, call: ToolCallContext): Promise<SessionInfo | undefined> => {
    if (typeof id !== 'string' || id === '') return undefined
    const info = await ctx.sessionQuery.session(id)
    return info && (config.scope === 'all' || info.cwd === workspaceOf(call)) ? info : undefined
  }
  const notFound = (id: unknown) =>
    fail(
      'NOT_FOUND',
      `no session ${JSON.stringify(id)} in ${config.scope === 'all' ? 'the store' : 'this workspace'}; find ids with session_search.`,
    )
  /** Runs `body`, turning query errors into model-visible error results. */
  const guarded = async (body: () => Promise<ToolOutput>, hint = ''): Promise<ToolOutput> => {
    try {
      return await body()
    } catch (error) {
      if (error instanceof SessionQueryError) return fail(error.code, `${error.message}${hint}`)
      throw error
    }
  }

  ctx.tools.register<{ query: string; limit?: number }>({
    name: 'session_search',
    description:
      'Search earlier agent sessions for a literal phrase (case-insensitive substring, at least 3 characters; quotes and operators are ' +
      'plain text). Matches prompts, answers, tool calls and tool results of other sessions, running ones included. Returns one line ' +
      'per session with its best match; read more ' +
      `with session_read.${scopeNote}`,
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'The exact text to find.' },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: config.maxResults,
          description: `Sessions to return (default and maximum ${config.maxResults}).`,
        },
      },
      required: ['query'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    async execute(args, call) {
      try {
        const limit = Math.min(args.limit ?? config.maxResults, config.maxResults)
        // The calling session always contains the query (in this very call): it is left out.
        const hits = (
          await ctx.sessionQuery.search({
            text: args.query,
            ...(config.scope === 'workspace' ? { cwd: workspaceOf(call) } : {}),
            limit: limit + 1,
          })
        )
          .filter((hit) => hit.sessionId !== call.sessionId)
          .slice(0, limit)
        if (hits.length === 0) return { content: `No session contains "${args.query}".${scopeNote}`, meta: { hits: 0 } }
        return {
          content: `${hits.length} session${hits.length === 1 ? '' : 's'} match:\n${hits.map((h) => formatHit(h)).join('\n')}`,
          meta: { hits: hits.length },
        }
      } catch (error) {
        if (error instanceof SessionQueryError) return fail(error.code, `${error.message}. Use a longer, exact phrase.`)
        throw error
      }
    },
  })

  ctx.tools.register<{ session_id: string; from_seq?: number }>({
    name: 'session_read',
    description:
      'Read the events of an earlier session as text: prompts, answers, tool calls and tool results, each headed by its seq number. ' +
      `Long sessions come in pages: continue with the from_seq the result names.${scopeNote}`,
    parameters: {
      type: 'object',
      properties: {
        session_id: { type: 'string', description: 'A session id from session_search.' },
        from_seq: { type: 'integer', minimum: 0, description: 'First event to read (default 0).' },
      },
      required: ['session_id'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    async execute(args, call) {
      const info = await visible(args.session_id, call)
      if (!info) return notFound(args.session_id)
      try {
        const events = await ctx.sessionQuery.read(info.id, { fromSeq: args.from_seq ?? 0 })
        const { text, next } = formatEvents(events, config.maxReadChars, config.maxEventChars)
        const head = `Session ${info.id}: ${info.title ?? '(untitled)'} | cwd ${info.cwd} | ${info.events} events${info.live ? ' | running' : ''}`
        const tail = next !== undefined ? `\n\n[more events follow: call session_read with from_seq=${next}]` : ''
        return {
          content: `${head}\n\n${text || '(no readable events in this range)'}${tail}`,
          meta: { events: events.length, ...(next !== undefined ? { next } : {}) },
        }
      } catch (error) {
        if (error instanceof SessionQueryError) return fail(error.code, error.message)
        throw error
      }
    },
  })
  ctx.tools.register<{ query: string; limit?: number; session_id?: string }>({
    name: 'session_event_search',
    description:
      'Search events (prompts, answers, tool calls, tool results) of earlier sessions for a literal phrase (case-insensitive ' +
      'substring, at least 3 characters). Unlike session_search, returns one line per matching event, best first, with its ' +
      `session id and seq for session_event_read or session_event_trace. Optionally within one session.${scopeNote}`,
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'The exact text to find.' },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: config.maxResults,
          description: `Events to return (default and maximum ${config.maxResults}).`,
        },
        session_id: { type: 'string', description: 'Only events of this session.' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    async execute(args, call) {
      return guarded(async () => {
        if (args.session_id !== undefined && !(await visible(args.session_id, call))) return notFound(args.session_id)
        const limit = Math.min(args.limit ?? config.maxResults, config.maxResults)
        // The calling session contains the query in this very call: it is left out, unless asked for by id.
        const hits = (
          await ctx.sessionQuery.searchEvents({
            text: args.query,
            ...(config.scope === 'workspace' ? { cwd: workspaceOf(call) } : {}),
            ...(args.session_id !== undefined ? { sessionIds: [args.session_id] } : {}),
            limit: limit + 20,
          })
        )
          .filter((hit) => args.session_id !== undefined || hit.sessionId !== call.sessionId)
          .slice(0, limit)
        if (hits.length === 0) return { content: `No event contains "${args.query}".${scopeNote}`, meta: { hits: 0 } }
        return {
          content: `${hits.length} event${hits.length === 1 ? '' : 's'} match:\n${hits.map(formatEventHit).join('\n')}`,
          meta: { hits: hits.length },
        }
      }, '. Use a longer, exact phrase.')
    },
  })

  ctx.tools.register<{ session_id: string }>({
    name: 'session_trace',
    description:
      "Outline one session: its turns (prompt, how each ended), each step's answer and tool calls with the seq of each " +
      `call and its result (ok or error), and the sessions it started (subagents, forks). Use the seqs with session_event_read.${scopeNote}`,
    parameters: {
      type: 'object',
      properties: { session_id: { type: 'string', description: 'A session id from session_search.' } },
      required: ['session_id'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    async execute(args, call) {
      const info = await visible(args.session_id, call)
      if (!info) return notFound(args.session_id)
      return guarded(async () => {
        const trace = await ctx.sessionQuery.trace(info.id)
        return {
          content: formatTrace(trace, config.maxReadChars),
          meta: { turns: trace.turns.length, children: trace.children.length },
        }
      })
    },
  })

  ctx.tools.register<{ session_id: string; seq: number }>({
    name: 'session_event_trace',
    description:
      'Show what led to one event of a session and what it led to: the turn and prompt it belongs to, its step, the answer ' +
      `that issued a tool call, the call and its result, and sessions started in that turn.${scopeNote}`,
    parameters: {
      type: 'object',
      properties: {
        session_id: { type: 'string', description: 'A session id from session_search.' },
        seq: { type: 'integer', minimum: 0, description: 'The event, by its seq number.' },
      },
      required: ['session_id', 'seq'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    async execute(args, call) {
      const info = await visible(args.session_id, call)
      if (!info) return notFound(args.session_id)
      return guarded(async () => {
        const trace = await ctx.sessionQuery.eventTrace(info.id, args.seq)
        return { content: formatEventTrace(trace, config.maxEventChars), meta: { events: trace.chain.length } }
      })
    },
  })

  ctx.tools.register<{ session_id: string; seq: number }>({
    name: 'session_event_read',
    description:
      `Read one event of a session whole (up to ${config.maxReadChars} characters): a prompt, an answer, a tool call with its ` +
      `arguments or a tool result.${scopeNote}`,
    parameters: {
      type: 'object',
      properties: {
        session_id: { type: 'string', description: 'A session id from session_search.' },
        seq: { type: 'integer', minimum: 0, description: 'The event, by its seq number.' },
      },
      required: ['session_id', 'seq'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    async execute(args, call) {
      const info = await visible(args.session_id, call)
      if (!info) return notFound(args.session_id)
      return guarded(async () => {
        const [event] = await ctx.sessionQuery.read(info.id, { fromSeq: args.seq, toSeq: args.seq + 1 })
        if (!event) return fail('NOT_FOUND', `session ${info.id} has no event ${args.seq} (it has ${info.events})`)
        let body = eventText(event) || JSON.stringify(event.data)
        const cut = body.length - config.maxReadChars
        if (cut > 0) body = `${body.slice(0, config.maxReadChars)}\n[... ${cut} more characters not shown]`
        return {
          content: `Session ${info.id} #${event.seq} ${event.type} at ${iso(event.time)}:\n${body}`,
          meta: { seq: event.seq },
        }
      })
    },
  })
}
