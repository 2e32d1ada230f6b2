// ConversationModel: folds a session's log events (history pages and live stream frames) into
// view nodes. The log is the truth: a log event at or below `lastSeq` is a duplicate and is
// ignored, one past a hole is held back and reported as `gapFrom` (refetch, then continue), so
// reconnects and reloads never duplicate or skip. Streamed `assistant/chunk` deltas build
// provisional nodes keyed by their step; the committed `assistant/message` replaces them under
// the same keys. Mutation happens inside the model; every change yields a new snapshot object
// whose unchanged nodes keep their identity. The per-event folds are functions of a state record
// in fold.ts; this class adds the gap check, the stream's state frames and the listeners.
import type { SessionStatus, SessionStreamEvent, WireEvent } from '@dsh/web-protocol'
import type { ConversationSnapshot, PendingApproval, PendingQuestion, QueuedPrompt } from './types.ts'
import { createFoldState, emptyUsage, type FoldState, foldEvent, setQueuedOnHost, settleOpen } from './fold.ts'

export { parseArguments, PREVIEW_CHARS } from './fold.ts'

export interface ConversationModelOptions {
  /**
   * Defers listener calls: `schedule(run)` is called once when the first change after a
   * notification happens, and `run()` then notifies the listeners once for every change since
   * (the session store passes one animation frame). Default: listeners hear every change at once.
   */
  schedule?: (run: () => void) => void
}

export class ConversationModel {
  constructor(private readonly options: ConversationModelOptions = {}) {}

  /** Listeners hear changes through `schedule` (coalesced), not at once. */
  get deferred(): boolean {
    return this.options.schedule !== undefined
  }

  /** What the log folds into (fold.ts). */
  private readonly s: FoldState = createFoldState()
  private lastSeq = -1
  private gapFrom: number | undefined
  private status: SessionStatus = 'idle'
  private approvals: PendingApproval[] = []
  private questions: PendingQuestion[] = []
  private version = 0
  private snap: ConversationSnapshot | undefined
  private listeners = new Set<() => void>()
  private nextLocalId = 0

  /** Folds one log event (from `sessions.history` or a stream `message` frame). Returns whether it was applied. */
  applyEvent(event: WireEvent): boolean {
    if (event.seq <= this.lastSeq) return false
    if (event.seq > this.lastSeq + 1) {
      this.gapFrom ??= this.lastSeq + 1
      this.changed()
      return false
    }
    this.lastSeq = event.seq
    if (this.gapFrom !== undefined && this.gapFrom <= event.seq) this.gapFrom = undefined
    foldEvent(this.s, event)
    this.changed()
    return true
  }

  /** Folds a batch (a history page); listeners hear once. */
  applyEvents(events: readonly WireEvent[]): void {
    this.batch(() => {
      for (const event of events) this.applyEvent(event)
    })
  }

  /** Folds one session-stream frame: a log event or a state frame (status, approval, question). */
  applyFrame(frame: SessionStreamEvent): void {
    switch (frame.event) {
      case 'message':
        this.applyEvent(frame.data)
        return
      case 'status':
        this.status = frame.data.status
        setQueuedOnHost(this.s, frame.data.queued)
        break
      case 'approval':
        if (this.approvals.some((a) => a.requestId === frame.data.requestId)) return
        this.approvals = [...this.approvals, { requestId: frame.data.requestId, request: frame.data.request }]
        break
      case 'approval/resolved':
        this.approvals = this.approvals.filter((a) => a.requestId !== frame.data.requestId)
        break
      case 'question':
        if (this.questions.some((q) => q.requestId === frame.data.requestId)) return
        this.questions = [
          ...this.questions,
          {
            requestId: frame.data.requestId,
            questions: frame.data.questions,
            ...((frame.data as { time?: number }).time !== undefined
              ? { time: (frame.data as { time?: number }).time }
              : {}),
          },
        ]
        break
      case 'question/resolved':
        this.questions = this.questions.filter((q) => q.requestId !== frame.data.requestId)
        break
      default:
        return
    }
    this.changed()
  }

  /**
   * A (re)connected stream is about to re-send the pending approvals and questions: forget the
   * ones held, so a request answered while disconnected does not linger.
   */
  streamOpened(): void {
    if (this.approvals.length === 0 && this.questions.length === 0) return
    this.approvals = []
    this.questions = []
    this.changed()
  }

