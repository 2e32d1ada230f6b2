// @dsh/session-projection: `ctx.sessionProjections`, the registry that drives projection units
// (pure folds over committed session events) for live sessions and for stored ones. Stored
// sessions are listed through an optional checkpoint cache (`ctx.sessionProjectionCache`, the
// abstract class below; `@dsh/session-projection-cache` provides it): an entry that matches its
// log is used as is, one behind its log is advanced from the log's tail, anything else is rebuilt.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { AnySessionEvent, Session, SessionId } from '@dsh/session'
import type { SessionSummary } from '@dsh/session-persistence'

declare module 'cordis' {
  interface Context {
    sessionProjections: SessionProjections
    sessionProjectionCache: SessionProjectionCache
  }
  interface Events {
    /** A projection pass over stored sessions could not use or write the cache (the listing still completes). */
    'session-projection/warning'(message: string): void
  }
}

/**
 * A projection unit: a pure fold. `state` must stay plain JSON (it is cached on disk); `fold` may
 * mutate it and must return it (or a replacement). Bump `version` whenever the fold changes:
 * cached states of another version are rebuilt from the log.
 */
export interface ProjectionUnit<S = unknown, V = S> {
  name: string
  version: number
  init(): S
  fold(state: S, event: AnySessionEvent): S
  /** The finished value carriers receive; default: the state. */
  value?(state: S): V
}

/** One unit's cached state. */
export interface UnitCheckpoint {
  version: number
  state: unknown
}

/** The cached fold of one stored session, valid for exactly the first `events` events. */
export interface ProjectionCheckpoint {
  sessionId: string
  /** Number of events folded (the next seq). */
  events: number
  /** `time` of the last folded event: with `events`, the fingerprint checked against the log. */
  lastTime?: number
  units: { [name: string]: UnitCheckpoint }
}

/** The persisted checkpoint store. Providers subclass this and register as `ctx.sessionProjectionCache`. */
export abstract class SessionProjectionCache extends Service {
  constructor(ctx: Context) {
    super(ctx, 'sessionProjectionCache')
  }
  /** Every checkpoint (an unreadable store reads as empty: it is rebuilt, never trusted). */
  abstract readAll(): Promise<Map<string, ProjectionCheckpoint>>
  /** Stores checkpoints (replacing those of the same sessions) and drops the `removed` ones. */
  abstract write(checkpoints: ProjectionCheckpoint[], removed: string[]): Promise<void>
}

/** How a row's values were obtained. */
export type RowSource = 'cache' | 'refreshed' | 'rebuilt' | 'live' | 'damaged'

export interface ProjectionRow {
  summary: SessionSummary
  /** Finished value of every registered unit, by unit name (empty for a damaged log). */
  values: { [unit: string]: unknown }
  source: RowSource
}

export interface ListReport {
  rows: number
  cache: number
  refreshed: number
  rebuilt: number
  live: number
  damaged: number
  /** Logs read (each refresh or rebuild reads one). */
  logsRead: number
}

/** Options of `list()`. */
export interface ListOptions {
  /**
   * Only stored sessions whose summary passes get a row (and are folded, refreshed or rebuilt):
   * a caller that shows a few rows pays for those. Checkpoints of the others are kept as they are.
   */
  only?: (summary: SessionSummary) => boolean
}

/** What `list()` needs from the persistence seam. */
export interface StoredLogs {
  list(): Promise<SessionSummary[]>
  readFrom(id: SessionId | string, seq: number): Promise<AnySessionEvent[]>
}

interface LiveFold {
  session: Session
  next: number
  states: Map<string, unknown>
}

export interface SessionProjectionsConfig {
  /** Write refreshed checkpoints back to the cache (off: read-only, for tools that must not write). */
  writeCache: boolean
}

export class SessionProjections extends Service {
  static inject = ['sessions']
  static Config: Schema<Partial<SessionProjectionsConfig>, SessionProjectionsConfig> = Schema.object({
    writeCache: Schema.boolean()
      .default(true)
      .description('Write refreshed and rebuilt checkpoints back to the cache.'),
  })

  // The folding state lives in a plain object: inside service methods `this` is a per-caller
  // Cordis shadow whose every property read goes through a proxy, which made a 1,000-row listing
  // spend tens of milliseconds on property lookups alone. Service methods look things up once
  // and hand over to the engine.
  private readonly engine = new Engine()
  private readonly home: Context
  private readonly writeCache: boolean
  /** Figures of the last `list()`, for tests and benches. */
  readonly lastReport: ListReport = emptyReport()

  constructor(ctx: Context, config: Partial<SessionProjectionsConfig> = {}) {
    super(ctx, 'sessionProjections')
    this.home = ctx
    this.writeCache = config.writeCache ?? true
    const live = this.engine.live
    ctx.on('session/deleted', (session) => void live.delete(session.id))
    ctx.effect(() => () => live.clear(), 'session-projections: clear')
  }

