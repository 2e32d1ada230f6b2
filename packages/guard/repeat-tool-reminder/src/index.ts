// @dsh/repeat-tool-reminder: an advisory loop-breaker. It counts, per session, runs of consecutive
// tool calls with the same name and canonically equal arguments; when a run reaches a configured
// length it appends a short reminder to that call's result. It never vetoes, delays or rewrites a call.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { PostExecutePayload, PreExecutePayload, ToolOutput } from '@dsh/tools'

export interface RepeatReminderConfig {
  /** Run lengths at which a reminder is attached, ascending; each later one is worded more firmly. */
  thresholds: number[]
  /** After the last threshold, remind again every this many further identical calls (0: never). */
  repeatEvery: number
  /** Sessions tracked at once (least recently active forgotten first). */
  maxSessions: number
}

export const Config: Schema<Partial<RepeatReminderConfig>, RepeatReminderConfig> = Schema.object({
  thresholds: Schema.array(Schema.natural().min(2))
    .default([3, 5, 8])
    .description('Run lengths of identical consecutive calls that get a reminder.'),
  repeatEvery: Schema.natural()
    .default(4)
    .description('After the last threshold, remind every N more identical calls (0: never).'),
  maxSessions: Schema.natural().min(1).default(256).description('Sessions tracked at once.'),
})

export const name = 'repeat-tool-reminder'
export const inject = ['tools']

/** JSON with object keys sorted at every level, so `{a,b}` and `{b,a}` compare equal. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
}

/** 0 for no reminder, else the escalation level (1-based, capped at the number of thresholds). */
export function reminderLevel(run: number, config: Pick<RepeatReminderConfig, 'thresholds' | 'repeatEvery'>): number {
  const index = config.thresholds.indexOf(run)
  if (index !== -1) return index + 1
  const last = config.thresholds.at(-1)
  if (last !== undefined && config.repeatEvery > 0 && run > last && (run - last) % config.repeatEvery === 0)
    return config.thresholds.length
  return 0
}

export function reminderText(toolName: string, run: number, level: number, levels: number): string {
  const head = `[Reminder from the harness: this is your ${ordinal(run)} consecutive call to ${toolName} with exactly the same arguments.`
  if (level <= 1 && levels > 1) {
    return `${head} Its result is unlikely to change. Re-read the result above; if it does not give you what you need, try a different approach.]`
  }
  if (level < levels) {
    return `${head} Repeating it again will not help. Re-read the last result, then either change the arguments, use another tool, or conclude with what you know.]`
  }
  return `${head} You appear to be stuck in a loop. Stop repeating this call: change your approach, or finish and explain to the user what is blocking you.]`
}

function ordinal(n: number): string {
  const tens = n % 100
  if (tens >= 11 && tens <= 13) return `${n}th`
  return `${n}${({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th'}`
}

function attach(output: ToolOutput, text: string): ToolOutput['content'] {
  if (typeof output.content === 'string') return output.content === '' ? text : `${output.content}\n\n${text}`
  return [...output.content, { type: 'text', text }]
}

interface Track {
  key: string
  run: number
}

export function apply(ctx: Context, config: RepeatReminderConfig): void {
  const thresholds = [...new Set(config.thresholds)].sort((a, b) => a - b)
  const settings = { thresholds, repeatEvery: config.repeatEvery }
  // Map iteration order doubles as recency: a touched session is re-inserted at the end.
  const sessions = new Map<string, Track>()
  // Run length of each call, decided at pre-execute (call order) and read at post-execute.
  const runs = new WeakMap<object, number>()

  ctx.on(
    'tools/pre-execute',
    async (payload: PreExecutePayload, next) => {
      const session = payload.context.sessionId ?? payload.context.agentId ?? ''
      const key = `${payload.tool.name}\u0000${canonicalJson(payload.args)}`
      const previous = sessions.get(session)
      const run = previous && previous.key === key ? previous.run + 1 : 1
      sessions.delete(session)
      sessions.set(session, { key, run })
      if (sessions.size > config.maxSessions) sessions.delete(sessions.keys().next().value as string)
      runs.set(payload.call, run)
      return next()
    },
    { prepend: true },
  )

  ctx.on('tools/post-execute', async (payload: PostExecutePayload, next) => {
    const run = runs.get(payload.call) ?? 0
    const level = reminderLevel(run, settings)
    if (level > 0) {
      const text = reminderText(payload.tool.name, run, level, thresholds.length)
      payload.output = {
        ...payload.output,
        content: attach(payload.output, text),
        meta: { ...(payload.output.meta ?? {}), repeatReminder: { run, level } },
      }
    }
    return next()
  })
}
