import { symbols } from 'cordis'

/**
 * The object behind a Cordis service reference. Methods reached through `ctx.x` run with `this`
 * bound to a per-caller shadow, and every property read there builds fresh proxies (Cordis'
 * call tracing); the per-event paths (append, flush, the batch writer) read their own state and
 * call their own helpers through the plain object instead. A plain object is returned as is.
 */
export function unshadow<T extends object>(value: T): T {
  return ((value as Record<symbol, unknown>)[symbols.original] as T | undefined) ?? value
}