  /** Registers a unit. A second unit of the same name throws. Undone by the disposer or unloading. */
  register<S, V>(unit: ProjectionUnit<S, V>): () => void {
    const engine = this.engine
    return this.ctx.effect(() => {
      if (!unit || typeof unit.name !== 'string' || !unit.name)
        throw new TypeError('session-projections: a unit needs a name')
      if (engine.registry.has(unit.name))
        throw new Error(`session-projections: unit "${unit.name}" is already registered`)
      engine.registry.set(unit.name, unit)
      // Live folds restart so the new unit sees every event.
      engine.live.clear()
      return () => {
        if (engine.registry.get(unit.name) === unit) engine.registry.delete(unit.name)
      }
    }, `session-projections: unit ${unit.name}`)
  }

  /** Names of the registered units, sorted. */
  units(): string[] {
    return [...this.engine.registry.keys()].sort()
  }

  /** Every registered unit folded over `events` (a whole log, seq order): values by unit name. */
  foldEvents(events: Iterable<AnySessionEvent>): { [unit: string]: unknown } {
    return this.engine.foldEvents(events)
  }

  /**
   * Values of a live session (in `ctx.sessions`), folded incrementally up to its current end;
   * undefined for a session not in the store.
   */
  snapshot(sessionId: SessionId | string): { [unit: string]: unknown } | undefined {
    const session = this.home.sessions.get(sessionId)
    return session ? this.engine.snapshot(session) : undefined
  }

  /**
   * One row per stored session (newest first), with every unit's value. Live sessions are served
   * from their in-memory fold; stored ones from the cache when it matches the log, else from the
   * log (and the cache is updated). `logs` defaults to `ctx.sessionPersistence`; `options.only`
   * narrows the rows projected.
   */
  async list(logs?: StoredLogs, options: ListOptions = {}): Promise<ProjectionRow[]> {
    const home = this.home
    const source = logs ?? home.get('sessionPersistence')
    if (!source) throw new Error('session-projections: listing stored sessions needs a session-persistence row')
    const cache = home.get('sessionProjectionCache')
    const warn = (message: string) => home.emit('session-projection/warning', message)
    const liveSessions = new Map<string, Session>()
    for (const session of home.sessions.list()) liveSessions.set(session.id, session)
    const { rows, report, changed, removed } = await this.engine.list(source, cache, liveSessions, warn, options.only)
    if (cache && this.writeCache && (changed.length > 0 || removed.length > 0)) {
      await cache
        .write(changed, removed)
        .catch((error) => warn(`projection cache not written: ${(error as Error)?.message ?? String(error)}`))
    }
    Object.assign(this.lastReport, report)
    return rows
  }

  /** The row of one stored (or live) session; undefined when persistence does not know it. */
  async show(sessionId: SessionId | string, logs?: StoredLogs): Promise<ProjectionRow | undefined> {
    return (await this.list(logs, { only: (summary) => summary.id === sessionId }))[0]
  }
}

/** Registry, live folds and the listing loop; a plain object (see `SessionProjections.engine`). */
class Engine {
  // any: units of any state type share one map
  readonly registry = new Map<string, ProjectionUnit<any, any>>()
  readonly live = new Map<string, LiveFold>()

  foldEvents(events: Iterable<AnySessionEvent>): { [unit: string]: unknown } {
    const states = this.initStates()
    for (const event of events) this.foldInto(states, event)
    return this.valuesOf(states)
  }

  snapshot(session: Session): { [unit: string]: unknown } {
    let fold = this.live.get(session.id)
    if (!fold || fold.session !== session) {
      fold = { session, next: 0, states: this.initStates() }
      this.live.set(session.id, fold)
    }
    for (const event of session.slice(fold.next)) this.foldInto(fold.states, event)
    fold.next = session.length
    return this.valuesOf(fold.states)
  }

  async list(
    source: StoredLogs,
    cache: SessionProjectionCache | undefined,
    liveSessions: Map<string, Session>,
    warn: (message: string) => void,
    only?: (summary: SessionSummary) => boolean,
  ) {
    const report = emptyReport()
    // The cache is read while persistence lists (its parse overlaps the listing's file I/O); the
    // order does not matter, every entry is checked against the summary listed.
    const readCache = async (): Promise<Map<string, ProjectionCheckpoint>> => {
      if (!cache) return new Map()
      try {
        return await cache.readAll()
      } catch (error) {
        warn(`projection cache unreadable, rebuilding: ${(error as Error)?.message ?? String(error)}`)
        return new Map()
      }
    }
    const [summaries, checkpoints] = await Promise.all([source.list(), readCache()])
    const changed: ProjectionCheckpoint[] = []
    const rows: ProjectionRow[] = []
    const units = [...this.registry]
    for (const summary of summaries) {
      if (only && !only(summary)) continue
      // The common cases (damaged, live, cache hit) are answered without an await.
      const row =
        this.quickRow(summary, checkpoints.get(summary.id), liveSessions, units) ??
        (await this.readRow(summary, checkpoints.get(summary.id), source, changed, report))
      report[row.source]++
      rows.push(row)
    }
    const removed: string[] = []
    if (checkpoints.size > 0) {
      const known = new Set<string>()
      for (const summary of summaries) known.add(summary.id)
      for (const id of checkpoints.keys()) if (!known.has(id)) removed.push(id)
    }
    report.rows = rows.length
    return { rows, report, changed, removed }
  }

