// The abstract `ctx.storage` hub: typed key-value domains over a provider's medium.
// Providers (storage-json, storage-sqlite) implement `loadDomain` and `writeDomain`; this class owns
// validation, the in-memory authoritative copy, write serialization and change notification.
import { type Context, Service } from 'cordis'

/**
 * A value validator: returns the typed value or throws. A schemastery schema qualifies; its thrown
 * `ValidationError` carries `options.path`, which names the failing field.
 */
// `any` parameter: a schemastery schema declares its own input type, and stored data of unknown
// shape is passed to it on purpose (validating it is the point), so no narrower type fits.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type DomainSchema<T> = (value: any) => T

export type StorageErrorCode =
  | 'INVALID_DOMAIN'
  | 'INVALID_KEY'
  | 'INVALID_VALUE'
  | 'LOAD_FAILED'
  | 'WRITE_FAILED'
  | 'DISPOSED'

export class StorageError extends Error {
  constructor(
    readonly code: StorageErrorCode,
    message: string,
    readonly field?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'StorageError'
  }
}

/** One key's change. `value` is `undefined` when the key was deleted. */
export interface DomainChange<T> {
  domain: string
  key: string
  value: T | undefined
  previous: T | undefined
}

export type DomainListener<T> = (change: DomainChange<T>) => void

/** A typed handle on one domain. Reads resolve once the domain has loaded; writes resolve once durable. */
export interface Domain<T> {
  readonly name: string
  /** Resolves when the stored entries are loaded (rejects with `LOAD_FAILED` when the medium cannot be read). */
  ready(): Promise<void>
  get(key: string): Promise<T | undefined>
  /** Every valid entry, in insertion order. Entries failing the schema are left out (and logged once). */
  entries(): Promise<Array<[string, T]>>
  /** Validates, stores durably, then notifies. Resolves to the stored (schema-normalized) value. */
  set(key: string, value: T): Promise<T>
  /** Removes a key; resolves `false` when it was absent. */
  delete(key: string): Promise<boolean>
  /** Several sets and deletes (`value: undefined`) stored as one durable write: all or none. */
  update(changes: ReadonlyArray<{ key: string; value: T | undefined }>): Promise<void>
  /** Calls `listener` after each durable change. The disposer also runs when the calling plugin unloads. */
  onChange(listener: DomainListener<T>): () => void
}

/** What a provider returns for one domain: its raw entries and, for a damaged medium, one warning. */
export interface LoadedDomain {
  entries: Map<string, unknown>
  /** Logged once by the hub (for example: the file was malformed and moved aside). */
  warning?: string
}

/** One durable write: the changed keys (`value: undefined` deletes) and the domain as it will be after. */
export interface DomainWrite {
  changes: ReadonlyArray<{ key: string; value: unknown }>
  snapshot: ReadonlyMap<string, unknown>
}

export const DOMAIN_NAME = /^[a-z][a-z0-9_.-]{0,63}$/
export const MAX_KEY_LENGTH = 256

interface DomainState {
  name: string
  /** Raw JSON entries, including ones some schema rejects (kept so nothing is lost on rewrite). */
  raw: Map<string, unknown>
  version: number
  loading: Promise<void> | undefined
  loaded: boolean
  /** The tail of this domain's write chain: each write starts after the previous settled. */
  chain: Promise<unknown>
  listeners: Set<(change: DomainChange<unknown>) => void>
}

interface HubState {
  domains: Map<string, DomainState>
  disposed: boolean
}

declare module 'cordis' {
  interface Context {
    storage: StorageService
  }
  interface Events {
    /** A stored key changed durably (raw JSON values). Emitted after the domain's listeners ran. */
    'storage/changed'(change: DomainChange<unknown>): void
    /**
     * Damaged stored data was found (a malformed file moved aside, entries failing a schema). Also
     * logged at warn level; a surface that shows warnings to its user subscribes here.
     */
    'storage/warning'(warning: { domain?: string; message: string }): void
  }
}

function fieldOf(error: unknown): string | undefined {
  const path = (error as { options?: { path?: unknown } } | null)?.options?.path
  return Array.isArray(path) && path.length ? path.map(String).join('.') : undefined
}

function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  // schemastery prefixes its message with the JSON path (`$.a.b `); the field is reported separately.
  return message.replace(/^\$(\.[^\s]*)?\s+/, '')
}

function checkKey(domain: string, key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new StorageError(
      'INVALID_KEY',
      `storage domain "${domain}": a key must be a non-empty string of at most ${MAX_KEY_LENGTH} characters`,
    )
  }
}

