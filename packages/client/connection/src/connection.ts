// `ctx.connection`: the live link to the host. One host stream (`/api/events/host`) decides the
// online state and fans host events out; `session(id)` gives a session's whole log plus live
// events over `/api/events/session/<id>`, resuming after the last seq it holds on every reconnect
// (no gap, no duplicate), with exponential backoff while the host is unreachable.
import { type Context, Service } from 'cordis'
import {
  CHUNK_EVENT_TYPE,
  CHUNK_RUNS_PARAM,
  expandChunkRun,
  HOST_STREAM_PATH,
  sessionStreamPath,
  type HostStreamEvent,
  type SessionStatus,
  type WireApprovalRequest,
  type WireEvent,
  type WireQuestion,
} from '@dsh/web-protocol'
import { frameBatcher, Store, type ReadableStore } from './store.ts'
import { readSse, StreamError } from './sse.ts'
import type { Remote } from './remote.ts'

export type OnlineState = 'connecting' | 'online' | 'offline'

export interface ConnectionConfig {
  /** First retry delay (ms); doubles per failure up to `maxRetryMs`. */
  retryMs?: number
  maxRetryMs?: number
  /** A session feed nobody holds is closed after this long (ms). */
  lingerMs?: number
}

export interface PendingApproval {
  requestId: string
  sessionId: string
  request: WireApprovalRequest
}
export interface PendingQuestion {
  requestId: string
  sessionId: string
  questions: WireQuestion[]
}

/** What a session view renders from. `events` is the log from seq 0, appended in place: treat it as read-only and key memos on `version`. */
export interface SessionFeedState {
  sessionId: string
  events: readonly WireEvent[]
  /**
   * `events` without the streamed deltas (`assistant/chunk`), in seq order, appended in place.
   * A reader that derives nothing from deltas scans this: a few hundred events where `events`
   * may hold 100,000 after one long answer. Events keep their `seq` (it is not an index here).
   */
  withoutDeltas: readonly WireEvent[]
  /** Seq of the last event held; -1 before any. */
  lastSeq: number
  status?: SessionStatus
  queued: number
  approvals: readonly PendingApproval[]
  questions: readonly PendingQuestion[]
  /** The stream is open now. */
  live: boolean
  /** The first replay has been received (the host sent its `status` after it). */
  loaded: boolean
  /** A permanent failure (the session does not exist); the feed stops retrying. */
  error?: { code: string; message: string }
  /** Bumped on every published change. A run of streamed deltas (`assistant/chunk`) alone is published at most every DELTA_PUBLISH_MS; any other event, status or request within a frame. */
  version: number
}

declare module 'cordis' {
  interface Context {
    connection: Connection
  }
}

type Inject = Pick<Context, never> & { remote: Remote }

export class Connection extends Service {
  static inject = ['remote']
  /** `connecting` until the host stream first answers, then `online` / `offline`. */
  readonly state: Store<OnlineState> = new Store<OnlineState>('connecting')
  private readonly hostListeners = new Set<(event: HostStreamEvent) => void>()
  private readonly feeds = new Map<string, SessionFeed>()
  private readonly retryMs: number
  private readonly maxRetryMs: number
  readonly lingerMs: number
  private hostAbort?: AbortController
  private wake?: () => void
  private stopped = false

  constructor(ctx: Context, config: ConnectionConfig = {}) {
    super(ctx, 'connection')
    this.retryMs = config.retryMs ?? 250
    this.maxRetryMs = config.maxRetryMs ?? 5000
    this.lingerMs = config.lingerMs ?? 30_000
  }

  protected get remote(): Remote {
    return (this.ctx as unknown as Inject).remote
  }

  async [Service.init](): Promise<void> {
    // Stopped with the plugin that provides the service.
    this.ctx.effect(() => {
      this.stopped = false
      const offFailure = this.remote.onFailure(() => this.markOffline())
      const onOnline = () => this.kick()
      globalThis.addEventListener?.('online', onOnline)
      void this.hostLoop()
      return () => {
        this.stopped = true
        offFailure()
        globalThis.removeEventListener?.('online', onOnline)
        this.hostAbort?.abort()
        this.wake?.()
        for (const feed of this.feeds.values()) feed.close()
        this.feeds.clear()
      }
    }, 'connection: host stream')
  }

