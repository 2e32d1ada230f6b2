import { randomUUID } from 'node:crypto'
import type { Message } from '@dsh/llm'
import { JsonValueError, freezeJson } from './json.ts'
import { PluginError, combinePluginErrors } from './plugin-error.ts'
import { RELEASE_BLOCK_EVENTS, isReleasedEvent, releaseEvents } from './released.ts'
import { DEFAULT_MAX_TOOL_ARGUMENT_CHARS, SessionSurface, checkReplace } from './surface.ts'
import type { AnySessionEvent, SessionEvent, SessionEventMap, SessionEventType, SessionId } from './types.ts'
import { asSessionId } from './types.ts'

/** Where a forked session came from. */
export interface SessionParent {
  sessionId: SessionId
  /** Events with `seq < boundary` were copied from the parent. */
  boundary: number
}

export interface SessionOptions {
  /** Defaults to a fresh `crypto.randomUUID()`. */
  id?: SessionId | string
  cwd: string
  parent?: SessionParent
  /** Epoch-milliseconds clock for `time`; defaults to `Date.now`. Inject for deterministic tests. */
  clock?: () => number
  /**
   * Restore a log (e.g. loaded from persistence): events with contiguous seq from 0, validated
   * like appends (no listeners are called for them).
   */
  events?: readonly SessionEvent[]
  /**
   * Longest tool-call `arguments` string replayed to the model as-is; a longer one is projected
   * as a bounded excerpt plus a marker (the log keeps the full value). Default 100,000 chars.
   */
  maxToolArgumentChars?: number
  /**
   * What the in-memory log keeps of streamed `assistant/chunk` events once their step has folded
   * them (the next `assistant/message`, `step/end` or `turn/end` after them). `keep` (default):
   * every chunk whole. `release`: each becomes a placeholder with the same `type`, `seq` and
   * `time` and the shared payload `RELEASED_CHUNK` (`{chunk: {kind: 'released'}}`), so a long
   * session does not hold every delta for its lifetime. Listeners always receive the whole event
   * when it is appended (persistence stores it whole); an open step's chunks are never released.
   */
  streamChunks?: 'keep' | 'release'
  /**
   * What the in-memory log keeps of events that lie behind a `surface/replace` (before its
   * `toSeq`) and produce no live surface node: after a compaction the model never sees them
   * again. `release` (default): each becomes a frozen placeholder with the same `type`, `seq`,
   * `time` and an enumerable `data` getter that decodes the payload from a compressed block on
   * read, so every reader of `events` still sees the whole log while memory holds a fraction of
   * it. `keep`: every event whole. The latest event of each type, an open step's chunks and
   * events whose node is still on the surface always stay whole.
   */
  compactedEvents?: 'keep' | 'release'
}

/**
 * Payload of an `assistant/chunk` event released from the in-memory log (`streamChunks:
 * 'release'`). The stored log holds the chunk whole; reload it from persistence for raw fidelity.
 */
export const RELEASED_CHUNK: SessionEventMap['assistant/chunk'] = Object.freeze({
  chunk: Object.freeze({ kind: 'released' }),
}) as unknown as SessionEventMap['assistant/chunk']

/** Whether an event is an `assistant/chunk` placeholder left by `streamChunks: 'release'`. */
export const isReleasedChunk = (event: AnySessionEvent): boolean =>
  event.type === 'assistant/chunk' && event.data === RELEASED_CHUNK

/** A stored placeholder (a fork of a releasing session persists them): `{chunk: {kind: 'released'}}`. */
function isReleasedPayload(type: string, data: unknown): boolean {
  if (type !== 'assistant/chunk' || !data || typeof data !== 'object') return false
  const keys = Object.keys(data)
  const chunk = (data as { chunk?: unknown }).chunk
  return (
    keys.length === 1 &&
    keys[0] === 'chunk' &&
    !!chunk &&
    typeof chunk === 'object' &&
    Object.keys(chunk).length === 1 &&
    (chunk as { kind?: unknown }).kind === 'released'
  )
}

export type SessionListener = (event: AnySessionEvent) => void

export interface SubscribeOptions {
  /** Who listens (a plugin name): a throwing listener is reported as a `PluginError` naming it. */
  owner?: string
}

