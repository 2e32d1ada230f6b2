// @dsh/api-settings: the settings and credentials methods of the web API. Plugins expose the
// settings sections a UI may show and edit (`ctx.settingsCatalog.expose`); credentials are
// described by where they are set, and written only by loopback callers. A credential value
// goes in (credentials.set) and never comes out.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { ApiError } from '@dsh/web-protocol'
import type {} from '@dsh/api-gateway' // declares ctx.api (a type-only import: the gateway stays optional at runtime)
import { SettingsError, SettingsValidationError, type SectionSchema } from '@dsh/settings'
import { CredentialError, type CredentialDescription, type CredentialLayer } from '@dsh/credentials'
import { ModelSettings, SETTINGS_NAMESPACE as MODEL_NAMESPACE } from '@dsh/agent-default-model'
import {
  credentialsDescribe,
  credentialsSet,
  credentialsUnset,
  settingsDescribe,
  settingsUpdate,
  type WireCredential,
  type WireLayer,
  type WireSection,
} from './contract.ts'

export * from './contract.ts'

declare module 'cordis' {
  interface Context {
    settingsCatalog: SettingsCatalog
  }
}

export interface ExposeOptions {
  title?: string
  description?: string
}

interface ExposedSection extends ExposeOptions {
  namespace: string
  schema: Schema
}

export interface SettingsCatalogConfig {
  /** Expose the `model` section (@dsh/agent-default-model: provider, model, reasoning effort, max tokens). */
  exposeModel?: boolean
  /** Credentials the API describes by default and lets loopback callers set or unset. */
  credentials?: { name: string; description?: string }[]
}

interface SchemaShape {
  type?: string
  dict?: Record<string, SchemaShape>
  meta?: { role?: string }
}

/** Dotted paths of `role: 'secret'` fields of an object schema (nested objects too). */
export function secretPaths(schema: unknown, prefix = ''): string[] {
  const shape = schema as SchemaShape
  if (shape?.type !== 'object' || !shape.dict) return []
  const out: string[] = []
  for (const [key, field] of Object.entries(shape.dict)) {
    const path = prefix ? `${prefix}.${key}` : key
    if (field?.meta?.role === 'secret') out.push(path)
    else out.push(...secretPaths(field, path))
  }
  return out
}

function takeAt(value: unknown, path: string): { found: boolean; value?: unknown } {
  let node = value as Record<string, unknown> | undefined
  const keys = path.split('.')
  for (const key of keys.slice(0, -1)) {
    if (!node || typeof node !== 'object') return { found: false }
    node = node[key] as Record<string, unknown> | undefined
  }
  if (!node || typeof node !== 'object' || !(keys[keys.length - 1] in node)) return { found: false }
  const last = keys[keys.length - 1]
  const taken = node[last]
  delete node[last]
  return { found: true, value: taken }
}

function wireLayer(layer: CredentialLayer): WireLayer {
  const out: WireLayer = { id: layer.id, label: layer.label, writable: layer.writable, status: layer.status }
  if (layer.path !== undefined) out.path = layer.path
  if (layer.problem !== undefined) out.problem = layer.problem
  return out
}

/** A description on the wire: layer ids and labels only; the shape has no place for a value. */
export function wireCredential(description: CredentialDescription, note?: string): WireCredential {
  const out: WireCredential = {
    name: description.name,
    configured: description.configured,
    shadowed: description.shadowed.map((layer) => layer.id),
    layers: description.layers.map(wireLayer),
  }
  if (note) out.description = note
  if (description.source) out.source = description.source.id
  return out
}

const CREDENTIAL_STATUS: Record<string, number> = {
  INVALID_NAME: 400,
  INVALID_VALUE: 400,
  READ_ONLY: 409,
  INSECURE_FILE: 409,
  MALFORMED_FILE: 409,
  MISSING_CREDENTIAL: 404,
}

/** Any failure of a credentials call as an ApiError whose message cannot hold `secret`. */
function credentialFailure(method: string, error: unknown, secret?: string): ApiError {
  if (error instanceof ApiError) return error
  let message = error instanceof Error ? error.message : String(error)
  if (secret) message = message.split(secret).join('[redacted]')
  if (error instanceof CredentialError) {
    const field = error.code === 'INVALID_VALUE' ? 'value' : error.code === 'INVALID_NAME' ? 'name' : undefined
    return new ApiError(error.code, message, {
      status: CREDENTIAL_STATUS[error.code] ?? 500,
      ...(field ? { field } : {}),
    })
  }
  return new ApiError('INTERNAL', `${method} failed: ${message}`, { status: 500 })
}

