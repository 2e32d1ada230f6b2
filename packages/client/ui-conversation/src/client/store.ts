// One ConversationModel per open session, fed by the runtime's session feed: the log events fold
// in as they arrive (onEvent, synchronously, once each), a feed reset refolds from seq 0, and the
// feed's live state (status, queue count, pending requests) is synced on each published change.
// The chat view, the composer and the panel of a session share its model, so a prompt the
// composer queued shows in the chat. Seats hold the session while mounted (`hold`); a session
// nobody holds is dropped shortly after, releasing its feed, so the page keeps streams open only
// for what it shows (browsers allow few connections per host).
import type { Connection, SessionFeed } from '@dsh/client-runtime'
import { ConversationModel } from '@dsh/conversation-model'

interface Entry {
  model: ConversationModel
  feed: SessionFeed
  off: Array<() => void>
  holds: number
  timer?: ReturnType<typeof setTimeout>
}

const nextFrame = (run: () => void): void => {
  if (typeof requestAnimationFrame === 'function') requestAnimationFrame(() => run())
  else setTimeout(run, 16)
}

export class ConversationStore {
  private readonly entries = new Map<string, Entry>()
  /** Unsent composer text per session (kept while a takeover replaces the composer). */
  readonly drafts = new Map<string, string>()

  constructor(
    private readonly connection: Pick<Connection, 'session'>,
    private readonly lingerMs = 3000,
  ) {}

  /** The model of `sessionId`, created (and bound to its feed) on first use. Hold it while shown. */
  model(sessionId: string): ConversationModel {
    const found = this.entries.get(sessionId)
    if (found) return found.model
    // Listeners (the seats) hear at most once per animation frame, however many deltas arrive.
    const model = new ConversationModel({ schedule: nextFrame })
    const feed = this.connection.session(sessionId)
    const catchUp = () => {
      const state = feed.get()
      model.batch(() => {
        if (state.lastSeq < model.snapshot().lastSeq) model.reset()
        for (let i = model.snapshot().lastSeq + 1; i < state.events.length; i++) model.applyEvent(state.events[i])
        model.syncLive(state)
      })
    }
    catchUp()
    const entry: Entry = {
      model,
      feed,
      holds: 0,
      off: [
        feed.onEvent((event) => model.applyEvent(event)),
        feed.onReset(() => model.reset()),
        feed.subscribe(catchUp),
      ],
    }
    this.entries.set(sessionId, entry)
    this.scheduleDrop(sessionId, entry)
    return model
  }

  /** Keeps `sessionId`'s model and feed while held; returns the release. */
  hold(sessionId: string): () => void {
    this.model(sessionId)
    const entry = this.entries.get(sessionId)!
    entry.holds++
    if (entry.timer) clearTimeout(entry.timer)
    entry.timer = undefined
    let released = false
    return () => {
      if (released) return
      released = true
      entry.holds--
      this.scheduleDrop(sessionId, entry)
    }
  }

  /** Sessions with a model now (for tests and diagnostics). */
  sessions(): string[] {
    return [...this.entries.keys()]
  }

  /** Releases every feed (the plugin unloads). */
  dispose(): void {
    for (const id of [...this.entries.keys()]) this.drop(id)
  }

  private scheduleDrop(sessionId: string, entry: Entry): void {
    if (entry.holds > 0 || entry.timer) return
    entry.timer = setTimeout(() => {
      entry.timer = undefined
      if (entry.holds === 0 && this.entries.get(sessionId) === entry) this.drop(sessionId)
    }, this.lingerMs)
  }

  private drop(sessionId: string): void {
    const entry = this.entries.get(sessionId)
    if (!entry) return
    this.entries.delete(sessionId)
    if (entry.timer) clearTimeout(entry.timer)
    for (const off of entry.off) off()
    entry.feed.release()
  }
}
