// One ConversationModel per session, fed by the runtime's session feed: the log events fold in
// as they arrive (onEvent, synchronously, once each), a feed reset refolds from seq 0, and the
// feed's live state (status, queue count, pending requests) is synced on each published change.
// The chat view and the composer of a session share its model, so a prompt the composer queued
// shows in the chat. The most recently used sessions keep their model (and feed hold).
import type { Connection, SessionFeed } from '@dsh/client-runtime'
import { ConversationModel } from '../model/index.ts'

interface Entry {
  model: ConversationModel
  feed: SessionFeed
  off: Array<() => void>
}

export class ConversationStore {
  private readonly entries = new Map<string, Entry>()
  /** Unsent composer text per session (kept while a takeover replaces the composer). */
  readonly drafts = new Map<string, string>()

  constructor(private readonly connection: Pick<Connection, 'session'>, private readonly keep = 8) {}

  /** The model of `sessionId`, created (and bound to its feed) on first use. */
  model(sessionId: string): ConversationModel {
    const found = this.entries.get(sessionId)
    if (found) {
      // Most recently used last.
      this.entries.delete(sessionId)
      this.entries.set(sessionId, found)
      return found.model
    }
    const model = new ConversationModel()
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
      off: [
        feed.onEvent((event) => model.applyEvent(event)),
        feed.onReset(() => model.reset()),
        feed.subscribe(catchUp),
      ],
    }
    this.entries.set(sessionId, entry)
    while (this.entries.size > this.keep) {
      const oldest = this.entries.keys().next().value as string
      this.drop(oldest)
    }
    return model
  }

  /** Releases every feed hold (the plugin unloads). */
  dispose(): void {
    for (const id of [...this.entries.keys()]) this.drop(id)
  }

  private drop(sessionId: string): void {
    const entry = this.entries.get(sessionId)
    if (!entry) return
    this.entries.delete(sessionId)
    for (const off of entry.off) off()
    entry.feed.release()
  }
}