/** An append was refused: the payload is not lossless JSON, or the event is invalid here. */
export class SessionAppendError extends TypeError {
  override name = 'SessionAppendError'
  constructor(
    readonly eventType: string,
    /** JSON path of the offending value, rooted at `data` (e.g. `data.message.content[0].text`). */
    readonly path: string,
    readonly reason: string,
  ) {
    super(`cannot append "${eventType}": ${path} ${reason}`)
  }
}

export const newSessionId = (): SessionId => asSessionId(randomUUID())

/** Events minted by some Session: already validated and frozen, so other sessions may share them. */
const minted = new WeakSet<object>()

/**
 * One append-only event log. `seq` is contiguous from 0; every payload is validated as lossless
 * JSON and deep-frozen at append, so the log cannot be changed afterwards by anyone.
 */
export class Session {
  readonly id: SessionId
  readonly cwd: string
  readonly parent?: SessionParent
  readonly clock: () => number
  /** The message-producing projection of the log; see `SessionSurface`. */
  readonly surface: SessionSurface

  private readonly log: AnySessionEvent[] = []
  private readonly lastOfType = new Map<string, AnySessionEvent>()
  private readonly listeners = new Map<SessionListener, string | undefined>()
  private readonly pending: AnySessionEvent[] = []
  private dispatching = false
  /** `streamChunks: 'release'`: seqs of the chunks not yet folded by their step (else undefined). */
  private readonly unfolded: number[] | undefined
  /** `compactedEvents: 'release'`: events with `seq < frontier` were considered for release. */
  private frontier = 0
  private readonly releasing: boolean
  private releasedCount = 0
  private releasedBytes = 0

  constructor(options: SessionOptions) {
    if (typeof options.cwd !== 'string' || options.cwd === '')
      throw new TypeError('Session: cwd must be a non-empty string')
    if (options.id !== undefined && (typeof options.id !== 'string' || options.id === ''))
      throw new TypeError('Session: id must be a non-empty string')
    this.id = asSessionId(options.id ?? randomUUID())
    this.cwd = options.cwd
    if (options.parent)
      this.parent = Object.freeze({ sessionId: options.parent.sessionId, boundary: options.parent.boundary })
    this.clock = options.clock ?? Date.now
    const cap = options.maxToolArgumentChars ?? DEFAULT_MAX_TOOL_ARGUMENT_CHARS
    if (!Number.isSafeInteger(cap) || cap < 0)
      throw new TypeError('Session: maxToolArgumentChars must be a non-negative integer')
    this.surface = new SessionSurface((data) => this.append('surface/replace', data), cap)
    const chunks = options.streamChunks ?? 'keep'
    if (chunks !== 'keep' && chunks !== 'release')
      throw new TypeError(`Session: streamChunks must be 'keep' or 'release', not ${JSON.stringify(chunks)}`)
    if (chunks === 'release') this.unfolded = []
    const compacted = options.compactedEvents ?? 'release'
    if (compacted !== 'keep' && compacted !== 'release')
      throw new TypeError(`Session: compactedEvents must be 'keep' or 'release', not ${JSON.stringify(compacted)}`)
    this.releasing = compacted === 'release'
    if (options.events) for (const event of options.events) this.restoreOne(event)
  }

  /** The live log (read-only view: do not cast it to mutate). Events are frozen. */
  get events(): readonly AnySessionEvent[] {
    return this.log
  }

  get length(): number {
    return this.log.length
  }

  /**
   * What `compactedEvents: 'release'` has done so far: how many events hold their payload in a
   * compressed block, and the blocks' size in bytes.
   */
  get released(): { events: number; bytes: number } {
    return { events: this.releasedCount, bytes: this.releasedBytes }
  }