/** A JSON copy of `value`, deep-frozen; throws for values JSON cannot carry faithfully. */
function toJson(domain: string, key: string, value: unknown): unknown {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (error) {
    throw new StorageError(
      'INVALID_VALUE',
      `storage domain "${domain}", key "${key}": the value is not JSON-serializable (${reasonOf(error)})`,
    )
  }
  if (text === undefined)
    throw new StorageError(
      'INVALID_VALUE',
      `storage domain "${domain}", key "${key}": the value is not JSON-serializable`,
    )
  return deepFreeze(JSON.parse(text))
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value)) deepFreeze(child)
  }
  return value
}

/**
 * `ctx.storage`. Every domain is loaded once (lazily, on first use) and then served from memory;
 * the medium is written before memory changes, so a failed write changes nothing.
 */
export abstract class StorageService extends Service {
  // Mutable state lives in one object: methods reached through `ctx.storage` run on a Cordis
  // shadow of this instance, where assigning a field would not reach the real instance.
  private readonly hub: HubState = { domains: new Map(), disposed: false }

  constructor(ctx: Context) {
    super(ctx, 'storage')
    ctx.effect(
      () => () => {
        this.hub.disposed = true
      },
      'storage: dispose',
    )
  }

  /** Where a domain lives (a file path, `db#domain`), used in every message. */
  abstract location(domain: string): string

  /** Reads a domain's raw entries. A missing domain is empty; a damaged one is reported through `warning`. */
  protected abstract loadDomain(domain: string): Promise<LoadedDomain>

  /** Stores one write durably (all or nothing). Called strictly one at a time per domain. */
  protected abstract writeDomain(domain: string, write: DomainWrite): Promise<void>

  /** Opens a typed handle. Handles on the same name share one stored copy; each validates with its own schema. */
  domain<T>(name: string, schema: DomainSchema<T>): Domain<T> {
    if (typeof name !== 'string' || !DOMAIN_NAME.test(name)) {
      throw new StorageError(
        'INVALID_DOMAIN',
        `storage domain name ${JSON.stringify(name)} is invalid: use a lowercase letter, then up to 63 of a-z, 0-9, ".", "_", "-"`,
      )
    }
    if (typeof schema !== 'function')
      throw new TypeError(`storage.domain("${name}"): schema must be callable (a schemastery schema)`)
    // `this.ctx` is the caller's context here, so listener registrations belong to the caller.
    return new DomainHandle<T>(this.ctx, this, this.state(name), schema)
  }

  /** @internal Logs one warning about a domain and emits `storage/warning`. */
  warn(domain: string | undefined, message: string): void {
    this.ctx.logger('storage').warn(message)
    this.ctx.emit('storage/warning', domain === undefined ? { message } : { domain, message })
  }

  /** Resolves once every write queued so far has settled. */
  async flush(): Promise<void> {
    await Promise.all([...this.hub.domains.values()].map((state) => state.chain.catch(() => {})))
  }

  private state(name: string): DomainState {
    let state = this.hub.domains.get(name)
    if (!state) {
      state = {
        name,
        raw: new Map(),
        version: 0,
        loading: undefined,
        loaded: false,
        chain: Promise.resolve(),
        listeners: new Set(),
      }
      this.hub.domains.set(name, state)
    }
    return state
  }

  /** @internal */
  load(state: DomainState): Promise<void> {
    if (state.loaded) return Promise.resolve()
    state.loading ??= (async () => {
      let loaded: LoadedDomain
      try {
        loaded = await this.loadDomain(state.name)
      } catch (error) {
        state.loading = undefined
        throw new StorageError(
          'LOAD_FAILED',
          `${this.location(state.name)}: cannot load storage domain "${state.name}": ${reasonOf(error)}`,
          undefined,
          { cause: error },
        )
      }
      if (loaded.warning) this.warn(state.name, loaded.warning)
      state.raw = new Map([...loaded.entries].map(([key, value]) => [key, deepFreeze(value)]))
      state.version++
      state.loaded = true
    })()
    return state.loading
  }

  /** @internal Queues a write on the domain's chain; memory and listeners change only after it is durable. */
  commit(state: DomainState, changes: Array<{ key: string; value: unknown }>): Promise<number> {
    const run = state.chain.then(async () => {
      if (this.hub.disposed)
        throw new StorageError('DISPOSED', `storage domain "${state.name}": the storage service has been unloaded`)
      await this.load(state)
      const next = new Map(state.raw)
      const effective: Array<{ key: string; value: unknown; previous: unknown }> = []
      for (const { key, value } of changes) {
        const previous = next.get(key)
        if (value === undefined) {
          if (!next.has(key)) continue
          next.delete(key)
        } else next.set(key, value)
        effective.push({ key, value, previous })
      }
      if (!effective.length) return 0
      try {
        await this.writeDomain(state.name, {
          changes: effective.map(({ key, value }) => ({ key, value })),
          snapshot: next,
        })
      } catch (error) {
        if (error instanceof StorageError) throw error
        throw new StorageError(
          'WRITE_FAILED',
          `${this.location(state.name)}: cannot write storage domain "${state.name}": ${reasonOf(error)}`,
          undefined,
          { cause: error },
        )
      }
      state.raw = next
      state.version++
      const logger = this.ctx.logger('storage')
      for (const { key, value, previous } of effective) {
        const change: DomainChange<unknown> = { domain: state.name, key, value, previous }
        for (const listener of [...state.listeners]) {
          try {
            listener(change)
          } catch (error) {
            logger.warn('a storage listener on domain "%s" threw: %s', state.name, reasonOf(error))
          }
        }
        this.ctx.emit('storage/changed', change)
      }
      return effective.length
    })
    state.chain = run.catch(() => {})
    return run
  }
}

