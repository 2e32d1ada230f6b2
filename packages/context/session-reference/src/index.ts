// @dsh/session-reference: `@session:<id>` mentions of other sessions. When a human message enters
// a step, each mention adds one logged context message after it: a bounded, read-only summary of
// that session (title, directory, turns, its opening request, the latest compaction summary when
// there is one, and its final answers), read through the web host's existing session methods
// (`sessions.list`, `sessions.history`). A session that does not exist gets a one-line note.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { InjectedContext, PreStepPayload } from '@dsh/agent'
import type {} from '@dsh/api-gateway'
import type { SessionRow, WireEvent } from '@dsh/web-protocol'

export const name = '@dsh/session-reference'
export const SOURCE_PLUGIN = '@dsh/session-reference'

export interface SessionReferenceConfig {
  /** Characters of one session summary at most. */
  maxChars: number
  /** Session mentions expanded per message at most. */
  maxMentions: number
  /** Final answers (of the last turns) included. */
  answers: number
}

export const Config: Schema<Partial<SessionReferenceConfig>, SessionReferenceConfig> = Schema.object({
  maxChars: Schema.natural().min(200).default(8_000).description('Characters of one session summary at most.'),
  maxMentions: Schema.natural().min(1).default(3).description('Session mentions expanded per message at most.'),
  answers: Schema.natural().min(1).default(3).description('Final answers of the last turns included.'),
}) as Schema<Partial<SessionReferenceConfig>, SessionReferenceConfig>

const TOKEN = /(^|\s)@session:([A-Za-z0-9_-]+)/g

export function mentionedSessions(text: string): string[] {
  const out: string[] = []
  for (const m of text.matchAll(TOKEN)) if (!out.includes(m[2])) out.push(m[2])
  return out
}

type Block = { type: string; text?: string }
const textOf = (blocks: unknown): string =>
  Array.isArray(blocks)
    ? (blocks as Block[]).flatMap((b) => (b.type === 'text' && b.text ? [b.text] : [])).join('\n')
    : ''

/** The summary text of a session from its row and log (pure). */
export function summarize(
  row: SessionRow,
  events: readonly WireEvent[],
  config: Pick<SessionReferenceConfig, 'maxChars' | 'answers'>,
): string {
  let opening = ''
  let compaction = ''
  const answers: Array<{ turn: number; text: string }> = []
  let turn = 0
  let lastAnswer = ''
  for (const e of events) {
    const d = e.data as Record<string, any>
    if (e.type === 'turn/start') {
      turn = d.turn
      lastAnswer = ''
    } else if (e.type === 'user/message' && d.source?.kind === 'human' && !opening) opening = textOf(d.content)
    else if (e.type === 'assistant/message') lastAnswer = textOf(d.message?.content) || lastAnswer
    else if (e.type === 'turn/end' && lastAnswer) answers.push({ turn, text: lastAnswer })
    else if (e.type === 'surface/replace')
      compaction =
        (d.messages as Array<{ content: unknown }> | undefined)?.map((m) => textOf(m.content)).join('\n') ?? compaction
  }
  const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s)
  const budget = Math.floor(config.maxChars / 4)
  const parts = [
    `Title: ${row.title ?? row.firstPrompt ?? '(untitled)'}`,
    `Directory: ${row.cwd}`,
    `Turns: ${row.turns}; last updated ${new Date(row.updatedAt).toISOString()}`,
    opening ? `Opening request:\n${clip(opening, budget)}` : '',
    compaction ? `Summary of its earlier conversation:\n${clip(compaction, budget)}` : '',
    ...answers.slice(-config.answers).map((a) => `Final answer of turn ${a.turn}:\n${clip(a.text, budget)}`),
  ].filter(Boolean)
  return clip(parts.join('\n\n'), config.maxChars)
}

export function apply(ctx: Context, raw: Partial<SessionReferenceConfig> = {}): void {
  const config: SessionReferenceConfig = { maxChars: 8_000, maxMentions: 3, answers: 3, ...raw }
  ctx.inject(['api'], (inner) => {
    const api = inner.api
    const call = <T>(method: string, params: unknown) =>
      api.call(method, params, { loopback: true, signal: AbortSignal.timeout(15_000) }) as Promise<T>

    const describe = async (sessionId: string, self: string): Promise<string> => {
      const attr = `id="${sessionId}"`
      if (sessionId === self)
        return `<session ${attr} unavailable="self">The user mentioned this session itself; nothing was added.</session>`
      const { sessions } = await call<{ sessions: SessionRow[] }>('sessions.list', {
        includeArchived: true,
        limit: 500,
      })
      const row = sessions.find((s) => s.sessionId === sessionId)
      if (!row)
        return `<session ${attr} unavailable="missing">The user mentioned session ${sessionId}, which does not exist (it may have been removed).</session>`
      const events: WireEvent[] = []
      for (let fromSeq = 0; ; ) {
        const page = await call<{ events: WireEvent[]; nextSeq: number; end: boolean }>('sessions.history', {
          sessionId,
          fromSeq,
          limit: 5000,
        })
        events.push(...page.events)
        if (page.end || page.events.length === 0) break
        fromSeq = page.nextSeq
      }
      const title = (row.title ?? '').replace(/"/g, '&quot;')
      return `<session ${attr} title="${title}" readonly="true">\n${summarize(row, events, config)}\n</session>`
    }

    inner.on('agent/pre-step', async (payload: PreStepPayload, next) => {
      const out: InjectedContext[] = []
      for (const message of payload.messages) {
        out.push(message)
        if (message.source.kind !== 'human') continue
        const text = typeof message.content === 'string' ? message.content : textOf(message.content)
        // A client that marks picked references (the web composer) decides alone: typed text stays text.
        const picked = message.source.references
        const ids = picked
          ? [...new Set(picked.flatMap((r) => (r.kind === 'session' ? [r.sessionId] : [])))]
          : mentionedSessions(text)
        for (const id of ids.slice(0, config.maxMentions)) {
          const content = await describe(id, payload.agent.session.id).catch(
            (error: Error) =>
              `<session id="${id}" unavailable="error">Session ${id} could not be read: ${error.message}</session>`,
          )
          out.push({ content, source: { kind: 'plugin', plugin: SOURCE_PLUGIN, label: `@session:${id}` } })
        }
      }
      payload.messages.splice(0, payload.messages.length, ...out)
      return next()
    })
  })
}

export default { name, Config, apply }
