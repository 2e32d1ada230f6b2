// The `ctx.sessionPersistence` Service Definition. The public contract (create, append, flush,
// load, inspect, list, latest, readFrom, close) is implemented here once; a backend supplies the
// storage primitives (`backendCreate`, `backendOpen`, `backendRead`, `backendWrite`, ...).
import { type Context, Service } from 'cordis'
import type { AnySessionEvent, SessionEvent, SessionId } from '@dsh/session'
import { asSessionId } from '@dsh/session'
import { BatchWriter } from './batch.ts'
import { unshadow } from './raw.ts'
import { describeRepairs, planRepair } from './repair.ts'
import { sortSummaries } from './summary.ts'
import {
  HEADER_VERSION,
  SessionPersistenceError,
  parseSessionId,
  type LoadedSession,
  type SessionHeader,
  type SessionHeaderInput,
  type ListOptions,
  type SessionSummary,
  type StoredRecord,
  type TornTail,
} from './types.ts'

declare module 'cordis' {
  interface Context {
    sessionPersistence: SessionPersistence
  }
  interface Events {
    /** Something persistence noticed that a human should know (torn tail cut, repair, unregistered type). */
    'session-persistence/warning'(message: string, sessionId?: string): void
  }
}

/** Event types every build of dsh understands. */
export const CORE_EVENT_TYPES: readonly string[] = Object.freeze([
  'turn/start',
  'turn/end',
  'step/start',
  'step/end',
  'user/message',
  'assistant/chunk',
  'assistant/message',
  'tool/call',
  'tool/result',
  'tool/started',
  'request/header',
  'session/title',
  'seed/end',
  'surface/replace',
])

export interface EventTypeOptions {
  /**
   * A reader that does not know the type may keep the event unread (it does not change what the
   * rest of the log means). Default false: such a reader refuses to load the session.
   */
  ignorable?: boolean
}

export interface PersistenceBaseConfig {
  /** Milliseconds an event may wait for companions before its batch is written. */
  batchWindowMs?: number
  /** Event types added by plugins, declared from configuration. */
  eventTypes?: Array<{ type: string; ignorable?: boolean }>
  /**
   * What `append` does with an event type nobody registered: `warn` (default) emits
   * `session-persistence/warning` once and stores it; `refuse` rejects the append with
   * `UNKNOWN_EVENT_TYPE` (for tests and development: a plugin that forgot to register fails loudly).
   */
  unknownEventTypes?: 'warn' | 'refuse'
}

/** What a backend returns from `backendRead`. */
export interface BackendReadResult {
  header: SessionHeader
  records: StoredRecord[]
  /** Set when the tail was torn; in `load` mode the backend has already cut it off. */
  tornTail?: TornTail
}

interface OpenWriter {
  nextSeq: number
  batch: BatchWriter
  /** Settles when the session's storage exists (create is asynchronous). */
  ready: Promise<void>
}

export abstract class SessionPersistence extends Service {
  /** Short backend name (`jsonl`, `sqlite`). */
  abstract readonly backend: string

  // Mutated in place only: inside methods `this` may be a per-caller shadow of the service.
  protected readonly writers = new Map<string, OpenWriter>()
  /** Closes in flight: a second `close` of the same session waits for the first to release the lock. */
  private readonly closing = new Map<string, Promise<void>>()
  private readonly types = new Map<string, EventTypeOptions[]>()
  /** Holders of `readAnyEventType()`: while any is held, reads accept unregistered event types. */
  private readonly readingAny = new Set<symbol>()
  private readonly windowMs: number
  private readonly refuseUnknown: boolean

  constructor(ctx: Context, config: PersistenceBaseConfig = {}) {
    super(ctx, 'sessionPersistence')
    this.windowMs = config.batchWindowMs ?? 20
    this.refuseUnknown = config.unknownEventTypes === 'refuse'
    for (const entry of config.eventTypes ?? []) this.addType(entry.type, { ignorable: entry.ignorable })
    ctx.effect(() => () => this.shutdown(), 'session-persistence: close writers')
  }

