// @dsh/compaction: the compaction seam. It defines `ctx.compaction` (the abstract
// `CompactionEngine` every backend subclasses), the `compaction/*` session events, the per-session
// lock every compaction runs under, and pure helpers to measure how large the next request is.
//
// Contract: a compaction shortens what the model sees by `session.surface.replaceRange()`, which
// logs a `surface/replace` event; the raw log keeps every original event, so replay, restore and
// fork rebuild the compacted history from the log alone.
import { Service, type Context } from 'cordis'
import type { Agent } from '@dsh/agent'
import type { Message, TokenUsage } from '@dsh/llm'
import type { LoggedError, Session, SessionId, SurfaceNode } from '@dsh/session'
import { reclaimMemory, type ReclaimOptions, type ReclaimResult } from './reclaim.ts'

export * from './measure.ts'
export { heapSlack, reclaimMemory, type ReclaimOptions, type ReclaimResult } from './reclaim.ts'

/** Why a compaction runs: pressure before a request, a provider overflow error, or a human. */
export type CompactionReason = 'auto' | 'overflow' | 'manual'

/** Branded id correlating the `compaction/*` events of one run. */
declare const compactionIdBrand: unique symbol
export type CompactionId = string & { readonly [compactionIdBrand]: true }
export const asCompactionId = (value: string): CompactionId => value as CompactionId

declare module '@dsh/session' {
  interface SessionEventMap {
    /**
     * A compaction began. `[fromSeq, toSeq)` is the raw range it will replace; the summary request
     * is the surface before `toSeq` replayed under the last `request/header` (provider, model,
     * system, tools), followed by one user message holding `instruction`.
     */
    'compaction/start': {
      id: string
      reason: CompactionReason
      engine: string
      provider: string
      model: string
      fromSeq: number
      toSeq: number
      /** Estimated tokens of the next request before compacting. */
      tokensBefore: number
      instruction: string
      focus?: string
    }
    /** The model's summary text and the usage of the summary request. */
    'compaction/summary': { id: string; text: string; usage?: TokenUsage }
    /** `compacted`: a `surface/replace` at `replaceSeq` applied it. `failed`: history is untouched. */
    'compaction/end': {
      id: string
      status: 'compacted' | 'failed'
      error?: LoggedError
      replaceSeq?: number
      /** Estimated tokens of the next request after compacting. */
      tokensAfter?: number
    }
  }
}

/** Session event types this seam declares (register them with session persistence). */
export const COMPACTION_EVENT_TYPES = ['compaction/start', 'compaction/summary', 'compaction/end'] as const

export interface CompactOptions {
  reason: CompactionReason
  /** What the summary should concentrate on (from `/compact <focus>`). */
  focus?: string
  /** The agent driving the session, when there is one (its model selection may be used). */
  agent?: Agent
  /** Messages about to be entered that the next request will carry (counted as pressure). */
  pending?: Message[]
  signal?: AbortSignal
}

export type CompactionResult =
  | {
      status: 'compacted'
      id: CompactionId
      fromSeq: number
      toSeq: number
      tokensBefore: number
      tokensAfter: number
      summary: string
    }
  | { status: 'skipped'; reason: string }
  | { status: 'failed'; id: CompactionId; error: LoggedError }

/** The shape `session.surface.replaceRange` meta takes when a compaction wrote it. */
export interface CompactionReplaceMeta {
  by: string
  compaction: string
  [key: string]: unknown
}

declare module 'cordis' {
  interface Context {
    compaction: CompactionEngine
  }
  interface Events {
    /**
     * A compaction of `session` is about to run (it holds the session's lock); awaited with
     * `ctx.parallel`, so a listener (a PreCompact hook) finishes before the history changes. A
     * listener that throws does not stop the compaction.
     */
    'compaction/before'(session: Session, options: CompactOptions): Promise<void> | void
    /** Observe-only: a compaction of `session` finished (any status). */
    'compaction/finished'(session: Session, result: CompactionResult): void
    /**
     * Observe-only: after a compaction of `session`, the engine asked V8 to give memory back
     * (`reclaimMemoryAfterCompaction`); RSS before and after, and the CPU it took.
     */
    'compaction/reclaimed'(session: Session, result: ReclaimResult): void
  }
}

/**
 * `ctx.compaction`: the Service Definition. A backend implements `run()`; callers use
 * `compact()`, which serializes runs per session (one at a time; later callers wait their turn),
 * so an automatic compaction before a request never races a manual one.
 */
export abstract class CompactionEngine extends Service {
  // Shared by caller views of the service; mutated in place.
  private readonly locks = new Map<string, Promise<unknown>>()

  constructor(
    ctx: Context,
    readonly engine: string,
  ) {
    super(ctx, 'compaction')
  }

  /**
   * Whether a successful compaction is followed by V8's memory-reducing full collection
   * (`reclaimMemory()`), and with which options: the moment the context shrinks is the one
   * moment a long session's heap can shrink with it. Off (undefined) in the seam; a backend turns
   * it on from its config.
   */
  protected reclaimMemoryAfterCompaction(): ReclaimOptions | undefined {
    return undefined
  }

  /** Compacts `session` now (waiting for any compaction of it already running). */
  compact(session: Session, options: CompactOptions): Promise<CompactionResult> {
    return this.exclusive(session.id, async () => {
      await this.ctx.parallel('compaction/before', session, options).catch(() => {})
      const result = await this.run(session, options)
      this.ctx.emit('compaction/finished', session, result)
      const reclaim = result.status === 'compacted' ? this.reclaimMemoryAfterCompaction() : undefined
      if (reclaim) {
        // After the run returned: its summary request and the replaced surface are garbage now.
        // Best effort: the compaction has succeeded whatever the collection does.
        try {
          const reclaimed = reclaimMemory(reclaim)
          if (reclaimed) this.ctx.emit('compaction/reclaimed', session, reclaimed)
        } catch (error) {
          this.ctx.logger('compaction').warn('giving memory back after the compaction failed: %s', error)
        }
      }
      return result
    })
  }

  /** True while a compaction of the session runs or waits. */
  isCompacting(session: Session | SessionId): boolean {
    return this.locks.has(typeof session === 'string' ? session : session.id)
  }

  /** Resolves when no compaction of the session runs or waits. */
  async settled(session: Session | SessionId): Promise<void> {
    const id = typeof session === 'string' ? session : session.id
    for (let lock = this.locks.get(id); lock; lock = this.locks.get(id)) await lock.catch(() => {})
  }

  /** The backend's work, called under the session's lock. Must not throw for model failures. */
  protected abstract run(session: Session, options: CompactOptions): Promise<CompactionResult>

  private exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(id) ?? Promise.resolve()
    const current = previous.catch(() => {}).then(fn)
    this.locks.set(id, current)
    const release = () => {
      if (this.locks.get(id) === current) this.locks.delete(id)
    }
    current.then(release, release)
    return current
  }
}

/**
 * The head a compaction keeps verbatim: the leading run of user messages up to and including the
 * first human one (session-start context from plugins, then the task). Returns the node count, or
 * 0 when the surface does not start that way.
 */
export function pinnedHeadLength(session: Session, nodes: readonly SurfaceNode[] = session.surface.nodes): number {
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]
    if (node.kind !== 'user/message') return 0
    const event = session.at(node.seq)
    if (event?.type === 'user/message' && event.data.source.kind === 'human') return i + 1
  }
  return 0
}

/** Where a surface node sits on the raw log: its seq, or the start of the range it replaces. */
export const nodePosition = (node: SurfaceNode): number => node.replaces?.fromSeq ?? node.seq

export default CompactionEngine
