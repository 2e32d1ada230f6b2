// @dsh/cordis-compat: every read of a Cordis private field, in one place.
// Cordis 4 (pinned 4.0.0-rc.10) keeps a few facts dsh needs behind names its typings mark private
// or internal: a fiber's error and resolved injects, its numeric state, the events service's
// listener table, the symbol behind a traceable proxy. Each is read here through one named
// function, and test/compat.test.ts pins each assumption against the real Cordis, one test per
// assumption, so a Cordis upgrade that moves one of them fails exactly one named test.
// This entry is browser-safe (it imports `cordis` only); the Loader's internals are in ./loader.
import { symbols, type Context } from 'cordis'

/** A Cordis fiber as these functions read it (the public shape; the private fields are read here). */
export interface FiberLike {
  state: number
  inject?: Record<string, unknown>
}

/** Cordis' `FiberState` names, in the order of its numeric values (a `const enum`, unreadable under isolatedModules). */
export const FIBER_STATES = ['pending', 'loading', 'active', 'failed', 'disposed', 'unloading'] as const
export type FiberStateName = (typeof FIBER_STATES)[number]

/** `FiberState.ACTIVE`: the plugin applied and every inject it names is provided. */
export const FIBER_ACTIVE = 2

/** The name of a fiber's state (`pending` for a number Cordis did not have when this was written). */
export function fiberStateName(fiber: FiberLike): FiberStateName {
  return FIBER_STATES[fiber.state] ?? 'pending'
}

/** True when the fiber is `FiberState.ACTIVE`. */
export function isFiberActive(fiber: FiberLike): boolean {
  return fiber.state === FIBER_ACTIVE
}

/**
 * The error a fiber failed with (its config did not validate, or its `apply` threw), kept on the
 * private `_error` until the fiber is updated; `undefined` when it has none.
 */
export function fiberError(fiber: FiberLike): unknown {
  const error = (fiber as { _error?: unknown })._error
  return error === null ? undefined : error
}

/**
 * The names in a fiber's `inject` that no active service satisfies: Cordis records each resolved
 * implementation in the private `_store`, by service name, and leaves the unmet ones out.
 */
export function unmetInjects(fiber: FiberLike): string[] {
  const store = (fiber as { _store?: Record<string, unknown> })._store ?? {}
  return Object.keys(fiber.inject ?? {}).filter((name) => !(name in store))
}

/** One listener of an event, with the plugin that registered it. */
export interface Listener {
  callback: (...args: unknown[]) => unknown
  /** The registering fiber's name (`root` for the root context), or `unknown plugin`. */
  plugin: string
}

interface Hook {
  ctx?: { fiber?: { name?: string } }
  callback: (...args: unknown[]) => unknown
}

type HookTable = Record<string, Hook[] | undefined>
const hookTables = new WeakMap<Context, HookTable | null>()

function pluginNameOf(hook: Hook): string {
  try {
    return hook.ctx?.fiber?.name || 'unknown plugin'
  } catch {
    return 'unknown plugin'
  }
}

/**
 * The listeners of event `name`, in dispatch order, each with its plugin's name: a copy of the
 * events service's private table (`ctx.events._hooks`, arrays of `{ctx, callback}` by event name).
 * `undefined` when the table does not have that shape, so a caller falls back to the plain
 * dispatch and loses only the names. The table is looked up once per context (reading
 * `ctx.events` builds a proxy per read, and callers run this per session event).
 */
export function listenersOf(ctx: Context, name: string): Listener[] | undefined {
  let table = hookTables.get(ctx)
  if (table === undefined) {
    table = ((ctx.events as unknown as { _hooks?: HookTable })._hooks ?? null) as HookTable | null
    hookTables.set(ctx, table)
  }
  if (!table || typeof table !== 'object') return undefined
  const hooks = table[name] ?? []
  if (!Array.isArray(hooks) || !hooks.every((h) => typeof h?.callback === 'function')) return undefined
  return hooks.map((hook) => ({ callback: hook.callback, plugin: pluginNameOf(hook) }))
}

/**
 * The plain object behind a Cordis service reference (`ctx.foo`, or `this` in a service method),
 * read through `symbols.original`, the symbol a traceable proxy answers with its target. Anything
 * that is not such a proxy (a plain object, a function, a primitive, `null`) comes back as given.
 */
export function originalOf<T>(value: T): T {
  if (value === null || value === undefined || (typeof value !== 'object' && typeof value !== 'function')) return value
  return ((value as Record<symbol, unknown>)[symbols.original] as T | undefined) ?? value
}