  // ---- backend primitives ----

  /** Creates storage for a new session and takes its writer lock. Throws `EXISTS` / `LOCKED`. */
  protected abstract backendCreate(header: SessionHeader): Promise<void>
  /** Takes the writer lock of an existing session. Throws `NOT_FOUND` / `LOCKED`. */
  protected abstract backendOpen(id: SessionId): Promise<void>
  /**
   * Reads the whole log. `load` mode (lock held) cuts a torn tail off durably; `inspect` mode
   * never writes. Throws `NOT_FOUND`, `SessionCorruptError`.
   */
  protected abstract backendRead(id: SessionId, mode: 'load' | 'inspect'): Promise<BackendReadResult>
  /** Appends records (contiguous seq, continuing the log) durably. On failure nothing may remain half-written. */
  protected abstract backendWrite(id: SessionId, records: StoredRecord[]): Promise<void>
  /** Releases the writer lock and any handles. Idempotent. */
  protected abstract backendClose(id: SessionId): Promise<void>
  /**
   * Every stored session, or with `options.cwd` at least those of that directory (the caller
   * filters and sorts): a backend that can narrow by directory reads less, one that cannot ignores it.
   */
  protected abstract backendList(options?: ListOptions): Promise<SessionSummary[]>

  /** Records with `seq >= from`; backends may override with something cheaper than a full read. */
  protected async backendReadFrom(id: SessionId, from: number): Promise<StoredRecord[]> {
    const { records } = await this.backendRead(id, 'inspect')
    return records.slice(Math.max(0, from))
  }

  // ---- event types ----

  /** Declares a plugin's event type so loads accept it. Undone by the disposer or the caller unloading. */
  registerEventType(type: string, options: EventTypeOptions = {}): () => void {
    return this.ctx.effect(() => this.addType(type, options), `session-persistence: event type ${type}`)
  }

  /**
   * While the returned disposer has not run, `load`, `inspect` and `readFrom` accept event types
   * nobody registered (appends still follow `unknownEventTypes`). For read-only commands that
   * mount only part of a profile, such as `dsh sessions`: the plugins that wrote and registered
   * those types are not mounted there. Undone when the caller unloads.
   */
  readAnyEventType(): () => void {
    const token = Symbol('read any event type')
    return this.ctx.effect(() => {
      this.readingAny.add(token)
      return () => this.readingAny.delete(token)
    }, 'session-persistence: read any event type')
  }

  isKnownType(type: string): boolean {
    return CORE_EVENT_TYPES.includes(type) || this.types.has(type)
  }

  /** Every event type loads accept right now: the core ones and the registered ones, sorted. */
  knownEventTypes(): string[] {
    return [...new Set([...CORE_EVENT_TYPES, ...this.types.keys()])].sort()
  }

  private addType(type: string, options: EventTypeOptions): () => void {
    if (typeof type !== 'string' || type === '')
      throw new TypeError('registerEventType: type must be a non-empty string')
    const list = this.types.get(type) ?? []
    const entry = { ...options }
    list.push(entry)
    this.types.set(type, list)
    return () => {
      const index = list.indexOf(entry)
      if (index >= 0) list.splice(index, 1)
      if (list.length === 0) this.types.delete(type)
    }
  }

  private isIgnorable(type: string): boolean {
    return this.types.get(type)?.some((entry) => entry.ignorable) ?? false
  }

  // ---- the contract ----

  /**
   * Creates a session (storage and header) and opens it for writing. Appends may be queued at
   * once; they are written after the header. Throws `EXISTS` for a known id.
   */
  create(input: SessionHeaderInput): Promise<SessionHeader> {
    const header = normalizeHeader(input)
    if (this.writers.has(header.id))
      return Promise.reject(locked(header.id, 'it is already open for writing in this process'))
    const ready = this.backendCreate(header)
    this.writers.set(header.id, this.newWriter(header.id, 0, ready))
    return ready.then(
      () => header,
      (error) => {
        this.writers.delete(header.id)
        throw error
      },
    )
  }

