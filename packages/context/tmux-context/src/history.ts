// The latest injection of one plugin source, read from the durable session log. The index is
// derived from the log alone (it only remembers how far it has scanned), so a resumed session or
// a new process computes the same answer; compaction never removes raw events, so it does too.
import type { AnySessionEvent, Session, SessionEvent } from '@dsh/session'

export interface Injection {
  seq: number
  time: number
  text: string
}

interface Index {
  scanned: number
  latest?: Injection
}

export class InjectionIndex {
  private readonly bySession = new WeakMap<Session, Index>()

  constructor(private readonly plugin: string) {}

  latest(session: Session): Injection | undefined {
    let index = this.bySession.get(session)
    if (!index) this.bySession.set(session, (index = { scanned: 0 }))
    const events = session.events
    for (let seq = index.scanned; seq < events.length; seq++) {
      const found = this.match(events[seq])
      if (found) index.latest = found
    }
    index.scanned = events.length
    return index.latest
  }

  private match(event: AnySessionEvent): Injection | undefined {
    if (event.type !== 'user/message') return undefined
    const { data } = event as SessionEvent<'user/message'>
    if (data.source.kind !== 'plugin' || data.source.plugin !== this.plugin) return undefined
    const text = data.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    return { seq: event.seq, time: event.time, text }
  }
}
