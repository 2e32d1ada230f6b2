// @dsh/time-context: opt-in context with the current zoned time and the time elapsed since the
// previous note, sampled while each request is prepared (`agent/pre-step`) and injected only when
// it changed meaningfully: first note, another zone, another local date, or the interval passed.
// Scheduling reads the plugin's last note from the durable log, so it survives resume.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { InjectedContext, PreStepDecision, PreStepPayload } from '@dsh/agent'
import type { AnySessionEvent, MessageSource, Session, SessionEvent } from '@dsh/session'
import { checkZone, parseNote, renderNote, systemZone, zonedTime } from './clock.ts'

export { checkZone, formatElapsed, parseNote, renderNote, zonedTime, type ZonedTime } from './clock.ts'

export const name = '@dsh/time-context'
export const inject: string[] = []
export const SOURCE: MessageSource = { kind: 'plugin', plugin: name }

export interface Config {
  timeZone?: string
  refreshIntervalMs: number
  firstStepOnly: boolean
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  timeZone: Schema.string().description(
    'IANA time zone (e.g. Europe/Berlin). Absent: the system zone, read at each sample.',
  ),
  refreshIntervalMs: Schema.natural()
    .min(1)
    .default(600_000)
    .description(
      'A new note is injected once this long has passed since the previous one (a zone or date change injects earlier).',
    ),
  firstStepOnly: Schema.boolean()
    .default(false)
    .description('Sample only on the first step of a turn instead of before every request.'),
})

interface Note {
  time: number
  date?: string
  zone?: string
}

/** Latest note per session, derived from the log (the index only remembers its scan position). */
class NoteIndex {
  private readonly bySession = new WeakMap<Session, { scanned: number; latest?: Note }>()

  latest(session: Session): Note | undefined {
    let index = this.bySession.get(session)
    if (!index) this.bySession.set(session, (index = { scanned: 0 }))
    const events = session.events
    for (let seq = index.scanned; seq < events.length; seq++) {
      const note = noteOf(events[seq])
      if (note) index.latest = note
    }
    index.scanned = events.length
    return index.latest
  }
}

function noteOf(event: AnySessionEvent): Note | undefined {
  if (event.type !== 'user/message') return undefined
  const { data } = event as SessionEvent<'user/message'>
  if (data.source.kind !== 'plugin' || data.source.plugin !== name) return undefined
  const text = data.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  return { time: event.time, ...parseNote(text) }
}

export function apply(ctx: Context, config: Config): void {
  if (config.timeZone !== undefined) {
    try {
      checkZone(config.timeZone)
    } catch {
      throw new RangeError(`time-context: timeZone ${JSON.stringify(config.timeZone)} is not a known IANA time zone`)
    }
  }
  const notes = new NoteIndex()

  ctx.on(
    'agent/pre-step',
    async (payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision> => {
      if (config.firstStepOnly && payload.step !== 0) return next()
      const { session } = payload.agent
      const nowMs = session.clock()
      const now = zonedTime(nowMs, config.timeZone ?? systemZone())
      const last = notes.latest(session)
      const due =
        !last || last.zone !== now.zone || last.date !== now.date || nowMs - last.time >= config.refreshIntervalMs
      if (!due) return next()
      const message: InjectedContext = {
        content: renderNote(now, last ? nowMs - last.time : undefined),
        source: SOURCE,
      }
      const decision = await next()
      if (decision.action !== 'enter') return decision
      return { ...decision, messages: [message, ...decision.messages] }
    },
    { prepend: true },
  )
}
