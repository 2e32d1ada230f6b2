// @dsh/token-meter: `ctx.tokenMeter`, per-session token accounting folded from the session log.
//
// The log is the source of truth: the meter folds `assistant/message` usage (one figure per model
// request) in seq order, once per event, and never stores anything the log cannot rebuild. A
// session that starts with a copied prefix (fork, resume seed, restore) is folded from its own
// events on first sight, so the prefix is counted exactly once and, when a `seed/end` marks it,
// reported apart as `seeded`.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { addUsage, emptyUsage, type TokenUsage } from '@dsh/llm'
import type { AnySessionEvent, Session, SessionId } from '@dsh/session'

declare module 'cordis' {
  interface Context {
    tokenMeter: TokenMeter
  }
}

export interface SessionUsage {
  /** Sum over every request in the log. */
  total: TokenUsage
  /** The part of `total` from events before the last `seed/end` (copied from another session). */
  seeded: TokenUsage
  /** `total - seeded`: requests made in this session after its seed. */
  live: TokenUsage
  /** Requests with usage in the log, and how many of them are seeded. */
  requests: number
  seededRequests: number
  /** Usage of the most recent request, if any. */
  last?: TokenUsage
}

interface Fold {
  /** Next seq to fold. */
  next: number
  total: TokenUsage
  seeded: TokenUsage
  requests: number
  seededRequests: number
  last?: TokenUsage
}

const subtract = (a: TokenUsage, b: TokenUsage): TokenUsage => ({
  input: a.input - b.input,
  output: a.output - b.output,
  cacheRead: a.cacheRead - b.cacheRead,
  cacheWrite: a.cacheWrite - b.cacheWrite,
  reasoning: a.reasoning - b.reasoning,
})

/** Characters per token of the `estimate` heuristic. */
export const CHARS_PER_TOKEN = 4

export class TokenMeter extends Service {
  static Config: Schema<TokenMeter.Config> = Schema.object({})
  static inject = ['sessions']

  // Shared by every caller view of the service; mutated in place, never reassigned.
  private readonly folds = new Map<string, Fold>()
  private readonly home: Context

  constructor(ctx: Context, _config: TokenMeter.Config = {}) {
    super(ctx, 'tokenMeter')
    this.home = ctx
    const folds = this.folds
    ctx.on('session/created', (session: Session) => void this.advance(session))
    ctx.on('session/event', (session: Session, _event: AnySessionEvent) => void this.advance(session))
    ctx.on('session/deleted', (session: Session) => void folds.delete(session.id))
    ctx.effect(() => () => folds.clear(), 'tokenMeter: clear')
  }

  /**
   * Token accounting of a session, folded up to its current end. Accepts a Session (folded even
   * when it is not in the store) or an id of a session in `ctx.sessions`; undefined for an
   * unknown id.
   */
  usage(session: Session | SessionId | string): SessionUsage | undefined {
    const fold = this.foldFor(session)
    if (!fold) return undefined
    return {
      total: { ...fold.total },
      seeded: { ...fold.seeded },
      live: subtract(fold.total, fold.seeded),
      requests: fold.requests,
      seededRequests: fold.seededRequests,
      last: fold.last && { ...fold.last },
    }
  }

  /**
   * Prompt size of the most recent request: `input + cacheRead + cacheWrite`. This is the context
   * pressure figure (what the next request will re-send, before its own additions). Undefined
   * when the session has made no request with usage, or is unknown.
   */
  lastRequestInput(session: Session | SessionId | string): number | undefined {
    const last = this.foldFor(session)?.last
    return last && last.input + last.cacheRead + last.cacheWrite
  }

  /**
   * Rough token count of `text`: `ceil(length / 4)` (UTF-16 code units). Good enough for budgets
   * and previews of English and code; it undercounts CJK text, which runs closer to one token a
   * character. Not a tokenizer.
   */
  estimate(text: string): number {
    return Math.ceil(text.length / CHARS_PER_TOKEN)
  }

  private foldFor(session: Session | SessionId | string): Fold | undefined {
    if (typeof session === 'string') {
      const live = this.home.sessions?.get(session)
      if (live) return this.advance(live)
      return this.folds.get(session)
    }
    return this.advance(session)
  }

  /** Folds every event of `session` not folded yet. Idempotent: each seq is folded once. */
  private advance(session: Session): Fold {
    let fold = this.folds.get(session.id)
    if (!fold) {
      fold = { next: 0, total: emptyUsage(), seeded: emptyUsage(), requests: 0, seededRequests: 0 }
      this.folds.set(session.id, fold)
    }
    const length = session.length
    // The copied prefix ends at the parent boundary or at the latest `seed/end`, whichever is later.
    const boundary = session.parent?.boundary
    while (fold.next < length) {
      const seq = fold.next++
      const event = session.at(seq)
      if (!event) continue
      if (event.type === 'assistant/message' && event.data.usage) {
        fold.total = addUsage(fold.total, event.data.usage)
        fold.requests++
        fold.last = { ...event.data.usage }
      }
      if (event.type === 'seed/end' || seq + 1 === boundary) {
        fold.seeded = { ...fold.total }
        fold.seededRequests = fold.requests
      }
    }
    return fold
  }
}

export namespace TokenMeter {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- no options yet; kept for profile rows
  export type Config = {}
}

export default TokenMeter