  /**
   * Queues events of an open session; resolves once they are durable. The first event's seq must
   * be the next one of the log and the events contiguous; otherwise rejects with `SEQ_GAP` and
   * queues nothing.
   */
  append(sessionId: SessionId | string, events: readonly SessionEvent[]): Promise<void> {
    try {
      parseSessionId(sessionId)
    } catch (error) {
      return Promise.reject(error)
    }
    // Every logged event passes here: own state through the plain object (see unshadow).
    const self = unshadow(this)
    const writer = self.writers.get(sessionId)
    if (!writer)
      return Promise.reject(
        new SessionPersistenceError(
          'NOT_OPEN',
          sessionId,
          `session ${sessionId} is not open for writing: create() or load() it first`,
        ),
      )
    let seq = writer.nextSeq
    for (const event of events) {
      if (event.seq !== seq) {
        return Promise.reject(
          new SessionPersistenceError(
            'SEQ_GAP',
            sessionId,
            `session ${sessionId}: appended event has seq ${String(event.seq)}, expected ${seq} (seq must be contiguous)`,
          ),
        )
      }
      seq++
    }
    const records = events.map(
      (event): StoredRecord => (self.isIgnorable(event.type) ? { event, ignorable: true } : { event }),
    )
    for (const event of events) {
      if (self.isKnownType(event.type)) continue
      const message = `event type "${event.type}" is not registered with session persistence; sessions containing it will not load until it is registered`
      if (self.refuseUnknown)
        return Promise.reject(
          new SessionPersistenceError('UNKNOWN_EVENT_TYPE', sessionId, `session ${sessionId}: ${message}`),
        )
      this.warnOnce(message)
    }
    writer.nextSeq = seq
    return writer.batch.add(records)
  }

