// @dsh/scope: per-agent scoped registrations.
//
// A `ScopedRegistry<T>` holds items under a key (a tool name, a prompt section id). Items registered
// without a scope are global; items registered under a scope (normally `scopeKey(agentId)`) are
// visible only when resolving that scope, and there they shadow the global item with the same key.
// Registries built on it (tools, system prompt) wrap `register()` in `ctx.effect()` so a plugin's
// registrations unwind when it unloads.

declare const scopeKeyBrand: unique symbol
/** Opaque scope key. Mint agent scopes with `scopeKey(agentId)`; any other string is an ad-hoc scope. */
export type ScopeKey = string & { readonly [scopeKeyBrand]: true }

/** The scope key of one agent. Stable: the same agent id always maps to the same key. */
export function scopeKey(agentId: string): ScopeKey {
  if (typeof agentId !== 'string' || agentId === '') throw new TypeError('scopeKey: agentId must be a non-empty string')
  return `agent:${agentId}` as ScopeKey
}

/** A scope to resolve: one key, or a chain from most to least specific (e.g. agent, then its preset). */
export type ScopeChain = string | readonly string[] | undefined

export interface ScopedRegistryOptions<T> {
  /** The key that decides shadowing (e.g. `(tool) => tool.name`). */
  key: (item: T) => string
  /**
   * What a second registration of the same key in the same scope does.
   * - `'throw'` (default): throws `ScopeConflictError`.
   * - `'stack'`: the newer item wins; disposing it reveals the older one again.
   */
  duplicates?: 'throw' | 'stack'
  /** Used in error messages, e.g. `'tool'`, `'prompt section'`. */
  label?: string
}

export interface RegisterOptions {
  /** Omit for a global registration. */
  scope?: string
}

/** One resolved entry, with where it came from. */
export interface ResolvedEntry<T> {
  key: string
  item: T
  /** `undefined` for a global item. */
  scope: string | undefined
}

/** Returned by `register()`: removes the registration. Idempotent. */
export type Disposer = () => void

export class ScopeConflictError extends Error {
  override name = 'ScopeConflictError'
  constructor(
    readonly label: string,
    readonly key: string,
    readonly scope: string | undefined,
  ) {
    super(`${label} "${key}" is already registered ${scope === undefined ? 'globally' : `in scope "${scope}"`}`)
  }
}

interface Slot<T> {
  key: string
  scope: string | undefined
  item: T
  /** Global registration order; decides the stable output order. */
  order: number
}

const GLOBAL = '\u0000global'

/**
 * Items keyed by `options.key`, global or scoped.
 *
 * Resolution order is stable: the result lists keys in the order their *first still-live*
 * registration happened (global or scoped), so shadowing a global item keeps its position and a
 * scope-only key appears where it was first registered. Disposers are idempotent.
 */
export class ScopedRegistry<T> {
  private readonly keyOf: (item: T) => string
  private readonly duplicates: 'throw' | 'stack'
  private readonly label: string
  /** scope bucket -> key -> stack of live slots (last one wins). */
  private readonly buckets = new Map<string, Map<string, Slot<T>[]>>()
  private readonly listeners = new Set<() => void>()
  private counter = 0
  private revision = 0

  constructor(options: ScopedRegistryOptions<T>) {
    this.keyOf = options.key
    this.duplicates = options.duplicates ?? 'throw'
    this.label = options.label ?? 'item'
  }

  /** Increments on every change; use it to cache a resolved view. */
  get version(): number {
    return this.revision
  }

  register(item: T, options: RegisterOptions = {}): Disposer {
    const key = this.keyOf(item)
    if (typeof key !== 'string' || key === '') throw new TypeError(`${this.label}: key must be a non-empty string`)
    const scope = options.scope
    if (scope !== undefined && (typeof scope !== 'string' || scope === '')) {
      throw new TypeError(`${this.label} "${key}": scope must be a non-empty string when given`)
    }
    const bucketName = scope ?? GLOBAL
    let bucket = this.buckets.get(bucketName)
    if (!bucket) this.buckets.set(bucketName, (bucket = new Map()))
    let stack = bucket.get(key)
    if (stack && stack.length > 0 && this.duplicates === 'throw') throw new ScopeConflictError(this.label, key, scope)
    if (!stack) bucket.set(key, (stack = []))
    const slot: Slot<T> = { key, scope, item, order: this.counter++ }
    stack.push(slot)
    this.changed()
    let live = true
    return () => {
      if (!live) return
      live = false
      const current = this.buckets.get(bucketName)?.get(key)
      if (!current) return
      const index = current.indexOf(slot)
      if (index >= 0) current.splice(index, 1)
      if (current.length === 0) {
        const b = this.buckets.get(bucketName)!
        b.delete(key)
        if (b.size === 0) this.buckets.delete(bucketName)
      }
      this.changed()
    }
  }

