// The abstract `ctx.settings` service: snapshot publication, change listeners and typed sections.
// Providers own storage; they call `publish()` with every new document they accept.
import { type Context, Service } from 'cordis'
import {
  checkNamespace,
  checkPatch,
  checkValue,
  deepFreeze,
  isPlainObject,
  sameValue,
  type SettingsPatch,
  type SettingsRecord,
} from './patch.ts'
import { checkSection, formatProblem, unknownSection, type SettingsProblem } from './check.ts'

/** Why a namespace changed: the first read, an external edit picked up, or a write through `update`/`replace`. */
export type SettingsChangeCause = 'load' | 'reload' | 'update'

export interface SettingsChange {
  namespace: string
  /** The new section (frozen), `undefined` when it was removed. */
  value: unknown
  previous: unknown
  cause: SettingsChangeCause
}

export type SettingsListener = (value: unknown, previous: unknown, change: SettingsChange) => void

export interface SettingsWriteOptions {
  /**
   * Called with the section as it would be written (after merging with the latest stored
   * document, under the provider's writer lock). Throwing aborts the write; nothing is stored.
   */
  validate?(next: SettingsRecord | undefined): void
}

/**
 * A section validator: returns the typed value or throws. A schemastery schema qualifies; a
 * thrown error with `options.path` (schemastery's `ValidationError`) names the failing field.
 * It must accept `undefined` (an absent section) and return the plugin's defaults for it.
 */
// `any` parameter: a schemastery schema declares its own input type, and we pass it stored data
// of unknown shape on purpose (validating it is the point), so no narrower parameter type fits.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type SectionSchema<T> = (value: any) => T

