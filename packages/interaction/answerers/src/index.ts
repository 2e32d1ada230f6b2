// @dsh/answerers: the channel list shared by the human-interaction seams (approvals, questions).
// Channels (ACP, SDK, a headless policy) register answerers; the newest one whose `accepts()`
// takes a request answers it; removing an answerer aborts its `gone` signal so its pending
// requests settle instead of hanging.
import type { Context } from 'cordis'

export interface Answerer<R> {
  name: string
  /** Whether this channel can answer `request` (default: every request). */
  accepts?(request: R): boolean
}

export interface AnswererEntry<A> {
  answerer: A
  /** Aborted when the answerer is removed. */
  gone: AbortController
}

export type Pick<A> = { entry: AnswererEntry<A> } | { error: string } | undefined

export class AnswererList<R, A extends Answerer<R>> {
  private readonly entries: AnswererEntry<A>[] = []

  /** `label` names the seam in messages, e.g. `approval` or `question`. */
  constructor(private readonly label: string) {}

  /**
   * Adds `answerer` as an effect of `ctx`'s plugin: undone by the disposer or when that plugin
   * unloads. Throws a TypeError for a malformed answerer.
   */
  register(ctx: Context, answerer: A & { answer?: unknown }, method = `${this.label}.registerAnswerer`): () => void {
    if (answerer === null || typeof answerer !== 'object' || typeof answerer.answer !== 'function') {
      throw new TypeError(`${method}: expected {name, answer}`)
    }
    if (typeof answerer.name !== 'string' || answerer.name === '')
      throw new TypeError(`${method}: name must be a non-empty string`)
    const entries = this.entries
    const dispose = ctx.effect(() => {
      const entry: AnswererEntry<A> = { answerer, gone: new AbortController() }
      entries.push(entry)
      return () => {
        const index = entries.indexOf(entry)
        if (index >= 0) entries.splice(index, 1)
        entry.gone.abort(new Error(`${this.label} answerer "${answerer.name}" was removed`))
      }
    }, `${this.label}-answerer:${answerer.name}`)
    return () => void dispose()
  }

  /** Names, newest first. */
  names(): string[] {
    return this.entries.map((entry) => entry.answerer.name).reverse()
  }

  /**
   * The newest answerer that accepts `request`; `{error}` when an `accepts()` throws (the caller
   * fails closed with it); undefined when none accepts.
   */
  pick(request: R, what = 'the request'): Pick<A> {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i]!
      try {
        if (!entry.answerer.accepts || entry.answerer.accepts(request)) return { entry }
      } catch (error) {
        return {
          error: `${this.label} answerer "${entry.answerer.name}" failed to route ${what}: ${error instanceof Error ? error.message : String(error)}`,
        }
      }
    }
    return undefined
  }

  /** Whether some answerer would take `request` now (an `accepts()` that throws counts as no). */
  available(request: R): boolean {
    const picked = this.pick(request)
    return picked !== undefined && 'entry' in picked
  }
}
