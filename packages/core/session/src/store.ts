import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { emitNamed } from './plugin-error.ts'
import { DEFAULT_MAX_TOOL_ARGUMENT_CHARS } from './surface.ts'
import { Session, type SessionOptions, type SessionParent } from './session.ts'
import type { AnySessionEvent, SessionEvent, SessionId } from './types.ts'

declare module 'cordis' {
  interface Context {
    sessions: SessionStore
  }
  interface Events {
    /** Every append to a session held by `ctx.sessions`, in seq order per session. */
    'session/event'(session: Session, event: AnySessionEvent): void
    /** A session entered the store (create, fork, restore). */
    'session/created'(session: Session): void
    /** A session left the store (delete, its creator unloaded, or the store unloaded). */
    'session/deleted'(session: Session): void
    /**
     * Asked (with `ctx.bail`) by a long-lived host before it unloads an idle session: a listener
     * that needs the session live (a pending reminder, ...) returns a short reason to keep it.
     */
    'session/keep-alive'(session: Session): string | undefined
  }
}

export interface CreateSessionOptions {
  cwd: string
  /** Defaults to a fresh UUID. A duplicate id throws. */
  id?: SessionId | string
  parent?: SessionParent
  /** Restore a persisted log (contiguous seq from 0, validated). */
  events?: readonly SessionEvent[]
  /** Clock for event `time` (tests); defaults to `Date.now`. */
  clock?: () => number
}

export class SessionForkError extends Error {
  override name = 'SessionForkError'
}

interface Entry {
  session: Session
  /** Stops the broadcast and the creator-bound effect. */
  release: () => void
}

/**
 * `ctx.sessions`: the in-memory store of live sessions.
 *
 * A session created through some plugin's context is bound to that plugin: when it unloads, the
 * session leaves the store (the object stays usable by whoever holds it, without broadcast).
 * When the store itself unloads, every session leaves it.
 */
export class SessionStore extends Service {
  static Config: Schema<SessionStore.Config> = Schema.object({
    maxToolArgumentChars: Schema.natural()
      .default(DEFAULT_MAX_TOOL_ARGUMENT_CHARS)
      .description(
        'Longest tool-call arguments string replayed to the model as-is; longer ones become an excerpt plus a marker (the log keeps them whole).',
      ),
    streamChunks: Schema.union(['keep', 'release'])
      .default('keep')
      .description(
        "What the in-memory log keeps of a step's streamed assistant/chunk events once its message is logged: keep them whole, or release them to payload-free placeholders (the stored log keeps them whole).",
      ),
    compactedEvents: Schema.union(['keep', 'release'])
      .default('release')
      .description(
        'What the in-memory log keeps of events behind a surface/replace (compaction) that the model no longer sees: release them to placeholders whose data is decoded from a compressed block on read, or keep them whole.',
      ),
  })

  // Fields are only mutated in place: inside methods `this` is a per-caller shadow.
  private readonly entries = new Map<string, Entry>()
  private readonly home: Context
  private readonly maxToolArgumentChars: number
  private readonly streamChunks: 'keep' | 'release'
  private readonly compactedEvents: 'keep' | 'release'

  constructor(ctx: Context, config: SessionStore.Config = {}) {
    super(ctx, 'sessions')
    this.home = ctx
    this.maxToolArgumentChars = config.maxToolArgumentChars ?? DEFAULT_MAX_TOOL_ARGUMENT_CHARS
    this.streamChunks = config.streamChunks ?? 'keep'
    this.compactedEvents = config.compactedEvents ?? 'release'
    ctx.effect(
      () => () => {
        for (const id of [...this.entries.keys()]) this.remove(id)
      },
      'sessions: clear store',
    )
  }

  create(options: CreateSessionOptions): Session {
    if (options.id !== undefined && this.entries.has(options.id))
      throw new Error(`session "${options.id}" already exists`)
    const session = new Session({
      maxToolArgumentChars: this.maxToolArgumentChars,
      streamChunks: this.streamChunks,
      compactedEvents: this.compactedEvents,
      ...options,
    } satisfies SessionOptions)
    return this.adopt(session)
  }

  get(id: SessionId | string): Session | undefined {
    return this.entries.get(id)?.session
  }

  list(): Session[] {
    return [...this.entries.values()].map((entry) => entry.session)
  }

  /**
   * A new session holding a copy of `source`'s events with `seq < boundary` (default: the whole
   * log), followed by `seed/end {fromSession, boundary}`. The boundary must fall between turns: no
   * `turn/start` may be left open before it (so right after a `turn/end`, or before the first
   * `turn/start`). Events are shared, not re-validated: they are immutable.
   */
  fork(source: Session | SessionId, boundary?: number): Session {
    const from = typeof source === 'string' ? this.get(source) : source
    if (!from) throw new SessionForkError(`cannot fork: no session "${String(source)}" in the store`)
    const at = boundary ?? from.length
    if (!Number.isInteger(at) || at < 0 || at > from.length) {
      throw new SessionForkError(
        `cannot fork session "${from.id}" at ${String(boundary)}: boundary must be an integer in [0, ${from.length}]`,
      )
    }
    if (!from.isTurnBoundary(at)) {
      throw new SessionForkError(
        `cannot fork session "${from.id}" at ${at}: a turn is open there (boundaries must fall after a turn/end or before the first turn/start)`,
      )
    }
    const session = new Session({
      cwd: from.cwd,
      parent: { sessionId: from.id, boundary: at },
      clock: from.clock,
      events: from.slice(0, at),
      maxToolArgumentChars: this.maxToolArgumentChars,
      streamChunks: this.streamChunks,
      compactedEvents: this.compactedEvents,
    })
    this.adopt(session)
    session.append('seed/end', { fromSession: from.id, boundary: at })
    return session
  }

  /** Removes a session from the store. Returns whether it was there. */
  delete(id: SessionId | string): boolean {
    return this.remove(id)
  }

  private adopt(session: Session): Session {
    const home = this.home
    // `this.ctx` is the caller's context: bind the session's membership to the caller plugin.
    // First, so an inactive caller context throws before anything is registered.
    const unbind =
      this.ctx === home
        ? undefined
        : this.ctx.effect(() => () => void this.remove(session.id), `sessions: ${session.id}`)
    // Each `session/event` listener is called on its own so a throwing one is reported as a
    // PluginError naming its plugin (and the others still run).
    const unsubscribe = session.subscribe((event) =>
      emitNamed(home, 'session/event', `session/event listener on "${event.type}"`, [session, event]),
    )
    this.entries.set(session.id, {
      session,
      release: () => {
        unsubscribe()
        void unbind?.()
      },
    })
    home.emit('session/created', session)
    return session
  }

  private remove(id: string): boolean {
    const entry = this.entries.get(id)
    if (!entry) return false
    this.entries.delete(id)
    entry.release()
    this.home.emit('session/deleted', entry.session)
    return true
  }
}

export namespace SessionStore {
  export interface Config {
    /** Default 100,000. See `SessionOptions.maxToolArgumentChars`. */
    maxToolArgumentChars?: number
    /** Default `keep`. See `SessionOptions.streamChunks`. */
    streamChunks?: 'keep' | 'release'
    /** Default `release`. See `SessionOptions.compactedEvents`. */
    compactedEvents?: 'keep' | 'release'
  }
}
