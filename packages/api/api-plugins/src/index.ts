// @dsh/api-plugins: the Plugins page's host half. For one row of the plugin tree it sends the
// plugin's config schema (JSON) and composed config; it enables, disables and reconfigures rows
// now (through the Cordis Loader) and for the next start (an operation in the user's patch
// layer). A config is checked against the plugin's own schema before anything is written.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiError } from '@dsh/web-protocol'
import { secretPaths } from '@dsh/api-settings'
import { type DshLoader, resolveFirst } from '@dsh/app-boot'
import type {} from '@dsh/api-gateway'
import type {} from '@dsh/plugin-inventory'
import { pluginsConfigure, pluginsDescribe, pluginsSetEnabled, type PluginDetail } from './contract.ts'
import { editLayerFile, LayerEditError } from './layer.ts'

export * from './contract.ts'
export { editLayerText, editLayerFile, LayerEditError, type RowChange } from './layer.ts'

export interface Config {
  /** Which patch layer changes go to: the profile's `cordis.patch.yml` or `$DSH_HOME/cordis.patch.yml`. */
  layer: 'profile' | 'home'
  /** Rows that cannot be disabled or reconfigured here (the web surface itself). */
  protect: string[]
}

export const DEFAULT_PROTECTED = [
  'web-startup',
  'api-gateway',
  'frontend-static',
  'plugin-inventory',
  'api-plugins',
  'settings',
  'storage',
]

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  layer: Schema.union(['profile', 'home'] as const)
    .default('profile')
    .description("Patch layer written: the profile's cordis.patch.yml, or $DSH_HOME/cordis.patch.yml."),
  protect: Schema.array(Schema.string())
    .default(DEFAULT_PROTECTED)
    .description('Row ids that cannot be disabled or reconfigured from the web UI.'),
}) as Schema<Partial<Config>, Config>

/** Why a protected row cannot be switched or reconfigured (plugins.list's `lockedReason`, the refusal). */
export const LOCKED_REASON = 'dsh web cannot run without this row'

export const name = 'api-plugins'
export const inject = ['pluginInventory']

/**
 * The app's Loader (`DshLoader` of @dsh/app-boot, a @cordisjs/plugin-loader `Loader`) and one of
 * its entries: the real declared types, read from `ctx.get('loader')` without a cast.
 */
type LoaderEntry = ReturnType<DshLoader['entries']> extends Iterable<infer E> ? E : never

type ConfigSchema = Schema & { toJSON(): unknown }

function hasExpression(value: unknown): boolean {
  if (!value || typeof value !== 'object') return false
  if ('__jsExpr' in (value as object)) return true
  return Object.values(value as object).some(hasExpression)
}

function takeAt(value: unknown, path: string): { found: boolean; value?: unknown } {
  const keys = path.split('.')
  let node = value as Record<string, unknown> | undefined
  for (const key of keys.slice(0, -1)) {
    if (!node || typeof node !== 'object') return { found: false }
    node = node[key] as Record<string, unknown> | undefined
  }
  const last = keys[keys.length - 1]
  if (!node || typeof node !== 'object' || !(last in node)) return { found: false }
  const taken = node[last]
  delete node[last]
  return { found: true, value: taken }
}

function putAt(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.')
  let node = target
  for (const key of keys.slice(0, -1)) {
    if (!node[key] || typeof node[key] !== 'object') node[key] = {}
    node = node[key] as Record<string, unknown>
  }
  node[keys[keys.length - 1]] = value
}

function fieldOf(error: unknown): string {
  const path = (error as { options?: { path?: unknown } } | null)?.options?.path
  return Array.isArray(path) && path.length ? ['config', ...path.map(String)].join('.') : 'config'
}

function reasonOf(error: unknown): string {
  return String((error as Error)?.message ?? error)
    .split('\n')[0]
    .replace(/^\$(\.[^\s]*)?\s+/, '')
}

