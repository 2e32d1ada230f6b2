// `ctx.durableSessions`: attaches `ctx.sessionPersistence` to `ctx.sessions`. Every new session is
// created in persistence and each of its events queued for append; a stored session is restored
// into the store with `resume(id)`.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { AnySessionEvent, Session, SessionId } from '@dsh/session'
import { SessionPersistenceError, parseSessionId, type LoadedSession, type SessionSummary } from './types.ts'
import type { SessionPersistence } from './service.ts'
import { unshadow } from './raw.ts'

declare module 'cordis' {
  interface Context {
    durableSessions: DurableSessions
  }
}

export interface DurableSessionsConfig {
  /** Persist every session created in the store (off: only resumed sessions are persisted). */
  persistNew?: boolean
  /** `origin` written into the header of new sessions. */
  origin?: string
}

export interface ResumeResult {
  session: Session
  loaded: LoadedSession
}

export class DurableSessions extends Service {
  static inject = ['sessions', 'sessionPersistence']
  static Config: Schema<DurableSessionsConfig> = Schema.object({
    persistNew: Schema.boolean().default(true).description('Persist every new session.'),
    origin: Schema.string().description('origin recorded in new session headers.'),
  })

  // Mutated in place only (methods may run on a per-caller shadow of `this`).
  private readonly tracked = new Set<string>()
  private readonly restoring = new Set<string>()
  private readonly failures = new Map<string, unknown>()
  private readonly config: DurableSessionsConfig
  /**
   * The injected persistence, taken once: `sessionPersistence` is in `inject`, so a replaced
   * provider restarts this service. Every logged event is appended through it (see unshadow).
   */
  private readonly persistence: SessionPersistence

  constructor(ctx: Context, config: DurableSessionsConfig = {}) {
    super(ctx, 'durableSessions')
    this.config = { persistNew: true, ...config }
    this.persistence = unshadow(ctx.sessionPersistence)
    ctx.on('session/created', (session) => this.onCreated(session))
    ctx.on('session/event', (session, event) => this.onEvent(session, event))
    ctx.on('session/deleted', (session) => {
      if (!this.tracked.delete(session.id)) return
      void ctx.sessionPersistence.close(session.id).catch((error) => this.fail(session.id, error))
    })
    ctx.effect(
      () => () => {
        const persistence = ctx.sessionPersistence
        for (const id of [...this.tracked]) void persistence?.close(id).catch(() => {})
        this.tracked.clear()
      },
      'durable-sessions: close',
    )
  }

  /** Whether the session's events are being persisted. */
  isPersisted(sessionId: SessionId | string): boolean {
    return this.tracked.has(sessionId)
  }

  /** The first persistence failure of a session (create or append), if any. */
  failure(sessionId: SessionId | string): unknown {
    return this.failures.get(sessionId)
  }

  /**
   * Makes every event of a persisted session appended so far durable. Rejects when persistence
   * failed for it (the failure is named); resolves at once for a session that is not persisted.
   */
  async checkpoint(sessionId: SessionId | string): Promise<void> {
    // Called before every request and tool call: own state through the plain object.
    const self = unshadow(this)
    if (!self.tracked.has(sessionId)) return
    await self.persistence.flush(sessionId)
    const failure = self.failures.get(sessionId)
    if (failure === undefined) return
    // A failed batch is retried by the flush above; anything else (create failed, a refused
    // append) means events are missing from storage.
    const retried = failure instanceof SessionPersistenceError && failure.code === 'WRITE_FAILED'
    if (!retried || !self.persistence.isOpen(sessionId)) throw failure
    self.failures.delete(sessionId)
  }

