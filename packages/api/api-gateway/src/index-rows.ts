// The session index behind `sessions.list`: one row per session the host knows, kept in memory.
// Built from the stored summaries (once at the first list, then again in the background when
// older than `rescanMs`, or on demand), and kept current by the events of the sessions this host
// runs, so a list call reads no file and scans no log.
import type { AnySessionEvent } from '@dsh/session'
import { foldSessionRow, type SessionRow, sessionRowOf } from '@dsh/surface-kit'
import type { SessionSummary } from '@dsh/session-persistence'

/** A row of the index: the list row every face folds from a session's events (@dsh/surface-kit). */
export type IndexRow = SessionRow

export class SessionIndex {
  private readonly rows = new Map<string, IndexRow>()
  private builtAt = 0
  private building: Promise<void> | undefined
  /** Calls of the loader so far (tests read it). */
  scans = 0

  constructor(
    private readonly load: () => Promise<SessionSummary[]>,
    private readonly rescanMs: number,
  ) {}

  /** The rows, after the first build; a stale index is answered as is and rebuilt in the background. */
  async current(refresh = false): Promise<IterableIterator<IndexRow>> {
    if (!this.builtAt || refresh) await this.rebuild()
    else if (Date.now() - this.builtAt > this.rescanMs) void this.rebuild().catch(() => {})
    return this.rows.values()
  }

  /** Re-reads the stored summaries (one read at a time; callers share a running one). */
  rebuild(): Promise<void> {
    this.building ??= (async () => {
      try {
        this.scans++
        const summaries = await this.load()
        for (const s of summaries) {
          const known = this.rows.get(s.id)
          // A row this host keeps current from events is at least as new as the file.
          if (known && known.events > s.events) continue
          this.rows.set(s.id, {
            id: s.id,
            cwd: s.cwd,
            createdAt: s.createdAt,
            updatedAt: s.updatedAt,
            turns: s.turns,
            events: s.events,
            ...(s.title !== undefined ? { title: s.title } : {}),
            ...(s.firstPrompt !== undefined ? { firstPrompt: s.firstPrompt } : {}),
          })
        }
        this.builtAt = Date.now()
      } finally {
        this.building = undefined
      }
    })()
    return this.building
  }

  get(id: string): IndexRow | undefined {
    return this.rows.get(id)
  }

  /** A row built from a whole log (a session this host adopts). */
  track(id: string, cwd: string, events: readonly AnySessionEvent[]): IndexRow {
    const row = sessionRowOf(id, cwd, events)
    this.rows.set(id, row)
    return row
  }

  /** Folds one appended event into a row. */
  apply(row: IndexRow, event: AnySessionEvent): void {
    foldSessionRow(row, event)
  }

  delete(id: string): void {
    this.rows.delete(id)
  }
}
