// @dsh/schedule: durable reminders for live agents. The session log owns reminder state
// (`schedule/created`, `schedule/fired`, `schedule/cancelled`); timers are a disposable
// projection of it, armed for every live agent whose session has pending reminders (at creation,
// which covers a resumed session in a restarted host) and dropped when the agent goes away. A due
// reminder is logged as fired and delivered through `agent.send` as a plugin-sourced
// `user/message`, which starts a turn when the agent is idle. Reminders that fell due while no
// agent was live are delivered once, marked late.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type { ToolCallContext } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/commands'

export const name = 'schedule'
export const inject = ['tools', 'agents', 'sessions']

/** `source.plugin` of a delivered reminder's `user/message`. */
export const REMINDER_SOURCE = 'schedule'

export type ScheduleKind = 'after' | 'at' | 'every'

export interface ScheduleCreated {
  id: string
  kind: ScheduleKind
  prompt: string
  /** Epoch ms of the first delivery. */
  dueAt: number
  /** Fixed-rate interval of an `every` reminder. */
  everyMs?: number
  createdAt: number
}

export interface ScheduleFired {
  id: string
  /** The slot delivered (epoch ms). */
  dueAt: number
  firedAt: number
  /** Delivered more than `lateAfterSeconds` after it was due (e.g. after downtime). */
  late: boolean
  /** `every`: slots that passed undelivered and were folded into this delivery. */
  missed?: number
  /** `every`: the next slot. */
  next?: number
}

declare module '@dsh/session' {
  interface SessionEventMap {
    'schedule/created': ScheduleCreated
    'schedule/fired': ScheduleFired
    'schedule/cancelled': { id: string; by: 'model' | 'human' }
  }
}

export interface PendingSchedule {
  id: string
  kind: ScheduleKind
  prompt: string
  /** When it is next due (epoch ms). */
  nextAt: number
  everyMs?: number
  createdAt: number
  fired: number
}

export interface Config {
  minEverySeconds: number
  maxPending: number
  maxPromptChars: number
  maxDelaySeconds: number
  lateAfterSeconds: number
}

export const Config: Schema<Config> = Schema.object({
  minEverySeconds: Schema.natural().min(1).default(300).description('Shortest every_seconds interval accepted.'),
  maxPending: Schema.natural().min(1).default(20).description('Most pending reminders per session.'),
  maxPromptChars: Schema.natural().min(10).default(2000).description('Most characters of a reminder prompt.'),
  maxDelaySeconds: Schema.natural()
    .min(60)
    .default(366 * 24 * 3600)
    .description('Furthest a reminder may be scheduled ahead (after_seconds, at, every_seconds).'),
  lateAfterSeconds: Schema.natural()
    .default(60)
    .description('A reminder delivered more than this after its due time is marked late.'),
})

