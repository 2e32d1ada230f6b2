// The events of stored sessions that are not live, for `sessions.history`: with a backend that
// names its log file, the whole log is read once and kept with the file's identity, size and
// times; a later page is a slice of it as long as the file is unchanged (checked with one stat per
// call), and any write by this or another process makes it read again. Other backends read from
// `fromSeq` on every call. A few sessions are kept, least recent out.
import { stat } from 'node:fs/promises'
import type { AnySessionEvent } from '@dsh/session'
import type { Context } from 'cordis'
import type {} from '@dsh/session-persistence' // declares ctx.sessionPersistence

/** Stored sessions whose events `sessions.history` keeps in memory at once. */
const STORED_SESSIONS = 4

/** A persistence backend that can name a session's log file (the JSONL one can). */
interface LogLocator {
  logPath(sessionId: string): Promise<string | undefined>
}
const locatesLogs = (persistence: object): persistence is LogLocator =>
  typeof (persistence as Partial<LogLocator>).logPath === 'function'

export type SessionPersistence = NonNullable<Context['sessionPersistence']>

export class StoredHistory {
  private readonly stored = new Map<string, { key: string; events: readonly AnySessionEvent[] }>()

  /** Forgets a session's events (it is live now: pages come from the session itself). */
  forget(sessionId: string): void {
    this.stored.delete(sessionId)
  }

  /** The stored events of a session from `fromSeq` (`from` says where the returned array starts). */
  async events(
    persistence: SessionPersistence,
    sessionId: string,
    fromSeq: number,
  ): Promise<{ events: readonly AnySessionEvent[]; from: number }> {
    const path = locatesLogs(persistence) ? await persistence.logPath(sessionId).catch(() => undefined) : undefined
    const info = path ? await stat(path).catch(() => undefined) : undefined
    if (!info) {
      this.stored.delete(sessionId)
      return { events: await persistence.readFrom(sessionId, fromSeq), from: fromSeq }
    }
    // Taken before the read: a write landing during it leaves a key older than the events read,
    // which only costs a second read next time, never a stale page.
    const key = `${path}\0${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`
    const cached = this.stored.get(sessionId)
    if (cached?.key === key) {
      this.stored.delete(sessionId)
      this.stored.set(sessionId, cached)
      return { events: cached.events, from: 0 }
    }
    const events = await persistence.readFrom(sessionId, 0)
    this.stored.delete(sessionId)
    this.stored.set(sessionId, { key, events })
    while (this.stored.size > STORED_SESSIONS) this.stored.delete(this.stored.keys().next().value!)
    return { events, from: 0 }
  }
}