  /** Whether the host answered last time we looked. */
  get online(): boolean {
    return this.state.get() !== 'offline'
  }

  /** Host stream events (`session/added`, `session/changed`, `workspace/changed`, ...), plus `{type: 'connection/reset'}` after every reconnect (refetch what you cache). An effect of the caller. */
  onHost(listener: (event: HostStreamEvent) => void): () => void {
    const dispose = this.ctx.effect(() => {
      this.hostListeners.add(listener)
      return () => void this.hostListeners.delete(listener)
    }, 'connection: host listener')
    return () => void dispose()
  }

  /**
   * A session's feed: the whole log and live events. Every call takes a hold; `release()` on the
   * feed gives it back, and a feed nobody holds closes after `lingerMs`.
   */
  session(sessionId: string): SessionFeed {
    if (typeof sessionId !== 'string' || !sessionId)
      throw new TypeError('connection.session: sessionId must be a non-empty string')
    let feed = this.feeds.get(sessionId)
    if (!feed || feed.closed) {
      feed = new SessionFeed(sessionId, this, () => this.feeds.delete(sessionId))
      this.feeds.set(sessionId, feed)
    }
    feed.hold()
    return feed
  }

  /** The feed of a session if one is open now (no hold taken): lets a view show what is held at once. */
  peek(sessionId: string): SessionFeed | undefined {
    const feed = this.feeds.get(sessionId)
    return feed && !feed.closed ? feed : undefined
  }

  /** Retry now (after a failure seen elsewhere, or the browser going online). */
  kick(): void {
    this.wake?.()
    for (const feed of this.feeds.values()) feed.kick()
  }

  /** @internal */
  markOffline(): void {
    if (this.state.get() === 'offline') return
    this.state.set('offline')
    this.hostAbort?.abort()
  }

  /** @internal */
  markOnline(): void {
    this.state.set('online')
  }

  /** @internal backoff delay for the n-th consecutive failure */
  delay(failures: number): number {
    const base = Math.min(this.maxRetryMs, this.retryMs * 2 ** Math.max(0, failures - 1))
    return base / 2 + Math.random() * (base / 2)
  }

  /** @internal waits `ms` or until kicked / stopped */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        if (this.wake === done) this.wake = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.wake = done
    })
  }

  /** @internal */
  get isStopped(): boolean {
    return this.stopped
  }

  /** @internal */
  streamUrl(path: string): string {
    return this.remote.url(path)
  }

  private async hostLoop(): Promise<void> {
    let failures = 0
    let everOpened = false
    while (!this.stopped) {
      const abort = new AbortController()
      this.hostAbort = abort
      let opened = false
      try {
        await readSse(this.streamUrl(HOST_STREAM_PATH), {
          signal: abort.signal,
          onOpen: () => {
            opened = true
            failures = 0
            this.markOnline()
            if (everOpened) this.emitHost({ type: 'connection/reset' })
            everOpened = true
            for (const feed of this.feeds.values()) feed.kick()
          },
          onFrame: (frame) => {
            if (frame.event !== 'message') return
            try {
              const event = JSON.parse(frame.data) as HostStreamEvent
              if (event && typeof event.type === 'string' && event.type !== 'hello') this.emitHost(event)
            } catch {
              // a malformed frame is skipped
            }
          },
        })
      } catch {
        // network error or non-200: offline below
      }
      if (this.stopped) break
      // The stream ended (the host stopped, or the network failed): offline until it answers again.
      void opened
      this.state.set('offline')
      failures++
      await this.sleep(this.delay(failures))
    }
  }

  private emitHost(event: HostStreamEvent): void {
    for (const listener of [...this.hostListeners]) {
      try {
        listener(event)
      } catch (error) {
        console.warn('[dsh] host listener failed', error)
      }
    }
  }
}

/** Log events of this type (streamed model deltas) are published at most this often (ms); every other change within a frame. */
export const DELTA_PUBLISH_MS = 200
const DELTA_TYPE = CHUNK_EVENT_TYPE

/**
 * One string per distinct event type and chunk kind. `JSON.parse` makes a new string for every
 * value longer than a few characters, so each held delta kept its own copies of
 * 'assistant/chunk' and 'reasoning-delta': two of the six heap objects a delta costs for as long
 * as the feed holds the log (GC work grows with them while an answer streams). Bounded, so a host
 * sending odd types cannot grow it without end.
 */
