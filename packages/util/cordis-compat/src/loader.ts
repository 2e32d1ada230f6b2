// @dsh/cordis-compat/loader: the @cordisjs/plugin-loader internals dsh reads (pinned 1.0.0-rc.0).
// Node only: the Loader itself imports node:module. test/loader.test.ts pins each assumption.
import type { Context, Fiber } from 'cordis'
import { Entry } from '@cordisjs/plugin-loader'

declare module '@cordisjs/plugin-loader' {
  interface Loader<C extends Context = Context> {
    /**
     * The Loader dsh boots (`DshLoader` of @dsh/app-boot) takes the exit status: it disposes the
     * tree (after `app/stopping`) and exits with `code` (default 0). The loader's own typings
     * declare `exit()` bare; declared here so a package can call `ctx.get('loader')?.exit(code)`
     * without importing the launcher.
     */
    exit(code?: number): void
  }
}

/**
 * The Loader entry a context belongs to: an entry's context carries its `Entry` under `Entry.key`.
 * The Loader emits `internal/error` (an import failure) with the entry's context as `this`, so a
 * listener names the failing row with `entryOfContext(this)`.
 */
export function entryOfContext(ctx: unknown): Entry | undefined {
  if (!ctx || typeof ctx !== 'object') return undefined
  return (ctx as Record<symbol, Entry | undefined>)[Entry.key]
}

/**
 * The Loader entry a live fiber was mounted under: a row's own fiber, or any plugin a row mounted
 * beneath it (contexts inherit `Entry.key` from the entry's context). `undefined` for a fiber
 * outside the Loader tree or already disposed.
 */
export function entryOfFiber(fiber: Fiber<Context>): Entry | undefined {
  return fiber.uid ? entryOfContext(fiber.parent) : undefined
}

/**
 * An entry's import-and-apply task while it runs (the private `_initTask`; cleared once the
 * module is imported and the fiber created), else `undefined`.
 */
export function entryInitTask(entry: Entry): Promise<unknown> | undefined {
  return (entry as unknown as { _initTask?: Promise<unknown> })._initTask
}

/**
 * Makes the `await()` of every fiber mounted by (or beneath) a Loader row under `ctx` from now on resolve (with the
 * fiber) instead of rejecting when the row failed; the error stays readable through `fiberError`.
 * The Loader awaits each row fiber with a trailing `.finally()` and no catch, so a failed row is
 * otherwise an unhandled rejection; callers that report row failures themselves (the boot, the
 * inventory) install this before mounting. Returns the listener's disposer.
 */
export function settleEntryFibers(ctx: Context): () => void {
  return ctx.on('internal/plugin', (fiber: Fiber<Context>) => {
    // A fiber already wrapped (re-announced on unload) keeps its own `await`.
    if (!entryOfFiber(fiber) || Object.hasOwn(fiber, 'await')) return
    const original = fiber.await.bind(fiber)
    fiber.await = () => original().catch(() => fiber)
  })
}