/** The reminders of a session that will still fire, from its log, oldest first. */
export function pendingSchedules(session: Pick<Session, 'events'>): PendingSchedule[] {
  const table = new Map<string, PendingSchedule>()
  for (const event of session.events) {
    if (event.type === 'schedule/created') {
      const d = event.data
      table.set(d.id, {
        id: d.id,
        kind: d.kind,
        prompt: d.prompt,
        nextAt: d.dueAt,
        ...(d.everyMs !== undefined ? { everyMs: d.everyMs } : {}),
        createdAt: d.createdAt,
        fired: 0,
      })
    } else if (event.type === 'schedule/fired') {
      const entry = table.get(event.data.id)
      if (!entry) continue
      entry.fired++
      if (entry.kind === 'every' && event.data.next !== undefined) entry.nextAt = event.data.next
      else table.delete(entry.id)
    } else if (event.type === 'schedule/cancelled') table.delete(event.data.id)
  }
  return [...table.values()]
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
const MAX_TIMER_MS = 2 ** 31 - 1
// An explicit absolute time: a date, a time, and a zone (Z or an offset).
const AT_FORMAT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/

/** What the model reads for one pending reminder. */
function describe(entry: PendingSchedule, now: number): string {
  const when =
    entry.nextAt <= now
      ? `overdue since ${iso(entry.nextAt)}`
      : `next at ${iso(entry.nextAt)} (in ${Math.ceil((entry.nextAt - now) / 1000)} s)`
  const every = entry.everyMs !== undefined ? `, every ${entry.everyMs / 1000} s` : ''
  return `${entry.id} (${entry.kind}${every}) ${when}: ${JSON.stringify(entry.prompt.length > 120 ? `${entry.prompt.slice(0, 117)}...` : entry.prompt)}`
}

/** The text a reminder is delivered as. */
export function reminderText(created: Pick<ScheduleCreated, 'id' | 'prompt'>, fired: ScheduleFired): string {
  const late = fired.late
    ? ` (late: it was due at ${iso(fired.dueAt)} and is delivered at ${iso(fired.firedAt)}${fired.missed ? `; ${fired.missed} earlier occurrence${fired.missed === 1 ? ' was' : 's were'} skipped` : ''})`
    : ''
  return `[Scheduled reminder ${created.id}${late}] ${created.prompt}`
}

interface CreateArgs {
  prompt: string
  after_seconds?: number
  at?: string
  every_seconds?: number
}

export function apply(ctx: Context, config: Config): void {
  // Ignorable: a delivered reminder is an ordinary `user/message`, so a reader without this plugin
  // derives the same history (it just arms nothing).
  ctx.inject(['sessionPersistence'], (inner) => {
    for (const type of ['schedule/created', 'schedule/fired', 'schedule/cancelled'])
      inner.sessionPersistence.registerEventType(type, { ignorable: true })
  })

  /** Live timers per agent id: reminder id -> handle. */
  const timers = new Map<string, Map<string, ReturnType<typeof setTimeout>>>()

  const clearAgent = (agentId: string) => {
    for (const handle of timers.get(agentId)?.values() ?? []) clearTimeout(handle)
    timers.delete(agentId)
  }
  ctx.effect(() => () => {
    for (const id of [...timers.keys()]) clearAgent(id)
  })

  const deliver = (agent: Agent, id: string) => {
    timers.get(agent.id)?.delete(id)
    if (agent.status === 'disposed') return
    const { session } = agent
    const entry = pendingSchedules(session).find((p) => p.id === id)
    if (!entry) return
    const now = Date.now()
    if (entry.nextAt > now) return arm(agent, entry)
    const fired: ScheduleFired = {
      id,
      dueAt: entry.nextAt,
      firedAt: now,
      late: now - entry.nextAt > config.lateAfterSeconds * 1000,
    }
    if (entry.kind === 'every' && entry.everyMs !== undefined) {
      const missed = Math.floor((now - entry.nextAt) / entry.everyMs)
      if (missed > 0) fired.missed = missed
      fired.next = entry.nextAt + (missed + 1) * entry.everyMs
    }
    session.append('schedule/fired', fired)
    agent
      .send(reminderText(entry, fired), {
        source: { kind: 'plugin', plugin: REMINDER_SOURCE, label: `reminder ${id}` },
      })
      .catch((error: unknown) =>
        ctx
          .logger('schedule')
          .warn('reminder %s was not delivered: %s', id, error instanceof Error ? error.message : String(error)),
      )
    if (fired.next !== undefined) arm(agent, { ...entry, nextAt: fired.next })
  }

  const arm = (agent: Agent, entry: PendingSchedule) => {
    let table = timers.get(agent.id)
    if (!table) timers.set(agent.id, (table = new Map()))
    const previous = table.get(entry.id)
    if (previous) clearTimeout(previous)
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, entry.nextAt - Date.now()))
    const handle = setTimeout(() => deliver(agent, entry.id), delay)
    // A reminder never keeps a finished process alive on its own.
    handle.unref?.()
    table.set(entry.id, handle)
  }

  const armAll = (agent: Agent) => {
    if (agent.session.parent) return
    for (const entry of pendingSchedules(agent.session)) arm(agent, entry)
  }

  ctx.on('agent/created', (agent: Agent) => armAll(agent))
  ctx.on('agent/disposed', (agent: Agent) => clearAgent(agent.id))
  // A long-lived host keeps a session with a pending reminder live, so the reminder fires on time.
  ctx.on('session/keep-alive', (session) => {
    const pending = session.parent ? 0 : pendingSchedules(session).length
    return pending > 0 ? `${pending} pending reminder${pending === 1 ? '' : 's'}` : undefined
  })
  for (const agent of ctx.agents.list()) armAll(agent)

  const agentOf = (call: ToolCallContext): Agent | undefined =>
    call.agentId !== undefined ? ctx.agents.get(call.agentId) : undefined
  const sessionOf = (call: ToolCallContext): Session | undefined =>
    agentOf(call)?.session ?? (call.sessionId !== undefined ? ctx.sessions.get(call.sessionId) : undefined)
  const noSession = () =>
    fail('NO_SESSION', 'this call is not attached to a session, so there is nowhere to keep a reminder.')

  ctx.tools.register<CreateArgs>({
    name: 'schedule_create',
    defer: true,
    description:
      'Schedule a reminder for yourself in this session. Give exactly one of: after_seconds (once, that many seconds from now), ' +
      `at (once, an absolute ISO 8601 time with a zone, e.g. 2030-01-31T09:00:00Z), every_seconds (repeatedly, at least ${config.minEverySeconds}). ` +
      'When it is due, prompt arrives as a message that starts a new turn (reminders that fell due while the session was closed arrive once, marked late). ' +
      'Write prompt as the instruction you want to receive then. schedule_list tells the current time.',
    parameters: {
      type: 'object',
      properties: {
        prompt: { type: 'string', description: 'The message to deliver when the reminder is due.' },
        after_seconds: { type: 'integer', description: 'Deliver once, this many seconds from now (positive).' },
        at: { type: 'string', description: 'Deliver once at this absolute time: ISO 8601 with Z or an offset.' },
        every_seconds: {
          type: 'integer',
          description: `Deliver every this many seconds (at least ${config.minEverySeconds}); the first delivery is one interval from now.`,
        },
      },
      required: ['prompt'],
      additionalProperties: false,
    },
    execute(args, call) {
      const session = sessionOf(call)
      if (!session) return noSession()
      if (session.parent)
        return fail(
          'SUBAGENT_SESSION',
          "reminders belong to the top-level session, not a subagent's; tell your parent what to schedule instead.",
        )
      const now = Date.now()
      const given = (['after_seconds', 'at', 'every_seconds'] as const).filter((k) => args[k] !== undefined)
      if (given.length !== 1) {
        return fail(
          'INVALID_SCHEDULE',
          `give exactly one of after_seconds, at or every_seconds (got ${given.length ? given.join(' and ') : 'none'}).`,
        )
      }
      const prompt = args.prompt.trim()
      if (prompt === '')
        return fail(
          'INVALID_SCHEDULE',
          'prompt is empty; write the message you want to receive when the reminder is due.',
        )
      if (prompt.length > config.maxPromptChars)
        return fail(
          'INVALID_SCHEDULE',
          `prompt has ${prompt.length} characters; keep it under ${config.maxPromptChars}.`,
        )
      const maxMs = config.maxDelaySeconds * 1000
      let kind: ScheduleKind
      let dueAt: number
      let everyMs: number | undefined
      if (args.after_seconds !== undefined) {
        if (!Number.isSafeInteger(args.after_seconds) || args.after_seconds <= 0)
          return fail('INVALID_SCHEDULE', `after_seconds must be a positive whole number (got ${args.after_seconds}).`)
        if (args.after_seconds * 1000 > maxMs)
          return fail('INVALID_SCHEDULE', `after_seconds may be at most ${config.maxDelaySeconds}.`)
        kind = 'after'
        dueAt = now + args.after_seconds * 1000
      } else if (args.at !== undefined) {
        const at = args.at.trim()
        const parsed = AT_FORMAT.test(at) ? Date.parse(at) : NaN
        if (Number.isNaN(parsed))
          return fail(
            'INVALID_SCHEDULE',
            `at must be an ISO 8601 time with a zone, like 2030-01-31T09:00:00Z or 2030-01-31T09:00:00+08:00 (got ${JSON.stringify(args.at)}).`,
          )
        if (parsed <= now)
          return fail(
            'AT_IN_PAST',
            `at ${JSON.stringify(at)} is in the past (it is now ${iso(now)}); give a future time or use after_seconds.`,
          )
        if (parsed - now > maxMs)
          return fail('INVALID_SCHEDULE', `at is more than ${config.maxDelaySeconds} seconds ahead.`)
        kind = 'at'
        dueAt = parsed
      } else {
        const every = args.every_seconds!
        if (!Number.isSafeInteger(every) || every < config.minEverySeconds) {
          return fail(
            'EVERY_TOO_SHORT',
            `every_seconds must be a whole number of at least ${config.minEverySeconds} (got ${every}); use after_seconds for a single reminder sooner.`,
          )
        }
        if (every * 1000 > maxMs)
          return fail('INVALID_SCHEDULE', `every_seconds may be at most ${config.maxDelaySeconds}.`)
        kind = 'every'
        everyMs = every * 1000
        dueAt = now + everyMs
      }
      const pending = pendingSchedules(session)
      if (pending.length >= config.maxPending)
        return fail(
          'TOO_MANY_SCHEDULES',
          `this session already has ${pending.length} pending reminders (the limit); cancel one with schedule_cancel first.`,
        )
      const number = session.events.reduce((n, e) => (e.type === 'schedule/created' ? n + 1 : n), 0) + 1
      const created: ScheduleCreated = {
        id: `sch-${number}`,
        kind,
        prompt,
        dueAt,
        ...(everyMs !== undefined ? { everyMs } : {}),
        createdAt: now,
      }
      session.append('schedule/created', created)
      const entry = pendingSchedules(session).find((p) => p.id === created.id)!
      for (const agent of ctx.agents.list()) if (agent.session === session) arm(agent, entry)
      const every = everyMs !== undefined ? `, then every ${everyMs / 1000} s` : ''
      return {
        content: `Reminder ${created.id} scheduled for ${iso(dueAt)} (in ${Math.round((dueAt - now) / 1000)} s${every}). It is now ${iso(now)}.`,
        meta: { id: created.id, kind, dueAt },
      }
    },
  })

  ctx.tools.register<Record<string, never>>({
    name: 'schedule_list',
    // The line load_tools lists while this tool is deferred (@dsh/tool-deferral).
    summary: 'List the pending reminders (ids, next due times).',
    defer: true,
    description: 'List the pending reminders of this session with their ids and next due times.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    concurrencySafe: true,
    execute(_args, call) {
      const session = sessionOf(call)
      if (!session) return noSession()
      const now = Date.now()
      const pending = pendingSchedules(session)
      if (pending.length === 0) return { content: `No pending reminders. It is now ${iso(now)}.`, meta: { pending: 0 } }
      return {
        content: [
          `${pending.length} pending reminder${pending.length === 1 ? '' : 's'} (it is now ${iso(now)}):`,
          ...pending.map((p) => `- ${describe(p, now)}`),
        ].join('\n'),
        meta: { pending: pending.length },
      }
    },
  })

  /** Cancels a pending reminder; returns the problem as a sentence, or undefined when done. */
  const cancel = (session: Session, id: string, by: 'model' | 'human'): string | undefined => {
    const pending = pendingSchedules(session)
    if (!pending.some((p) => p.id === id)) {
      const ids = pending.map((p) => p.id)
      return `no pending reminder ${JSON.stringify(id)} in this session (pending: ${ids.length ? ids.join(', ') : 'none'})`
    }
    session.append('schedule/cancelled', { id, by })
    for (const agent of ctx.agents.list()) {
      if (agent.session !== session) continue
      const handle = timers.get(agent.id)?.get(id)
      if (handle) clearTimeout(handle)
      timers.get(agent.id)?.delete(id)
    }
    return undefined
  }

  ctx.tools.register<{ id: string }>({
    name: 'schedule_cancel',
    // The line load_tools lists while this tool is deferred (@dsh/tool-deferral).
    summary: 'Cancel a pending reminder by id.',
    defer: true,
    description: 'Cancel a pending reminder of this session by id (from schedule_create or schedule_list).',
    parameters: {
      type: 'object',
      properties: { id: { type: 'string', description: 'The reminder id, e.g. sch-2.' } },
      required: ['id'],
      additionalProperties: false,
    },
    execute(args, call) {
      const session = sessionOf(call)
      if (!session) return noSession()
      const problem = cancel(session, args.id, 'model')
      if (problem) return fail('UNKNOWN_SCHEDULE', `${problem}.`)
      return { content: `Reminder ${args.id} cancelled.`, meta: { id: args.id } }
    },
  })

  // The human's view: `/schedule` lists, `/schedule cancel <id>` cancels (when a commands row is mounted).
  ctx.inject(['commands'], (inner) => {
    inner.commands.register({
      name: 'schedule',
      description: "List this session's pending reminders, or cancel one.",
      usage: '[cancel <id>]',
      run(args, { session }) {
        const [verb, id, ...rest] = args.split(/\s+/).filter(Boolean)
        const now = Date.now()
        if (verb === undefined) {
          const pending = pendingSchedules(session)
          if (pending.length === 0) return 'No pending reminders.'
          return pending.map((p) => describe(p, now)).join('\n')
        }
        if (verb !== 'cancel' || id === undefined || rest.length > 0) throw new Error('usage: /schedule [cancel <id>]')
        const problem = cancel(session, id, 'human')
        if (problem) throw new Error(problem)
        return `Reminder ${id} cancelled.`
      },
    })
  })
}