class DomainHandle<T> implements Domain<T> {
  /** The typed view of the raw entries, rebuilt when the domain's version moves. */
  private view: { version: number; values: Map<string, T>; checked: Map<string, { raw: unknown; value?: T }> } = {
    version: -1,
    values: new Map(),
    checked: new Map(),
  }

  constructor(
    private readonly ctx: Context,
    private readonly service: StorageService,
    private readonly state: DomainState,
    private readonly schema: DomainSchema<T>,
  ) {}

  get name(): string {
    return this.state.name
  }

  ready(): Promise<void> {
    return this.service.load(this.state)
  }

  private validate(key: string, value: unknown): T {
    try {
      // schemastery writes defaults into the object it checks: give it a copy, never stored or caller data.
      return this.schema(value === undefined ? value : structuredClone(value))
    } catch (error) {
      const field = fieldOf(error)
      throw new StorageError(
        'INVALID_VALUE',
        `storage domain "${this.state.name}", key "${key}"${field ? `, field "${field}"` : ''}: ${reasonOf(error)}`,
        field,
      )
    }
  }

  private current(): Map<string, T> {
    if (this.view.version === this.state.version) return this.view.values
    const values = new Map<string, T>()
    const checked = new Map<string, { raw: unknown; value?: T }>()
    const rejected: string[] = []
    for (const [key, raw] of this.state.raw) {
      let entry = this.view.checked.get(key)
      if (!entry || entry.raw !== raw) {
        try {
          entry = { raw, value: deepFreeze(this.validate(key, raw)) }
        } catch (error) {
          entry = { raw }
          rejected.push((error as Error).message)
        }
      }
      checked.set(key, entry)
      if ('value' in entry) values.set(key, entry.value as T)
    }
    if (rejected.length) {
      const shown = rejected.slice(0, 3).join('; ')
      const more = rejected.length > 3 ? `; and ${rejected.length - 3} more` : ''
      const noun = rejected.length === 1 ? 'entry' : 'entries'
      this.service.warn(
        this.state.name,
        `${this.service.location(this.state.name)}: ${rejected.length} stored ${noun} ignored (kept in storage until overwritten): ${shown}${more}`,
      )
    }
    this.view = { version: this.state.version, values, checked }
    return values
  }

  async get(key: string): Promise<T | undefined> {
    checkKey(this.state.name, key)
    await this.ready()
    return this.current().get(key)
  }

  async entries(): Promise<Array<[string, T]>> {
    await this.ready()
    return [...this.current()]
  }

  async set(key: string, value: T): Promise<T> {
    checkKey(this.state.name, key)
    const stored = toJson(this.state.name, key, this.validate(key, value))
    await this.service.commit(this.state, [{ key, value: stored }])
    return this.current().get(key) ?? (stored as T)
  }

  async delete(key: string): Promise<boolean> {
    checkKey(this.state.name, key)
    return (await this.service.commit(this.state, [{ key, value: undefined }])) > 0
  }

  async update(changes: ReadonlyArray<{ key: string; value: T | undefined }>): Promise<void> {
    const prepared = changes.map(({ key, value }) => {
      checkKey(this.state.name, key)
      return { key, value: value === undefined ? undefined : toJson(this.state.name, key, this.validate(key, value)) }
    })
    await this.service.commit(this.state, prepared)
  }

  onChange(listener: DomainListener<T>): () => void {
    if (typeof listener !== 'function')
      throw new TypeError(`storage domain "${this.state.name}": onChange needs a function`)
    const typed = (value: unknown, key: string): T | undefined => {
      if (value === undefined) return undefined
      try {
        return this.validate(key, value)
      } catch {
        return undefined
      }
    }
    const listeners = this.state.listeners
    const dispose = this.ctx.effect(() => {
      const entry = (change: DomainChange<unknown>) =>
        listener({
          domain: change.domain,
          key: change.key,
          value: typed(change.value, change.key),
          previous: typed(change.previous, change.key),
        })
      listeners.add(entry)
      return () => void listeners.delete(entry)
    }, `storage:onChange:${this.state.name}`)
    return () => void dispose()
  }
}