  /** Writes what is queued for one session (or every open session) and resolves once it is durable. */
  async flush(sessionId?: SessionId | string): Promise<void> {
    if (sessionId !== undefined) {
      parseSessionId(sessionId)
      const writer = unshadow(this).writers.get(sessionId)
      if (!writer) return
      await writer.ready
      await writer.batch.flush()
      return
    }
    const results = await Promise.allSettled(
      [...this.writers.values()].map(async (writer) => {
        await writer.ready
        await writer.batch.flush()
      }),
    )
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed.length === 1) throw failed[0].reason
    if (failed.length > 1)
      throw new AggregateError(
        failed.map((r) => r.reason),
        `${failed.length} sessions failed to flush`,
      )
  }

  /** Whether this instance holds the session open for writing. */
  isOpen(sessionId: SessionId | string): boolean {
    return this.writers.has(sessionId)
  }

  /** Events appended but not yet durable. */
  pendingCount(sessionId: SessionId | string): number {
    return this.writers.get(sessionId)?.batch.size ?? 0
  }

  /**
   * Opens a stored session for writing: takes its writer lock (`LOCKED` when another writer holds
   * it), cuts a torn tail, refuses unknown event types, appends crash repairs durably, and returns
   * the log. Appends continue at `events.length`.
   */
  async load(id: SessionId | string): Promise<LoadedSession> {
    const sessionId = parseSessionId(id)
    if (this.writers.has(sessionId)) throw locked(sessionId, 'it is already open for writing in this process')
    await this.backendOpen(sessionId)
    try {
      const read = await this.backendRead(sessionId, 'load')
      const loaded = this.finish(sessionId, read)
      const repairEvents = loaded.events.slice(loaded.events.length - countRepairEvents(loaded))
      if (repairEvents.length > 0)
        await this.backendWrite(
          sessionId,
          repairEvents.map((event) => ({ event })),
        )
      this.writers.set(sessionId, this.newWriter(sessionId, loaded.events.length, Promise.resolve()))
      for (const warning of loaded.warnings) this.ctx.emit('session-persistence/warning', warning, sessionId)
      return loaded
    } catch (error) {
      await this.backendClose(sessionId)
      throw error
    }
  }

  /** What `load()` would return, without taking the lock or writing anything. */
  async inspect(id: SessionId | string): Promise<LoadedSession> {
    const sessionId = parseSessionId(id)
    return this.finish(sessionId, await this.backendRead(sessionId, 'inspect'))
  }

  /** Stored events with `seq >= seq`, as stored (no repair). Does not take the lock. */
  async readFrom(id: SessionId | string, seq: number): Promise<AnySessionEvent[]> {
    if (!Number.isInteger(seq) || seq < 0)
      throw new RangeError(`readFrom: seq must be a non-negative integer, got ${String(seq)}`)
    const sessionId = parseSessionId(id)
    const records = await this.backendReadFrom(sessionId, seq)
    this.checkTypes(sessionId, records)
    return records.map((record) => record.event as AnySessionEvent)
  }

  /** Every stored session (with `cwd`: those of that directory), newest first. */
  async list(options: ListOptions = {}): Promise<SessionSummary[]> {
    const { cwd } = options
    const rows = await this.backendList(cwd === undefined ? undefined : { cwd })
    return sortSummaries(cwd === undefined ? rows : rows.filter((row) => row.cwd === cwd))
  }

  /** The most recently updated session whose cwd is `cwd`. */
  async latest(cwd: string): Promise<SessionSummary | undefined> {
    return (await this.list({ cwd }))[0]
  }

  /** Flushes and releases the session's writer lock. Further appends fail with `NOT_OPEN`. */
  async close(sessionId: SessionId | string): Promise<void> {
    parseSessionId(sessionId)
    const pending = this.closing.get(sessionId)
    if (pending !== undefined) return pending
    const writer = this.writers.get(sessionId)
    if (!writer) return
    const task = (async () => {
      try {
        await writer.ready
        await writer.batch.flush()
      } finally {
        writer.batch.stop()
        this.writers.delete(sessionId)
        await this.backendClose(asSessionId(sessionId))
      }
    })()
    this.closing.set(sessionId, task)
    try {
      await task
    } finally {
      this.closing.delete(sessionId)
    }
  }

  /** Closes every open session (flushing what is queued). */
  async closeAll(): Promise<void> {
    const results = await Promise.allSettled([...this.writers.keys()].map((id) => this.close(id)))
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed) throw failed.reason
  }

  /** Called when the plugin unloads; backends extend it to close their handles. */
  protected async shutdown(): Promise<void> {
    await this.closeAll().catch((error) =>
      this.ctx.emit('session-persistence/warning', `closing sessions failed: ${String(error)}`),
    )
  }

  // ---- helpers ----

  private newWriter(sessionId: SessionId, nextSeq: number, ready: Promise<void>): OpenWriter {
    // Each batch write calls the backend through the plain object (see unshadow).
    const self = unshadow(this)
    const writer: OpenWriter = {
      nextSeq,
      ready: ready.catch(() => {}),
      batch: new BatchWriter(async (records) => {
        await ready
        try {
          await self.backendWrite(sessionId, records)
        } catch (error) {
          if (error instanceof SessionPersistenceError) throw error
          throw new SessionPersistenceError(
            'WRITE_FAILED',
            sessionId,
            `session ${sessionId}: writing ${records.length} events failed: ${(error as Error)?.message ?? String(error)}`,
            { cause: error },
          )
        }
      }, self.windowMs),
    }
    return writer
  }

  private checkTypes(sessionId: string, records: readonly StoredRecord[]): void {
    if (this.readingAny.size) return
    for (const record of records) {
      const type = record.event.type
      if (!record.ignorable && !this.isKnownType(type)) {
        throw new SessionPersistenceError(
          'UNKNOWN_EVENT_TYPE',
          sessionId,
          `session ${sessionId}: event ${record.event.seq} has type "${type}", which this build does not know (written by a newer build or a plugin that is not mounted); refusing to load it`,
        )
      }
    }
  }

  private finish(sessionId: SessionId, read: BackendReadResult): LoadedSession {
    this.checkTypes(sessionId, read.records)
    const events = read.records.map((record) => record.event as AnySessionEvent)
    // Repairs carry the time of the last stored event, so inspect() is deterministic.
    const plan = planRepair(events, events.at(-1)?.time ?? read.header.createdAt)
    const warnings: string[] = []
    if (read.tornTail)
      warnings.push(
        `session ${sessionId}: torn tail at offset ${read.tornTail.offset} (${read.tornTail.dropped} dropped): ${read.tornTail.reason}`,
      )
    warnings.push(...describeRepairs(sessionId, plan.repairs))
    return {
      header: read.header,
      events: [...events, ...(plan.append as AnySessionEvent[])],
      repairs: plan.repairs,
      ...(read.tornTail ? { tornTail: read.tornTail } : {}),
      warnings,
    }
  }

  private readonly warned = new Set<string>()
  private warnOnce(message: string): void {
    if (this.warned.has(message)) return
    this.warned.add(message)
    this.ctx.emit('session-persistence/warning', message)
  }
}