const canonical = new Map<string, string>()
function intern(value: string): string {
  const known = canonical.get(value)
  if (known !== undefined) return known
  if (canonical.size < 512) canonical.set(value, value)
  return value
}

/** The id of the page's data block with the opened session's replay (written by `@dsh/frontend-static`). */
export const SESSION_DATA_ID = 'dsh-session'

/**
 * The frames the page carries for `sessionId` (its `dsh-session` data block), taken once: the
 * block is removed as it is read, so a feed opened later (after a close, or for another session)
 * streams as usual. Undefined when there is no such block, it names another session, or it is
 * malformed.
 */
export function takeSessionData(sessionId: string): Array<[string, unknown]> | undefined {
  const doc = (globalThis as { document?: Document }).document
  const element = doc?.getElementById?.(SESSION_DATA_ID)
  if (!element || element.getAttribute('type') !== 'application/json') return undefined
  let data: { version?: unknown; sessionId?: unknown; frames?: unknown }
  try {
    data = JSON.parse(element.textContent ?? '')
  } catch {
    element.remove()
    return undefined
  }
  if (data?.sessionId !== sessionId) return undefined
  element.remove()
  if (data.version !== 1 || !Array.isArray(data.frames)) return undefined
  const frames = data.frames.filter(
    (f): f is [string, unknown] =>
      Array.isArray(f) && typeof f[0] === 'string' && f[1] !== null && typeof f[1] === 'object',
  )
  return frames.length === data.frames.length ? frames : undefined
}

/** One session's log and live state; obtained from `ctx.connection.session(id)`. */
export class SessionFeed implements ReadableStore<SessionFeedState> {
  closed = false
  private holds = 0
  private lingerTimer?: ReturnType<typeof setTimeout>
  private readonly events: WireEvent[] = []
  private readonly withoutDeltas: WireEvent[] = []
  private readonly approvals = new Map<string, PendingApproval>()
  private readonly questions = new Map<string, PendingQuestion>()
  private snapshot: SessionFeedState
  private readonly listeners = new Set<() => void>()
  /** The state as of the last publish that carried more than streamed deltas (see `settled`). */
  private settledSnapshot: SessionFeedState
  /** Something other than a streamed delta changed since the last publish. */
  private settledDirty = false
  private readonly settledListeners = new Set<() => void>()
  /**
   * The feed as of its last change other than streamed deltas (`assistant/chunk` events): any
   * other event, status, queue, approval, question, connection or error change. It is the same
   * object `get()` returned at that publish, so its `version` and `lastSeq` are from then; its
   * `events` is the same array, appended in place. Readers that derive nothing from deltas (the
   * shell's slot props, pickers, panels) read this and do not re-render while an answer streams.
   */
  readonly settled: ReadableStore<SessionFeedState>
  private readonly eventListeners = new Set<(event: WireEvent) => void>()
  private readonly resetListeners = new Set<() => void>()
  private abort?: AbortController
  private wake?: () => void
  private readonly batch = frameBatcher(() => this.publish())
  /** A pending publish for streamed deltas only (see DELTA_PUBLISH_MS). */
  private deltaTimer?: ReturnType<typeof setTimeout>
  private partial: Omit<
    SessionFeedState,
    'events' | 'withoutDeltas' | 'approvals' | 'questions' | 'version' | 'sessionId' | 'lastSeq'
  > = { queued: 0, live: false, loaded: false }

  constructor(
    readonly sessionId: string,
    private readonly connection: Connection,
    private readonly onClose: () => void,
  ) {
    this.adopt()
    this.snapshot = this.build(0)
    this.settledSnapshot = this.snapshot
    this.settled = {
      get: () => this.settledSnapshot,
      subscribe: (listener) => {
        this.settledListeners.add(listener)
        return () => void this.settledListeners.delete(listener)
      },
    }
    void this.loop()
  }