export function apply(ctx: Context, config: Config): void {
  const protect = new Set(config.protect)
  // plugins.list says which rows the host refuses to switch, so a UI shows them without a switch.
  ctx.effect(() => ctx.pluginInventory.lock(protect, LOCKED_REASON))
  const loader = () => ctx.get('loader')

  function layerFile(): string | undefined {
    const info = ctx.get('bootInfo')
    if (!info) return undefined
    if (config.layer === 'home') return info.home ? join(info.home, 'cordis.patch.yml') : undefined
    return info.profileDir ? join(info.profileDir, 'cordis.patch.yml') : undefined
  }

  function entryOf(id: string): LoaderEntry {
    const tree = loader()
    for (const entry of tree?.entries() ?? []) if (entry.id === id) return entry
    throw new ApiError('UNKNOWN_ROW', `no row ${JSON.stringify(id)} in the plugin tree`, { status: 404, field: 'id' })
  }

  /** A bare row name (a row disabled at boot keeps it) resolved the way the boot resolves names. */
  function moduleUrl(entry: LoaderEntry): string | undefined {
    const name = entry.options.name
    if (/^(file|cordis):/.test(name)) return name
    return resolveFirst(name, ctx.get('bootInfo')?.layerFiles ?? [])
  }

  async function schemaOf(entry: LoaderEntry): Promise<ConfigSchema | undefined> {
    // A mounted row's runtime carries the plugin's Config; otherwise the module is imported.
    let plugin = entry.fiber?.runtime as { Config?: unknown } | undefined
    if (!plugin?.Config) {
      const tree = loader()
      const url = moduleUrl(entry)
      if (!tree || !url || url.startsWith('cordis:')) return undefined
      try {
        plugin = tree.unwrapExports(await tree.import(url, () => [])) as { Config?: unknown }
      } catch {
        return undefined
      }
    }
    const schema = plugin?.Config as ConfigSchema | undefined
    return typeof schema === 'function' && typeof schema.toJSON === 'function' ? schema : undefined
  }

  async function describe(id: string): Promise<PluginDetail> {
    const entry = entryOf(id)
    const row = ctx.pluginInventory.list().find((r) => r.id === id)
    if (!row)
      throw new ApiError('UNKNOWN_ROW', `no row ${JSON.stringify(id)} in the plugin tree`, { status: 404, field: 'id' })
    const schema = await schemaOf(entry)
    const raw = entry.options.config
    const layer = layerFile()
    const detail: PluginDetail = { row, secrets: [], editable: false, toggleable: !protect.has(id) && !!layer }
    if (layer) detail.layer = layer
    const reasons: string[] = []
    if (schema) {
      detail.schema = schema.toJSON()
      if (hasExpression(raw)) reasons.push('its config holds !!js expressions; edit the patch file instead')
      else {
        let value: unknown
        try {
          value = schema(raw === undefined ? undefined : (structuredClone(raw) as never))
        } catch {
          value = raw === undefined ? undefined : structuredClone(raw)
        }
        const paths = secretPaths(schema)
        for (const path of paths) {
          const taken = takeAt(value, path)
          detail.secrets.push({
            path,
            set: taken.found && taken.value !== undefined && taken.value !== null && taken.value !== '',
          })
        }
        if (value !== undefined) detail.config = value
      }
    } else
      reasons.push(
        entry.fiber || row.state === 'disabled' ? 'the plugin declares no config schema' : 'its module is not loaded',
      )
    if (protect.has(id)) reasons.push(LOCKED_REASON)
    if (!layer) reasons.push('no patch layer is known (not a dsh boot)')
    detail.editable = reasons.length === 0
    if (reasons.length) detail.reason = reasons.join('; ')
    return detail
  }

  function writable(method: string, id: string): string {
    if (protect.has(id))
      throw new ApiError(
        'PROTECTED_ROW',
        `${method}: row "${id}" cannot be switched off or changed here: ${LOCKED_REASON}`,
        {
          status: 409,
          field: 'id',
        },
      )
    const layer = layerFile()
    if (!layer)
      throw new ApiError('UNAVAILABLE', `${method}: no patch layer is known (not a dsh boot)`, { status: 503 })
    return layer
  }

  /** Writes the change; returns a function that puts the file back as it was. */
  function write(
    method: string,
    layer: string,
    id: string,
    change: { disabled?: boolean; config?: unknown },
  ): () => void {
    const before = existsSync(layer) ? readFileSync(layer, 'utf8') : undefined
    try {
      editLayerFile(layer, id, change)
      return () => {
        if (before === undefined) rmSync(layer, { force: true })
        else writeFileSync(layer, before)
      }
    } catch (error) {
      if (error instanceof LayerEditError)
        throw new ApiError('LAYER_INVALID', `${method}: ${error.message}`, { status: 409 })
      throw new ApiError('WRITE_FAILED', `${method}: could not write ${layer}: ${(error as Error).message}`, {
        status: 500,
      })
    }
  }

  async function setEnabled(id: string, enabled: boolean): Promise<PluginDetail> {
    const entry = entryOf(id)
    const layer = writable('plugins.setEnabled', id)
    const tree = loader()!
    const options: Record<string, unknown> = { disabled: !enabled }
    if (enabled) {
      const url = moduleUrl(entry)
      if (!url)
        throw new ApiError(
          'UNRESOLVED',
          `plugins.setEnabled: module ${JSON.stringify(entry.options.name)} of row "${id}" cannot be resolved`,
          { status: 409, field: 'id' },
        )
      if (url !== entry.options.name) options.name = url
    }
    const undo = write('plugins.setEnabled', layer, id, { disabled: !enabled })
    await tree.update(id, options)
    await tree.await()
    if (enabled) await settle('plugins.setEnabled', id, undo, () => tree.update(id, { disabled: true }))
    return describe(id)
  }

  /**
   * A row that fails to come up after a change is put back (tree and file) so the next start is
   * not broken by it, and the failure is the answer.
   */
  async function settle(method: string, id: string, undo: () => void, revert: () => Promise<void>): Promise<void> {
    const row = ctx.pluginInventory.list().find((r) => r.id === id)
    if (!row || (row.state !== 'failed' && row.state !== 'not-loaded')) return
    const reason = row.error ?? `the row is ${row.state}`
    undo()
    await revert()
    await loader()!.await()
    throw new ApiError('APPLY_FAILED', `${method}: row "${id}" failed to start (${reason}); the change was undone`, {
      status: 409,
      field: method === 'plugins.configure' ? 'config' : 'enabled',
    })
  }

  async function configure(id: string, next: unknown): Promise<PluginDetail> {
    const entry = entryOf(id)
    const layer = writable('plugins.configure', id)
    if (hasExpression(entry.options.config))
      throw new ApiError(
        'NOT_EDITABLE',
        `plugins.configure: row "${id}" has !!js expressions in its config; edit ${layer} instead`,
        { status: 409, field: 'id' },
      )
    const schema = await schemaOf(entry)
    if (!schema)
      throw new ApiError(
        'NOT_EDITABLE',
        `plugins.configure: row "${id}" has no config schema to check a config against`,
        { status: 409, field: 'id' },
      )
    if (!next || typeof next !== 'object' || Array.isArray(next))
      throw new ApiError('INVALID_CONFIG', 'plugins.configure: config must be an object', {
        status: 400,
        field: 'config',
      })
    const value = structuredClone(next) as Record<string, unknown>
    // A secret left out of the form keeps what the row had.
    const previous = structuredClone(entry.options.config ?? {}) as Record<string, unknown>
    for (const path of secretPaths(schema)) {
      const mine = takeAt(structuredClone(value), path)
      if (mine.found) continue
      const theirs = takeAt(previous, path)
      if (theirs.found) putAt(value, path, theirs.value)
    }
    try {
      schema(structuredClone(value) as never)
    } catch (error) {
      const field = fieldOf(error)
      throw new ApiError('INVALID_CONFIG', `plugins.configure: row "${id}", field ${field}: ${reasonOf(error)}`, {
        status: 400,
        field,
      })
    }
    const undo = write('plugins.configure', layer, id, { config: value })
    const tree = loader()!
    const composed = entry.options.config === undefined ? null : structuredClone(entry.options.config)
    await tree.update(id, { config: value })
    await tree.await()
    await settle('plugins.configure', id, undo, () => tree.update(id, { config: composed }))
    return describe(id)
  }

  ctx.plugin({
    name: 'api-plugins-methods',
    inject: ['api'],
    apply(c: Context) {
      c.api.register(pluginsDescribe, async (p, call) => {
        const detail = await describe(p.id)
        if (call.loopback) return detail
        // Configs may hold values nobody marked secret (headers, env): only this machine sees them.
        delete detail.config
        detail.secrets = []
        detail.editable = false
        detail.toggleable = false
        detail.reason = 'configs are shown to, and changed from, this machine only'
        return detail
      })
      c.api.register(pluginsSetEnabled, (p) => setEnabled(p.id, p.enabled))
      c.api.register(pluginsConfigure, (p) => configure(p.id, p.config))
    },
  })
}

export default { name, inject, Config, apply }