export class SettingsCatalog extends Service {
  static inject = ['settings']
  static Config: Schema<SettingsCatalogConfig> = Schema.object({
    exposeModel: Schema.boolean()
      .default(true)
      .description('Expose the model section (the default model of new sessions).'),
    credentials: Schema.array(
      Schema.object({
        name: Schema.string()
          .pattern(/^[A-Za-z_][A-Za-z0-9_]*$/)
          .required(),
        description: Schema.string(),
      }),
    )
      .default([{ name: 'DEEPSEEK_API_KEY', description: 'DeepSeek API key' }])
      .description('Credentials described by default and settable by loopback callers.'),
  })

  // Mutated in place only: methods may run on a per-caller shadow of this instance.
  private readonly sections = new Map<string, ExposedSection>()
  private readonly credentialNotes = new Map<string, Set<string | undefined>>()

  constructor(ctx: Context, config: SettingsCatalogConfig = {}) {
    super(ctx, 'settingsCatalog')
    for (const entry of config.credentials ?? [{ name: 'DEEPSEEK_API_KEY', description: 'DeepSeek API key' }])
      this.noteCredential(entry.name, entry.description)
    const catalog = this
    if (config.exposeModel !== false) {
      this.expose(MODEL_NAMESPACE, ModelSettings, {
        title: 'Default model',
        description: 'The model new sessions start with.',
      })
    }
    ctx.plugin({
      name: 'api-settings-methods',
      inject: ['api', 'settings'],
      apply(c: Context) {
        const api = c.api
        api.register(settingsDescribe, () => catalog.describeSettings())
        api.register(settingsUpdate, (params) => catalog.updateSettings(params.namespace, params.patch))
      },
    })
    ctx.plugin({
      name: 'api-credentials-methods',
      inject: ['api', 'credentials'],
      apply(c: Context) {
        const api = c.api
        api.register(credentialsDescribe, (params) => catalog.describeCredentials(params.names))
        api.register(credentialsSet, (params, call) => catalog.setCredential(params.name, params.value, call.loopback))
        api.register(credentialsUnset, (params, call) => catalog.unsetCredential(params.name, call.loopback))
      },
    })
  }

  private noteCredential(name: string, description?: string): () => void {
    let notes = this.credentialNotes.get(name)
    if (!notes) this.credentialNotes.set(name, (notes = new Set()))
    notes.add(description)
    return () => {
      notes.delete(description)
      if (!notes.size && this.credentialNotes.get(name) === notes) this.credentialNotes.delete(name)
    }
  }

  /**
   * Lets the web UI show and edit one settings section. `schema` must accept an absent section
   * (its defaults). An effect of the calling plugin; a namespace is exposed once.
   */
  expose(namespace: string, schema: SectionSchema<unknown>, options: ExposeOptions = {}): () => void {
    // Throws for a bad namespace or a schema without defaults, as ctx.settings.section does.
    this.ctx.settings.section(namespace, schema)
    if (typeof (schema as unknown as Schema).toJSON !== 'function')
      throw new TypeError(
        `settingsCatalog.expose("${namespace}"): the schema must be a schemastery schema (it is sent as JSON)`,
      )
    const sections = this.sections
    if (sections.has(namespace)) throw new Error(`settingsCatalog.expose: section "${namespace}" is already exposed`)
    const entry: ExposedSection = { namespace, schema: schema as unknown as Schema, ...options }
    const dispose = this.ctx.effect(() => {
      sections.set(namespace, entry)
      return () => {
        if (sections.get(namespace) === entry) sections.delete(namespace)
      }
    }, `settings-catalog:${namespace}`)
    return () => void dispose()
  }

  /** Adds a credential to the known list (described by default, settable). An effect of the caller. */
  exposeCredential(name: string, options: { description?: string } = {}): () => void {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new TypeError(`settingsCatalog.exposeCredential: invalid credential name ${JSON.stringify(name)}`)
    const dispose = this.ctx.effect(
      () => this.noteCredential(name, options.description),
      `settings-catalog:credential:${name}`,
    )
    return () => void dispose()
  }

  /** Known credential names, sorted. */
  credentialNames(): string[] {
    return [...this.credentialNotes.keys()].sort()
  }