  /**
   * The items visible from `scope`: every global item, with same-key items of the scope (or of the
   * chain, most specific first) shadowing it, plus keys that exist only in the scope. Without a
   * scope: the global items only.
   */
  resolve(scope?: ScopeChain): T[] {
    return this.resolveEntries(scope).map((entry) => entry.item)
  }

  /** Like `resolve()`, with each item's key and origin scope. */
  resolveEntries(scope?: ScopeChain): ResolvedEntry<T>[] {
    const chain = toChain(scope)
    // Position of a key: the earliest live registration of it among the consulted buckets.
    const picked = new Map<string, { slot: Slot<T>; position: number }>()
    const consult = [...chain, GLOBAL]
    for (let rank = consult.length - 1; rank >= 0; rank--) {
      // Walk from least specific (global) to most specific so more specific buckets overwrite.
      const bucket = this.buckets.get(consult[rank])
      if (!bucket) continue
      for (const [key, stack] of bucket) {
        const top = stack[stack.length - 1]
        const first = stack[0].order
        const previous = picked.get(key)
        picked.set(key, { slot: top, position: previous ? Math.min(previous.position, first) : first })
      }
    }
    return [...picked.values()]
      .sort((a, b) => a.position - b.position)
      .map(({ slot }) => ({ key: slot.key, item: slot.item, scope: slot.scope }))
  }

  /** The item `key` resolves to from `scope` (scope chain first, then global), if any. */
  get(key: string, scope?: ScopeChain): T | undefined {
    for (const bucketName of [...toChain(scope), GLOBAL]) {
      const stack = this.buckets.get(bucketName)?.get(key)
      if (stack && stack.length > 0) return stack[stack.length - 1].item
    }
    return undefined
  }

  has(key: string, scope?: ScopeChain): boolean {
    return this.get(key, scope) !== undefined
  }

  /** Items registered in exactly this scope (`undefined`: global), in registration order, no shadowing. */
  own(scope?: string): T[] {
    const bucket = this.buckets.get(scope ?? GLOBAL)
    if (!bucket) return []
    return [...bucket.values()]
      .map((stack) => stack[stack.length - 1])
      .sort((a, b) => a.order - b.order)
      .map((slot) => slot.item)
  }

  /** Scopes that currently hold at least one item (global excluded). */
  scopes(): string[] {
    return [...this.buckets.keys()].filter((name) => name !== GLOBAL)
  }

  /** Called synchronously after every register/dispose. Returns an unsubscribe function. */
  onChange(listener: () => void): Disposer {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  private changed(): void {
    this.revision++
    for (const listener of [...this.listeners]) listener()
  }
}

function toChain(scope: ScopeChain): readonly string[] {
  if (scope === undefined) return []
  if (typeof scope === 'string') return [scope]
  return scope
}

// ---- standing scopes ----
//
// A standing scope is carried by a Cordis context (set on a context derived with `ctx.extend`):
// plugins mounted under that context inherit it through the prototype chain, and registries that
// honour it (tools, system prompt) register their entries into it when the entry names no scope.
// This is how a composition (an agent preset) mounts ordinary plugins for one agent.

const STANDING = Symbol.for('dsh.scope.standing')

/** Anything with Cordis' `extend(meta)`; kept structural so this package has no Cordis dependency. */
export interface Extendable {
  extend(meta?: object): this
}

/** A context derived from `ctx` whose plugins register into `scope` by default. */
export function withStandingScope<C extends Extendable>(ctx: C, scope: string): C {
  if (typeof scope !== 'string' || scope === '')
    throw new TypeError('withStandingScope: scope must be a non-empty string')
  return ctx.extend({ [STANDING]: scope })
}

/** The standing scope `ctx` inherits, or undefined (a global context). */
export function standingScope(ctx: object | undefined): string | undefined {
  const value = ctx ? (ctx as Record<symbol, unknown>)[STANDING] : undefined
  return typeof value === 'string' ? value : undefined
}