  /** A row that needs no log read, or undefined. */
  private quickRow(
    summary: SessionSummary,
    cached: ProjectionCheckpoint | undefined,
    liveSessions: Map<string, Session>,
    units: Array<[string, ProjectionUnit<any, any>]>,
  ): ProjectionRow | undefined {
    if (summary.damaged !== undefined) return { summary, values: {}, source: 'damaged' }
    const session = liveSessions.get(summary.id)
    if (session) return { summary, values: this.snapshot(session), source: 'live' }
    if (!cached || cached.events !== summary.events || (summary.events !== 0 && cached.lastTime !== summary.updatedAt))
      return undefined
    // Read-only use of the cached states: carriers get their own copies from the parsed document.
    const values: { [unit: string]: unknown } = {}
    try {
      for (const [name, unit] of units) {
        const entry = cached.units?.[name]
        if (entry?.version !== unit.version) return undefined
        values[name] = unit.value ? unit.value(entry.state) : entry.state
      }
    } catch {
      return undefined // a state that does not parse (or fit its unit): folded again from the log
    }
    return { summary, values, source: 'cache' }
  }

  private async readRow(
    summary: SessionSummary,
    cached: ProjectionCheckpoint | undefined,
    logs: StoredLogs,
    changed: ProjectionCheckpoint[],
    report: ListReport,
  ): Promise<ProjectionRow> {
    const usable = cached && this.unitsMatch(cached)
    if (usable && cached.events > 0 && cached.events < summary.events) {
      // Behind its log: advance from the last folded event, if that event is still the one we folded.
      report.logsRead++
      const tail = await logs.readFrom(summary.id, cached.events - 1)
      const states = tail[0]?.seq === cached.events - 1 && tail[0].time === cached.lastTime && this.statesOf(cached)
      if (states) {
        for (const event of tail.slice(1)) this.foldInto(states, event)
        changed.push(this.checkpoint(summary.id, summary.events, tail.at(-1)?.time, states))
        return { summary, values: this.valuesOf(states), source: 'refreshed' }
      }
    }
    const states = this.initStates()
    let lastTime: number | undefined
    if (summary.events > 0) {
      report.logsRead++
      const events = await logs.readFrom(summary.id, 0)
      for (const event of events) this.foldInto(states, event)
      lastTime = events.at(-1)?.time
      changed.push(this.checkpoint(summary.id, events.length, lastTime, states))
    } else {
      changed.push(this.checkpoint(summary.id, 0, undefined, states))
    }
    return { summary, values: this.valuesOf(states), source: 'rebuilt' }
  }

  private unitsMatch(cached: ProjectionCheckpoint): boolean {
    for (const [name, unit] of this.registry) if (cached.units?.[name]?.version !== unit.version) return false
    return true
  }

  private checkpoint(
    sessionId: string,
    events: number,
    lastTime: number | undefined,
    states: Map<string, unknown>,
  ): ProjectionCheckpoint {
    const units: ProjectionCheckpoint['units'] = {}
    for (const [name, state] of states) units[name] = { version: this.registry.get(name)!.version, state }
    return { sessionId, events, ...(lastTime !== undefined ? { lastTime } : {}), units }
  }

  private initStates(): Map<string, unknown> {
    const states = new Map<string, unknown>()
    for (const [name, unit] of this.registry) states.set(name, unit.init())
    return states
  }

  /** Cached states, copied so folding never alters the cache's objects; undefined when one does not parse. */
  private statesOf(cached: ProjectionCheckpoint): Map<string, unknown> | undefined {
    const states = new Map<string, unknown>()
    try {
      for (const name of this.registry.keys()) states.set(name, structuredClone(cached.units[name].state))
    } catch {
      return undefined
    }
    return states
  }

  private foldInto(states: Map<string, unknown>, event: AnySessionEvent): void {
    for (const [name, state] of states) {
      const unit = this.registry.get(name)
      if (unit) states.set(name, unit.fold(state, event))
    }
  }

  /** States that live on (live folds, new checkpoints) are copied so a carrier cannot alter them. */
  private valuesOf(states: Map<string, unknown>): { [unit: string]: unknown } {
    const out: { [unit: string]: unknown } = {}
    for (const [name, state] of states) {
      const unit = this.registry.get(name)
      const own = structuredClone(state)
      if (unit) out[name] = unit.value ? unit.value(own) : own
    }
    return out
  }
}

function emptyReport(): ListReport {
  return { rows: 0, cache: 0, refreshed: 0, rebuilt: 0, live: 0, damaged: 0, logsRead: 0 }
}

export const name = '@dsh/session-projection'
export default SessionProjections