  private sectionOf(entry: ExposedSection): WireSection {
    const view = this.ctx.settings.section(entry.namespace, entry.schema)
    const value = structuredClone(view.value) as unknown
    const secrets = secretPaths(entry.schema).map((path) => {
      const taken = takeAt(value, path)
      return { path, set: taken.found && taken.value !== undefined && taken.value !== null && taken.value !== '' }
    })
    const out: WireSection = { namespace: entry.namespace, schema: entry.schema.toJSON(), value, secrets }
    if (entry.title) out.title = entry.title
    if (entry.description) out.description = entry.description
    const error = view.error
    if (error) out.error = { field: error.field, message: `${error.field}: ${error.reason}` }
    return out
  }

  describeSettings(): { location: string; sections: WireSection[] } {
    const sections = [...this.sections.values()]
      .sort((a, b) => a.namespace.localeCompare(b.namespace))
      .map((entry) => this.sectionOf(entry))
    return { location: this.ctx.settings.location, sections }
  }

  async updateSettings(namespace: string, patch: Record<string, unknown>): Promise<WireSection> {
    const entry = this.sections.get(namespace)
    if (!entry)
      throw new ApiError('UNKNOWN_SECTION', `settings.update: no exposed settings section "${namespace}"`, {
        status: 404,
        field: 'namespace',
      })
    const settings = this.ctx.settings
    try {
      await settings.update(namespace, patch as never, {
        validate: (next) => void settings.validate(namespace, entry.schema, next),
      })
    } catch (error) {
      if (error instanceof SettingsValidationError) {
        throw new ApiError(
          'INVALID_SETTINGS',
          `settings.update: section "${namespace}", field "${error.field}": ${error.reason}`,
          { status: 400, field: error.field },
        )
      }
      if (error instanceof TypeError)
        throw new ApiError('INVALID_PARAMS', `settings.update: patch: ${error.message}`, { field: 'patch' })
      if (error instanceof SettingsError)
        throw new ApiError('SETTINGS_UNAVAILABLE', `settings.update: ${error.message}`, { status: 503 })
      throw error
    }
    return this.sectionOf(entry)
  }

  private note(name: string): string | undefined {
    for (const note of this.credentialNotes.get(name) ?? []) if (note) return note
    return undefined
  }

  async describeCredentials(names?: string[]): Promise<{ credentials: WireCredential[] }> {
    const credentials = this.ctx.get('credentials') as Context['credentials'] | undefined
    if (!credentials)
      throw new ApiError('UNAVAILABLE', 'credentials.describe: no credentials provider is mounted', { status: 503 })
    const list = names?.length ? [...new Set(names)] : this.credentialNames()
    const out: WireCredential[] = []
    for (const name of list) {
      try {
        out.push(wireCredential(await credentials.describe(name), this.note(name)))
      } catch (error) {
        throw credentialFailure('credentials.describe', error)
      }
    }
    return { credentials: out }
  }

  private checkWritable(method: string, name: string, loopback: boolean): Context['credentials'] {
    // The gateway refuses loopbackOnly methods already; this holds for any other carrier too.
    if (!loopback) throw new ApiError('FORBIDDEN', `${method} is only available to loopback callers`)
    if (!this.credentialNotes.has(name)) {
      throw new ApiError(
        'UNKNOWN_CREDENTIAL',
        `${method}: "${name}" is not a known credential (known: ${this.credentialNames().join(', ') || 'none'})`,
        { status: 404, field: 'name' },
      )
    }
    const credentials = this.ctx.get('credentials') as Context['credentials'] | undefined
    if (!credentials)
      throw new ApiError('UNAVAILABLE', `${method}: no credentials provider is mounted`, { status: 503 })
    return credentials
  }

  async setCredential(name: string, value: string, loopback: boolean): Promise<{ credential: WireCredential }> {
    const credentials = this.checkWritable('credentials.set', name, loopback)
    try {
      await credentials.set(name, value)
      const credential = wireCredential(await credentials.describe(name), this.note(name))
      // Belt and braces: nothing built here may carry the value out.
      if (value && JSON.stringify(credential).includes(value))
        throw new Error('the description would reveal the value; refused')
      return { credential }
    } catch (error) {
      throw credentialFailure('credentials.set', error, value)
    }
  }

  async unsetCredential(name: string, loopback: boolean): Promise<{ credential: WireCredential }> {
    const credentials = this.checkWritable('credentials.unset', name, loopback)
    try {
      await credentials.unset(name)
      return { credential: wireCredential(await credentials.describe(name), this.note(name)) }
    } catch (error) {
      throw credentialFailure('credentials.unset', error)
    }
  }
}

export const name = 'api-settings'
export default SettingsCatalog