/** A section (or a write) failed its schema. Carries where, never more than the validator said. */
export class SettingsValidationError extends Error {
  readonly code = 'INVALID_SETTINGS'
  constructor(
    readonly location: string,
    readonly namespace: string,
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${location}: section "${namespace}", field "${field}": ${reason}`)
    this.name = 'SettingsValidationError'
  }
}

/** The stored document could not be used (malformed file, failed write, lock timeout). */
export class SettingsError extends Error {
  constructor(
    readonly code: 'MALFORMED' | 'WRITE_FAILED' | 'LOCK_TIMEOUT' | 'DISPOSED',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'SettingsError'
  }
}

declare module 'cordis' {
  interface Context {
    settings: SettingsService
  }
  interface Events {
    /** One namespace's section changed (from any cause). Emitted after `onChange` listeners ran. */
    'settings/changed'(change: SettingsChange): void
  }
}

function fieldOf(error: unknown, namespace: string): string {
  const path = (error as { options?: { path?: unknown } } | null)?.options?.path
  if (Array.isArray(path) && path.length) return [namespace, ...path.map(String)].join('.')
  return namespace
}

function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  // schemastery prefixes its message with the JSON path (`$.a.b `); the field is reported separately.
  return message.replace(/^\$(\.[^\s]*)?\s+/, '')
}

interface State {
  document: Readonly<Record<string, unknown>>
  listeners: Map<string, Set<SettingsListener>>
  /** Namespaces a plugin read through `section()` or `claim()`, with the schema it used (if any). */
  claims: Map<string, SectionSchema<unknown> | undefined>
}

/**
 * `ctx.settings`: one document of namespaced sections (a section per plugin). Reads are
 * synchronous over the last good snapshot; writes go through the provider and resolve once
 * durable. Listener registrations are effects of the calling plugin.
 */
export abstract class SettingsService extends Service {
  // Mutable state lives in one object: methods reached through `ctx.settings` run on a Cordis
  // shadow of this instance, where assigning a field would not reach the real instance.
  private readonly published: State = { document: deepFreeze({}), listeners: new Map(), claims: new Map() }

  constructor(ctx: Context) {
    super(ctx, 'settings')
  }

  /** Human-readable place the settings live (a file path), used in every message. */
  abstract readonly location: string

  /** Deep-merges `patch` into the namespace's section and stores the result durably. */
  abstract update(namespace: string, patch: SettingsPatch, options?: SettingsWriteOptions): Promise<void>

  /** Replaces the whole section (`undefined` removes it) and stores the result durably. */
  abstract replace(namespace: string, value: SettingsRecord | undefined, options?: SettingsWriteOptions): Promise<void>

  /** The raw section (deep-frozen) or `undefined`. Not validated: prefer `section()`. */
  get(namespace: string): unknown {
    checkNamespace(namespace)
    return this.published.document[namespace]
  }

  /** Namespaces present in the current document. */
  namespaces(): string[] {
    return Object.keys(this.published.document)
  }

  /** Calls `listener` whenever the namespace's section changes. The disposer also runs when the calling plugin unloads. */
  onChange(namespace: string, listener: SettingsListener): () => void {
    checkNamespace(namespace)
    if (typeof listener !== 'function') throw new TypeError('settings.onChange: listener must be a function')
    const listeners = this.published.listeners
    const dispose = this.ctx.effect(() => {
      let set = listeners.get(namespace)
      if (!set) listeners.set(namespace, (set = new Set()))
      // Wrapped so registering the same function twice yields two independent registrations.
      const entry: SettingsListener = (value, previous, change) => listener(value, previous, change)
      set.add(entry)
      return () => {
        set.delete(entry)
        if (!set.size && listeners.get(namespace) === set) listeners.delete(namespace)
      }
    }, `settings:onChange:${namespace}`)
    return () => void dispose()
  }

  /**
   * A validated, typed view of one section. An invalid section never throws here: `value` falls
   * back to the schema's defaults and `error` says what was wrong (logged once per bad content).
   */
  section<T>(namespace: string, schema: SectionSchema<T>): SettingsSection<T> {
    checkNamespace(namespace)
    if (typeof schema !== 'function')
      throw new TypeError(`settings.section("${namespace}"): schema must be callable (a schemastery schema)`)
    let defaults: T
    try {
      defaults = schema(undefined)
    } catch (error) {
      throw new TypeError(
        `settings.section("${namespace}"): the schema must accept an absent section and give defaults (${reasonOf(error)})`,
      )
    }
    this.published.claims.set(namespace, schema as SectionSchema<unknown>)
    return new SettingsSection<T>(this.ctx, this, namespace, schema, defaults)
  }

  /**
   * Marks a namespace as read by the calling plugin without a typed view (a plugin that reads the
   * raw section with `get()` and checks it itself), so the start check does not call it unknown.
   * With a schema, the start check validates the section against it too.
   */
  claim(namespace: string, schema?: SectionSchema<unknown>): void {
    checkNamespace(namespace)
    const claims = this.published.claims
    if (!claims.get(namespace) || schema) claims.set(namespace, schema)
  }

  /** Namespaces claimed so far (through `section()` or `claim()`), sorted. */
  claimed(): string[] {
    return [...this.published.claims.keys()].sort()
  }

  /**
   * The start check: each section of the document that no plugin claimed and that is not in
   * `known` (namespaces other packages of the installation declare) is unknown; each claimed
   * section is validated against its schema, unknown keys included. Problems carry the line
   * where the provider can locate them (see `locate`).
   */
  check(known: Iterable<string> = []): SettingsProblem[] {
    const claims = this.published.claims
    const knownSet = new Set([...claims.keys(), ...known])
    const problems: SettingsProblem[] = []
    for (const [namespace, raw] of Object.entries(this.published.document)) {
      if (!knownSet.has(namespace)) problems.push(unknownSection(namespace, [...knownSet]))
      else {
        const schema = claims.get(namespace)
        if (schema) problems.push(...checkSection(namespace, schema, raw))
      }
    }
    for (const problem of problems) problem.line ??= this.locate(problem.path)
    return problems
  }

  /** One line for a problem of `check()`: `<location>:<line>: <key>: <what>`. */
  formatProblem(problem: SettingsProblem): string {
    return formatProblem(this.location, problem)
  }

  /** The 1-based line of the key at `path` (namespace first) in the stored document, if the provider knows it. */
  protected locate(_path: readonly string[]): number | undefined {
    return undefined
  }

  /** Runs `schema` over a candidate section, turning its failure into a `SettingsValidationError`. */
  validate<T>(namespace: string, schema: SectionSchema<T>, value: unknown): T {
    try {
      return schema(value)
    } catch (error) {
      throw new SettingsValidationError(this.location, namespace, fieldOf(error, namespace), reasonOf(error))
    }
  }

  /**
   * Providers call this with each newly accepted document. Changed namespaces (structural
   * comparison) notify their listeners, then `settings/changed` is emitted for each.
   */
  protected publish(next: Record<string, unknown>, cause: SettingsChangeCause): SettingsChange[] {
    const previous = this.published.document
    const document: Record<string, unknown> = {}
    const changes: SettingsChange[] = []
    for (const namespace of new Set([...Object.keys(previous), ...Object.keys(next)])) {
      const before = previous[namespace]
      const after = next[namespace]
      if (after !== undefined)
        document[namespace] = sameValue(before, after) ? before : deepFreeze(structuredClone(after))
      if (!sameValue(before, after)) changes.push({ namespace, value: document[namespace], previous: before, cause })
    }
    this.published.document = Object.freeze(document)
    const logger = this.ctx.logger('settings')
    for (const change of changes) {
      for (const listener of [...(this.published.listeners.get(change.namespace) ?? [])]) {
        try {
          listener(change.value, change.previous, change)
        } catch (error) {
          logger.warn(
            'a settings listener for "%s" threw: %s',
            change.namespace,
            error instanceof Error ? error.message : String(error),
          )
        }
      }
      this.ctx.emit('settings/changed', change)
    }
    return changes
  }

  /** Boundary checks every provider applies before writing. */
  protected checkWrite(namespace: string, patchOrValue: unknown, kind: 'patch' | 'value'): void {
    checkNamespace(namespace)
    if (kind === 'patch') checkPatch(namespace, patchOrValue)
    else if (patchOrValue !== undefined) {
      if (!isPlainObject(patchOrValue)) throw new TypeError(`settings section "${namespace}" must be a plain object`)
      checkValue(patchOrValue, namespace)
    }
  }
}

/**
 * A typed view of one namespace. `value` is recomputed only when the raw section changes.
 * Invalid content yields the defaults; the first read of each distinct bad content logs a warning.
 */
export class SettingsSection<T> {
  private cache: { raw: unknown; value: T; error?: SettingsValidationError } | undefined

  constructor(
    private readonly ctx: Context,
    private readonly service: SettingsService,
    readonly namespace: string,
    private readonly schema: SectionSchema<T>,
    /** What the schema gives for an absent section. */
    readonly defaults: T,
  ) {}

  private resolve(): { value: T; error?: SettingsValidationError } {
    const raw = this.service.get(this.namespace)
    if (this.cache && this.cache.raw === raw) return this.cache
    let entry: { raw: unknown; value: T; error?: SettingsValidationError }
    try {
      entry = {
        raw,
        value: raw === undefined ? this.defaults : this.service.validate(this.namespace, this.schema, raw),
      }
    } catch (error) {
      if (!(error instanceof SettingsValidationError)) throw error
      entry = { raw, value: this.defaults, error }
      this.ctx
        .logger('settings')
        .warn('%s; using the defaults of "%s" until it is fixed', error.message, this.namespace)
    }
    this.cache = entry
    return entry
  }

  /** The validated section, or the defaults when it is absent or invalid. */
  get value(): T {
    return this.resolve().value
  }

  /** Why the stored section was rejected, if it was. */
  get error(): SettingsValidationError | undefined {
    return this.resolve().error
  }

  /** Calls `listener` with the new typed value each time the raw section changes. */
  onChange(listener: (value: T, previous: T) => void): () => void {
    let previous = this.value
    return this.service.onChange(this.namespace, () => {
      const value = this.value
      const before = previous
      previous = value
      listener(value, before)
    })
  }

  /**
   * Merges `patch` and writes it, after checking the merged section against the schema (under
   * the provider's lock). An invalid result throws `SettingsValidationError` and writes nothing.
   */
  update(patch: SettingsPatch): Promise<void> {
    return this.service.update(this.namespace, patch, {
      validate: (next) => void this.service.validate(this.namespace, this.schema, next),
    })
  }
}

export type { SettingsPatch, SettingsRecord }