  /**
   * Replaces the live state a session feed keeps (status, the host's queue count, pending
   * approvals and questions) in one change. Unchanged parts keep their identity.
   */
  syncLive(live: {
    status?: SessionStatus
    queued?: number
    approvals?: readonly PendingApproval[]
    questions?: readonly PendingQuestion[]
  }): void {
    let changed = false
    if (live.status !== undefined && live.status !== this.status) {
      this.status = live.status
      changed = true
    }
    if (live.queued !== undefined && (live.queued !== this.s.queuedOnHost || this.s.queued.length > live.queued)) {
      setQueuedOnHost(this.s, live.queued)
      changed = true
    }
    const sameIds = (a: readonly { requestId: string }[], b: readonly { requestId: string }[]) =>
      a.length === b.length && a.every((x, i) => x.requestId === b[i].requestId)
    if (live.approvals && !sameIds(live.approvals, this.approvals)) {
      this.approvals = live.approvals.map((a) => ({ requestId: a.requestId, request: a.request }))
      changed = true
    }
    if (live.questions && !sameIds(live.questions, this.questions)) {
      this.questions = live.questions.map((q) => ({
        requestId: q.requestId,
        questions: q.questions,
        ...(q.time !== undefined ? { time: q.time } : {}),
      }))
      changed = true
    }
    if (changed) this.changed()
  }

  /**
   * Records a prompt this view sent that the host queued (or handed to the running turn).
   * `sentAfterSeq` is the last seq the view held when it sent: if the log already shows the
   * prompt claimed after it (the answer raced ahead of the reply), nothing is recorded.
   */
  addQueued(text: string, mode: 'queue' | 'steer' = 'queue', sentAfterSeq?: number): QueuedPrompt | undefined {
    settleOpen(this.s)
    if (
      sentAfterSeq !== undefined &&
      this.s.nodes.some((n) => n.kind === 'user' && n.seq > sentAfterSeq && n.text === text)
    )
      return undefined
    const prompt = { id: `q${this.nextLocalId++}`, text, mode }
    this.s.queued = [...this.s.queued, prompt]
    this.changed()
    return prompt
  }

  /** Drops a queued prompt from the view (the host's queue is cancelled with the turn). */
  removeQueued(id: string): void {
    const next = this.s.queued.filter((q) => q.id !== id)
    if (next.length === this.s.queued.length) return
    this.s.queued = next
    this.changed()
  }

  /** Clears the log-derived view (before refolding a session from seq 0). Queues and takeovers stay. */
  reset(): void {
    this.s.open = undefined
    this.s.nodes = []
    this.s.index.clear()
    this.lastSeq = -1
    this.gapFrom = undefined
    this.s.turnRunning = false
    this.s.turn = -1
    this.s.live = undefined
    this.s.todos = undefined
    this.s.title = undefined
    this.s.model = undefined
    this.s.usage = emptyUsage()
    this.s.usageView = undefined
    this.s.lastInputTokens = undefined
    this.changed()
  }

  snapshot(): ConversationSnapshot {
    if (this.snap && this.snap.version === this.version) return this.snap
    settleOpen(this.s)
    this.snap = {
      version: this.version,
      nodes: this.s.nodes.slice(),
      lastSeq: this.lastSeq,
      ...(this.gapFrom !== undefined ? { gapFrom: this.gapFrom } : {}),
      status: this.s.turnRunning && this.status === 'idle' ? 'running' : this.status,
      turnRunning: this.s.turnRunning,
      queued: this.s.queued,
      queuedOnHost: this.s.queuedOnHost,
      approvals: this.approvals,
      questions: this.questions,
      ...(this.s.todos ? { todos: this.s.todos } : {}),
      ...(this.s.title !== undefined ? { title: this.s.title } : {}),
      ...(this.s.model ? { model: this.s.model } : {}),
      usage: (this.s.usageView ??= { ...this.s.usage }),
      ...(this.s.lastInputTokens !== undefined ? { lastInputTokens: this.s.lastInputTokens } : {}),
    }
    return this.snap
  }

  /** `listener` runs after each change (once per batch). Returns the unsubscriber. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private batching = 0
  private pendingNotify = false
  private scheduled = false

  batch(fn: () => void): void {
    this.batching++
    try {
      fn()
    } finally {
      this.batching--
      if (this.batching === 0 && this.pendingNotify) {
        this.pendingNotify = false
        this.notify()
      }
    }
  }

  /** Notifies now if a deferred notification is pending (see `schedule`). */
  flush(): void {
    if (!this.scheduled) return
    this.scheduled = false
    for (const listener of [...this.listeners]) listener()
  }

  private changed(): void {
    this.version++
    if (this.batching > 0) {
      this.pendingNotify = true
      return
    }
    this.notify()
  }

  private notify(): void {
    const schedule = this.options.schedule
    if (!schedule) {
      for (const listener of [...this.listeners]) listener()
      return
    }
    if (this.scheduled) return
    this.scheduled = true
    schedule(() => this.flush())
  }
}

/** Folds frames (or bare log events) into a fresh model's snapshot. */
export function foldConversation(items: ReadonlyArray<SessionStreamEvent | WireEvent>): ConversationSnapshot {
  const model = new ConversationModel()
  model.batch(() => {
    for (const item of items) {
      if ('event' in item) model.applyFrame(item)
      else model.applyEvent(item)
    }
  })
  return model.snapshot()
}