  /**
   * Appends one event and returns it (frozen). `data` is copied: later mutation of the caller's
   * object does not reach the log. Throws `SessionAppendError` (nothing appended) when `data` is
   * not lossless JSON. Listeners run synchronously after the event is in the log; an event
   * appended from inside a listener is delivered after the current one has reached every listener.
   * When listeners throw, every listener still runs and `append` then throws one `PluginError`
   * (`code: 'PLUGIN_ERROR'`, naming the owner) although the event is logged.
   */
  append<K extends SessionEventType>(type: K, data: SessionEventMap[K]): SessionEvent<K> {
    if (typeof type !== 'string' || (type as string) === '')
      throw new SessionAppendError(String(type), 'type', 'must be a non-empty string')
    const frozen = this.validate(type, data)
    if (type === 'surface/replace') {
      const problem = checkReplace(
        this.surface.nodes,
        frozen as unknown as SessionEventMap['surface/replace'],
        this.log.length,
      )
      if (problem) throw new SessionAppendError(type, problem.path, problem.reason)
    }
    const event = Object.freeze({ type, seq: this.log.length, time: this.clock(), data: frozen }) as SessionEvent<K>
    this.commit(event as unknown as AnySessionEvent)
    this.notify(event as unknown as AnySessionEvent)
    return event
  }

  at(seq: number): AnySessionEvent | undefined {
    return Number.isInteger(seq) && seq >= 0 ? this.log[seq] : undefined
  }

  /** Events with `fromSeq <= seq < toSeq` (a copy of that part of the log). */
  slice(fromSeq = 0, toSeq?: number): AnySessionEvent[] {
    return this.log.slice(fromSeq, toSeq)
  }

  /** The most recent event, or the most recent one of `type`. O(1). */
  last<K extends SessionEventType>(type: K): SessionEvent<K> | undefined
  last(): AnySessionEvent | undefined
  last(type?: SessionEventType): AnySessionEvent | undefined {
    if (type === undefined) return this.log[this.log.length - 1]
    return this.lastOfType.get(type)
  }

  /** Synchronous, in seq order. Returns the unsubscribe function. */
  subscribe(listener: SessionListener, options: SubscribeOptions = {}): () => void {
    this.listeners.set(listener, options.owner)
    return () => {
      this.listeners.delete(listener)
    }
  }

  /**
   * The LLM message history derived from the surface. Incremental: each call costs O(events
   * appended since the previous call) plus a flat copy of the message array when it changed.
   * The returned array and its messages are frozen.
   */
  deriveMessages(): Message[] {
    return this.surface.messages()
  }

  /** Whether no turn is open before `boundary` (a valid fork point). */
  isTurnBoundary(boundary: number): boolean {
    if (!Number.isInteger(boundary) || boundary < 0 || boundary > this.log.length) return false
    for (let seq = boundary - 1; seq >= 0; seq--) {
      const type = this.log[seq].type
      if (type === 'turn/end') return true
      if (type === 'turn/start') return false
    }
    return true
  }

  private validate(type: string, data: unknown) {
    try {
      return freezeJson(data, 'data')
    } catch (error) {
      if (error instanceof JsonValueError) throw new SessionAppendError(type, error.path, error.reason)
      throw error
    }
  }

  private restoreOne(event: SessionEvent): void {
    const seq = this.log.length
    if (!minted.has(event)) {
      if (!event || typeof event !== 'object') throw new SessionAppendError('?', `events[${seq}]`, 'is not an event')
      const { type, time } = event
      if (typeof type !== 'string' || (type as string) === '')
        throw new SessionAppendError(String(type), `events[${seq}].type`, 'must be a non-empty string')
      if (event.seq !== seq)
        throw new SessionAppendError(
          type,
          `events[${seq}].seq`,
          `is ${String(event.seq)}, expected ${seq} (seq must be contiguous from 0)`,
        )
      if (typeof time !== 'number' || !Number.isFinite(time))
        throw new SessionAppendError(type, `events[${seq}].time`, 'must be a finite number')
      const data = isReleasedPayload(type, event.data) ? RELEASED_CHUNK : this.validate(type, event.data)
      event = Object.freeze({ type, seq, time, data }) as SessionEvent
    } else if (event.seq !== seq) {
      throw new SessionAppendError(
        event.type,
        `events[${seq}].seq`,
        `is ${event.seq}, expected ${seq} (seq must be contiguous from 0)`,
      )
    }
    const any = event as AnySessionEvent
    if (any.type === 'surface/replace') {
      const problem = checkReplace(this.surface.nodes, any.data, seq)
      if (problem) throw new SessionAppendError(any.type, `events[${seq}].${problem.path}`, problem.reason)
    }
    this.commit(any)
  }