  /** Loads a stored session (repairing it) and restores it into `ctx.sessions`. */
  async resume(id: SessionId | string): Promise<ResumeResult> {
    parseSessionId(id, 'resume')
    const persistence = this.ctx.sessionPersistence
    let loaded: Awaited<ReturnType<typeof persistence.load>>
    try {
      if (this.ctx.sessions.get(id)) throw live(id)
      loaded = await persistence.load(id)
    } catch (error) {
      // Not a stored id: a unique prefix of one stands for it (`dsh -r 3f2a`).
      if (!(error instanceof SessionPersistenceError && error.code === 'NOT_FOUND')) throw error
      const full = await this.completeId(id)
      if (full === undefined) throw error
      if (this.ctx.sessions.get(full)) throw live(full)
      loaded = await persistence.load(full)
    }
    this.restoring.add(loaded.header.id)
    try {
      const parent = loaded.header.parentSession
      const session = this.ctx.sessions.create({
        id: loaded.header.id,
        cwd: loaded.header.cwd,
        events: loaded.events,
        ...(parent ? { parent: { sessionId: parent.sessionId, boundary: parent.boundary } } : {}),
      })
      return { session, loaded }
    } catch (error) {
      this.tracked.delete(loaded.header.id)
      await persistence.close(loaded.header.id)
      throw error
    } finally {
      this.restoring.delete(loaded.header.id)
    }
  }

  /**
   * Resumes the most recently updated session of `cwd`; undefined when there is none. When that
   * session is damaged this rejects (naming it) rather than falling back to an older one.
   */
  async resumeLatest(cwd: string): Promise<ResumeResult | undefined> {
    const latest = await this.ctx.sessionPersistence.latest(cwd)
    return latest ? this.resume(latest.id) : undefined
  }

  /**
   * The stored id that `prefix` begins, when exactly one does; undefined when none does. Several
   * matches throw `AMBIGUOUS`, listing them (newest first, at most 10) so the user can pick.
   */
  async completeId(prefix: string): Promise<SessionId | undefined> {
    const matches = (await this.ctx.sessionPersistence.list()).filter((row) => row.id.startsWith(prefix))
    if (matches.length === 1) return matches[0].id
    if (matches.length === 0) return undefined
    const shown = matches
      .slice(0, 10)
      .map((row) => `${row.id} (${row.cwd}, ${new Date(row.updatedAt).toISOString().slice(0, 16).replace('T', ' ')})`)
    const more = matches.length > shown.length ? `, and ${matches.length - shown.length} more` : ''
    throw new SessionPersistenceError(
      'AMBIGUOUS',
      prefix,
      `session id prefix ${prefix} matches ${matches.length} sessions: ${shown.join(', ')}${more}; give more of the id`,
    )
  }

  /** Every stored session, newest first (delegates to `ctx.sessionPersistence.list()`). */
  list(): Promise<SessionSummary[]> {
    return this.ctx.sessionPersistence.list()
  }

  private onCreated(session: Session): void {
    const persistence = this.ctx.sessionPersistence
    if (this.restoring.has(session.id)) {
      this.tracked.add(session.id)
      return
    }
    if (!this.config.persistNew || this.tracked.has(session.id)) return
    this.tracked.add(session.id)
    try {
      const parent = session.parent
      void persistence
        .create({
          id: session.id,
          cwd: session.cwd,
          createdAt: session.events[0]?.time ?? Date.now(),
          ...(parent ? { parentSession: { sessionId: parent.sessionId, boundary: parent.boundary } } : {}),
          ...(this.config.origin !== undefined ? { origin: this.config.origin } : {}),
        })
        .catch((error) => this.fail(session.id, error))
      // A fork or restore-by-value arrives with events: they are queued behind the header.
      if (session.events.length > 0)
        void persistence.append(session.id, session.events).catch((error) => this.fail(session.id, error))
    } catch (error) {
      this.fail(session.id, error)
    }
  }

  private onEvent(session: Session, event: AnySessionEvent): void {
    if (!this.tracked.has(session.id)) return
    void this.persistence.append(session.id, [event]).catch((error) => this.fail(session.id, error))
  }

  private fail(sessionId: string, error: unknown): void {
    if (!this.failures.has(sessionId)) this.failures.set(sessionId, error)
    this.ctx.emit(
      'session-persistence/warning',
      `session ${sessionId}: ${(error as Error)?.message ?? String(error)}`,
      sessionId,
    )
  }
}

const live = (id: string) => new SessionPersistenceError('LOCKED', id, `session ${id} is already live in this process`)