function countRepairEvents(loaded: LoadedSession): number {
  // Each repair is exactly one appended event.
  return loaded.repairs.length
}

function locked(sessionId: string, why: string): SessionPersistenceError {
  return new SessionPersistenceError('LOCKED', sessionId, `session ${sessionId} cannot be opened for writing: ${why}`)
}

export function normalizeHeader(input: SessionHeaderInput): SessionHeader {
  if (!input || typeof input !== 'object') throw new TypeError('create: header must be an object')
  const id = parseSessionId(input.id, 'create')
  if (input.parentSession) parseSessionId(input.parentSession.sessionId, 'create: parentSession')
  if (typeof input.cwd !== 'string' || input.cwd === '') throw new TypeError('create: cwd must be a non-empty string')
  const createdAt = input.createdAt ?? Date.now()
  if (!Number.isFinite(createdAt)) throw new TypeError('create: createdAt must be epoch milliseconds')
  return {
    version: HEADER_VERSION,
    id,
    cwd: input.cwd,
    createdAt,
    ...(input.parentSession
      ? { parentSession: { sessionId: input.parentSession.sessionId, boundary: input.parentSession.boundary } }
      : {}),
    ...(input.origin !== undefined ? { origin: input.origin } : {}),
  }
}

/** Validates a header read back from storage. Throws `BAD_HEADER`. */
export function parseHeader(sessionId: string, value: unknown): SessionHeader {
  const bad = (why: string) =>
    new SessionPersistenceError('BAD_HEADER', sessionId, `session ${sessionId}: header ${why}`)
  if (!value || typeof value !== 'object') throw bad('is not an object')
  const h = value as Partial<SessionHeader>
  if (typeof h.version !== 'number') throw bad('has no version')
  if (h.version > HEADER_VERSION)
    throw bad(`has version ${h.version}, newer than this build understands (${HEADER_VERSION})`)
  if (h.id !== sessionId) throw bad(`names id ${JSON.stringify(h.id)}`)
  if (typeof h.cwd !== 'string' || typeof h.createdAt !== 'number') throw bad('lacks cwd or createdAt')
  return h as SessionHeader
}

/**
 * Checks one parsed record; returns the reason it is malformed, or undefined. `expectedSeq` is
 * the seq it must carry.
 */
export function recordProblem(value: unknown, expectedSeq: number): string | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return 'record is not an object'
  const r = value as { seq?: unknown; time?: unknown; type?: unknown; data?: unknown }
  if (r.seq !== expectedSeq) return `record has seq ${JSON.stringify(r.seq)}, expected ${expectedSeq}`
  if (typeof r.time !== 'number' || !Number.isFinite(r.time)) return `record ${expectedSeq} has no valid time`
  if (typeof r.type !== 'string' || r.type === '') return `record ${expectedSeq} has no type`
  if (!('data' in r)) return `record ${expectedSeq} has no data`
  return undefined
}