  private commit(event: AnySessionEvent): void {
    if (event.data !== RELEASED_CHUNK) minted.add(event)
    this.log.push(event)
    this.lastOfType.set(event.type, event)
    this.surface.ingest(event)
    if (this.unfolded) this.fold(event)
    if (this.releasing && event.type === 'surface/replace') this.releaseBehind(event.data.toSeq)
  }

  /**
   * `compactedEvents: 'release'`: swaps the events before `toSeq` (not yet considered) for
   * placeholders whose payload lives in a compressed block, in whole blocks of
   * `RELEASE_BLOCK_EVENTS` (the remainder waits for a later replacement), except those still
   * needed whole: a
   * live surface node's event (the surface shares its message), the latest event of each type
   * (`last()` returns it), an open step's chunks, and chunks already released to `RELEASED_CHUNK`.
   * Listeners received every one of them whole when it was appended, and the pending queue holds
   * its own references, so persistence and faces are unaffected.
   */
  private releaseBehind(toSeq: number): void {
    const from = this.frontier
    if (toSeq <= from) return
    const keep = new Set<number>()
    for (const node of this.surface.nodes) if (node.seq >= from && node.seq < toSeq) keep.add(node.seq)
    for (const event of this.lastOfType.values()) keep.add(event.seq)
    if (this.unfolded) for (const seq of this.unfolded) keep.add(seq)
    const picked: AnySessionEvent[] = []
    for (let seq = from; seq < toSeq; seq++) {
      const event = this.log[seq]
      if (keep.has(seq) || isReleasedEvent(event) || event.data === RELEASED_CHUNK) continue
      picked.push(event)
    }
    // Whole blocks only; the rest waits for a later replacement (the frontier stops before it).
    const whole = picked.length - (picked.length % RELEASE_BLOCK_EVENTS)
    if (whole === 0) return
    this.frontier = whole === picked.length ? toSeq : picked[whole].seq
    picked.length = whole
    const { placeholders, bytes } = releaseEvents(picked, (type, data) =>
      isReleasedPayload(type, data) ? RELEASED_CHUNK : data,
    )
    for (const placeholder of placeholders) {
      // Minted: a fork shares placeholders (and their blocks) instead of decoding and re-validating.
      minted.add(placeholder)
      this.log[placeholder.seq] = placeholder
    }
    this.releasedCount += placeholders.length
    this.releasedBytes += bytes
  }

  /**
   * `streamChunks: 'release'`: once the event that folds a step's stream is in the log, that
   * step's chunks are swapped for placeholders. Runs before listeners see `event`, but each chunk
   * reached every listener when it was appended (the pending queue holds its own reference).
   */
  private fold(event: AnySessionEvent): void {
    const unfolded = this.unfolded!
    if (event.type === 'assistant/chunk') {
      if (event.data !== RELEASED_CHUNK) unfolded.push(event.seq)
      return
    }
    if (unfolded.length === 0) return
    if (event.type !== 'assistant/message' && event.type !== 'step/end' && event.type !== 'turn/end') return
    let last: AnySessionEvent | undefined
    for (const seq of unfolded) {
      const { type, time } = this.log[seq]
      // Not added to `minted`: a chunk-heavy log would hold one WeakSet entry per placeholder; a
      // fork re-checks a placeholder cheaply (restoreOne maps it back to RELEASED_CHUNK).
      last = Object.freeze({ type, seq, time, data: RELEASED_CHUNK }) as AnySessionEvent
      this.log[seq] = last
    }
    unfolded.length = 0
    if (last && this.lastOfType.get('assistant/chunk')?.seq === last.seq) this.lastOfType.set('assistant/chunk', last)
  }

  private notify(event: AnySessionEvent): void {
    this.pending.push(event)
    if (this.dispatching) return
    this.dispatching = true
    const errors: PluginError[] = []
    try {
      while (this.pending.length > 0) {
        const next = this.pending.shift()!
        for (const [listener, owner] of [...this.listeners]) {
          try {
            listener(next)
          } catch (error) {
            errors.push(
              error instanceof PluginError
                ? error
                : new PluginError(owner ?? 'a session listener', `session listener on "${next.type}"`, error),
            )
          }
        }
      }
    } finally {
      this.dispatching = false
    }
    const combined = combinePluginErrors(errors)
    if (combined) throw combined
  }
}