  get = (): SessionFeedState => this.snapshot

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener)
    return () => void this.listeners.delete(listener)
  }

  /** Every log event, once and in seq order, synchronously as it arrives (for incremental folds). Events already held are not replayed: read `get().events` first. */
  onEvent(listener: (event: WireEvent) => void): () => void {
    this.eventListeners.add(listener)
    return () => void this.eventListeners.delete(listener)
  }

  /** The feed dropped its events and starts over from seq 0 (the host's log no longer matches). */
  onReset(listener: () => void): () => void {
    this.resetListeners.add(listener)
    return () => void this.resetListeners.delete(listener)
  }

  /** @internal */
  hold(): void {
    this.holds++
    if (this.lingerTimer) clearTimeout(this.lingerTimer)
    this.lingerTimer = undefined
  }

  /** Gives back one hold. */
  release(): void {
    if (this.holds <= 0) return
    this.holds--
    if (this.holds === 0 && !this.closed) {
      this.lingerTimer = setTimeout(() => this.close(), this.connection.lingerMs)
    }
  }

  /** Reconnect now if waiting. */
  kick(): void {
    this.wake?.()
  }

  /** Stops the stream for good. */
  close(): void {
    if (this.closed) return
    this.closed = true
    if (this.lingerTimer) clearTimeout(this.lingerTimer)
    this.abort?.abort()
    this.wake?.()
    this.batch.cancel()
    if (this.deltaTimer) clearTimeout(this.deltaTimer)
    this.deltaTimer = undefined
    this.onClose()
  }

  private get lastSeq(): number {
    return this.events.length - 1
  }

  private build(version: number): SessionFeedState {
    return {
      ...this.partial,
      sessionId: this.sessionId,
      events: this.events,
      withoutDeltas: this.withoutDeltas,
      lastSeq: this.lastSeq,
      approvals: [...this.approvals.values()],
      questions: [...this.questions.values()],
      version,
    }
  }

  private publish(): void {
    if (this.deltaTimer) clearTimeout(this.deltaTimer)
    this.deltaTimer = undefined
    this.snapshot = this.build(this.snapshot.version + 1)
    const settle = this.settledDirty
    if (settle) {
      this.settledDirty = false
      this.settledSnapshot = this.snapshot
    }
    for (const listener of [...this.listeners]) listener()
    if (settle) for (const listener of [...this.settledListeners]) listener()
  }

  /** Publishes within the frame, for the settled readers too (anything but a streamed delta). */
  private schedule(): void {
    this.settledDirty = true
    this.batch.schedule()
  }

  private publishSoon(): void {
    if (this.deltaTimer || this.closed) return
    this.deltaTimer = setTimeout(() => {
      this.deltaTimer = undefined
      this.batch.schedule()
    }, DELTA_PUBLISH_MS)
  }

  private change(patch: Partial<typeof this.partial>, now = false): void {
    Object.assign(this.partial, patch)
    this.schedule()
    if (now) this.batch.flush()
  }

  /**
   * Takes the replay the page carries for this session (see takeSessionData), so the first render
   * has the log without a round trip; the stream then resumes after its last seq (and starts over
   * through its resync path if the host's log no longer matches). All or nothing: a frame out of
   * order drops what was taken.
   */
  private adopt(): void {
    const frames = takeSessionData(this.sessionId)
    if (!frames) return
    const events: WireEvent[] = []
    const approvals: PendingApproval[] = []
    const questions: PendingQuestion[] = []
    let status: { status?: SessionStatus; queued?: number } | undefined
    for (const [name, data] of frames) {
      if (name === 'message') {
        const event = data as WireEvent
        if (event.seq !== events.length || typeof event.type !== 'string' || status) return
        event.type = intern(event.type)
        events.push(event)
      } else if (name === 'status') status = data as typeof status
      else if (name === 'approval') approvals.push(data as PendingApproval)
      else if (name === 'question') questions.push(data as PendingQuestion)
    }
    if (!status) return
    for (const event of events) this.take(event)
    for (const request of approvals) this.approvals.set(request.requestId, request)
    for (const request of questions) this.questions.set(request.requestId, request)
    Object.assign(this.partial, { status: status.status, queued: status.queued ?? 0, loaded: true })
  }

  /** Holds one log event (the next seq) and hands it to the event listeners. */
  private take(event: WireEvent): void {
    this.events.push(event)
    if (event.type !== DELTA_TYPE) this.withoutDeltas.push(event)
    // Per event on the hot path: iterate the set itself (deleting during iteration is safe).
    for (const listener of this.eventListeners) listener(event)
  }

  private async loop(): Promise<void> {
    let failures = 0
    let emptyResyncs = 0
    while (!this.closed && !this.connection.isStopped) {
      const abort = new AbortController()
      this.abort = abort
      let gotEvents = 0
      let resync = false
      const after = this.lastSeq
      // `chunks=runs`: the host sends runs of streamed deltas as one `chunks` frame each (a tenth
      // of the bytes and one frame per run), expanded here into the same log events.
      const url = this.connection.streamUrl(
        sessionStreamPath(this.sessionId) + `?${CHUNK_RUNS_PARAM}=runs` + (after >= 0 ? `&after=${after}` : ''),
      )
      try {
        await readSse(url, {
          signal: abort.signal,
          onOpen: () => {
            failures = 0
            this.connection.markOnline()
            this.approvals.clear()
            this.questions.clear()
            this.change({ live: true, error: undefined })
          },
          onFrame: (frame) => {
            let data: any
            try {
              data = JSON.parse(frame.data)
            } catch {
              return
            }
            switch (frame.event) {
              case 'message': {
                const event = data as WireEvent
                if (typeof event?.seq !== 'number') return
                if (event.seq <= this.lastSeq) return // duplicate
                if (event.seq !== this.lastSeq + 1) {
                  // A gap: reconnect from what we hold.
                  abort.abort()
                  return
                }
                if (typeof event.type === 'string') event.type = intern(event.type)
                if (event.type === DELTA_TYPE) {
                  const chunk = (event.data as { chunk?: { kind?: unknown } } | undefined)?.chunk
                  if (chunk && typeof chunk.kind === 'string') chunk.kind = intern(chunk.kind)
                }
                this.take(event)
                gotEvents++
                // A streamed delta changes nothing a feed reader derives promptly (views of the
                // text fold it through onEvent): publish it within DELTA_PUBLISH_MS instead of
                // every frame, so the readers of `events` do not re-render 60 times a second.
                if (event.type === DELTA_TYPE) this.publishSoon()
                else this.schedule()
                return
              }
              case 'chunks': {
                // A run of deltas: the log events seq..seq+n-1, each taken as a 'message' one.
                const events = expandChunkRun(data)
                if (!events) return
                const last = events[events.length - 1].seq
                if (last <= this.lastSeq) return // duplicate
                if (events[0].seq > this.lastSeq + 1) {
                  abort.abort()
                  return
                }
                const kind = intern((events[0].data as { chunk: { kind: string } }).chunk.kind)
                const skip = this.lastSeq + 1 - events[0].seq
                for (let i = skip; i < events.length; i++) {
                  const event = events[i]
                  ;(event.data as { chunk: { kind: string } }).chunk.kind = kind
                  this.take(event)
                }
                gotEvents += events.length - skip
                this.publishSoon()
                // Expanding and folding n events is about n lines' worth of reader work.
                return events.length - skip
              }
              case 'status':
                this.change({ status: data.status, queued: data.queued ?? 0, loaded: true })
                return
              case 'approval':
                this.approvals.set(data.requestId, data)
                this.schedule()
                return
              case 'approval/resolved':
                this.approvals.delete(data.requestId)
                this.schedule()
                return
              case 'question':
                this.questions.set(data.requestId, data)
                this.schedule()
                return
              case 'question/resolved':
                this.questions.delete(data.requestId)
                this.schedule()
                return
              case 'resync':
                resync = true
                return
            }
          },
        })
      } catch (error) {
        if (error instanceof StreamError && error.status === 404) {
          this.change({ live: false, error: { code: error.code, message: error.message }, loaded: true }, true)
          return
        }
      }
      if (this.closed) break
      this.change({ live: false })
      if (resync && gotEvents === 0) {
        emptyResyncs++
        if (emptyResyncs >= 2) {
          // The host will not resume after our seq: start over from its log.
          this.events.length = 0
          this.withoutDeltas.length = 0
          emptyResyncs = 0
          for (const listener of [...this.resetListeners]) listener()
          this.schedule()
          continue
        }
      } else emptyResyncs = 0
      if (resync || abort.signal.aborted) continue // resume at once
      failures++
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.connection.delay(failures))
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.wake = undefined
    }
  }
}
