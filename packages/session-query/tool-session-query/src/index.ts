// @dsh/tool-session-query: model tools over `ctx.sessionQuery`. `session_search` finds earlier
// sessions containing a literal phrase; `session_read` reads one session's events as text. Both
// are limited to sessions of the calling session's workspace (its cwd) unless the row says `all`.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { AnySessionEvent } from '@dsh/session'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import { SessionQueryError, eventText, type SearchHit } from '@dsh/session-query'

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
      const info = await ctx.sessionQuery.session(args.session_id)
      const visible = info && (config.scope === 'all' || info.cwd === workspaceOf(call))
      if (!visible)
        return fail(
          'NOT_FOUND',
          `no session ${JSON.stringify(args.session_id)} in ${config.scope === 'all' ? 'the store' : 'this workspace'}; find ids with session_search.`,
        )
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
}
