// @dsh/plugin-inventory: a read-only view of the Cordis Loader tree (`ctx.pluginInventory.list()`)
// and the `plugins.list` API method. Every call reads the Loader's entries afresh, so the answer
// is the tree as it is now: nothing is cached but the module -> package name lookup.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { Loader } from '@cordisjs/plugin-loader'
import { fiberError, fiberStateName } from '@dsh/cordis-compat'
import type {} from '@dsh/api-gateway' // declares ctx.api (a type-only import: the gateway stays optional at runtime)
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pluginsList, type PluginRow, type PluginState } from './contract.ts'

// The contract (and through it @dsh/web-protocol) is loaded only for the API method: the static
// client imports this module for `inventoryOf` on the path to the first page of `dsh web`, which
// should not wait for the whole contract graph. The values live at `@dsh/plugin-inventory/contract`.
export type { PluginRow, PluginState } from './contract.ts'

declare module 'cordis' {
  interface Context {
    pluginInventory: PluginInventory
  }
}

/**
 * The Loader as the inventory reads it: the real `Loader` of @cordisjs/plugin-loader (a type-only
 * import, erased from the built module), narrowed to `entries()`. Each entry is the Loader's own
 * `Entry`; the fiber's error and state are read through @dsh/cordis-compat. Kept under this name
 * for @dsh/frontend-static, which passes the app's loader.
 */
export type LoaderLike = Pick<Loader, 'entries'>

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return text.split('\n')[0].slice(0, 500)
}

const packageCache = new Map<string, { name: string; dir?: string } | undefined>()

/**
 * The npm package a row module belongs to: the nearest package.json (with a `name`) above a
 * `file:` module, giving its name and directory, or the package part of a bare specifier (name
 * only). `undefined` when neither applies (`cordis:` builtins, relative names).
 */
export function packageInfoOfModule(module: string): { name: string; dir?: string } | undefined {
  if (packageCache.has(module)) return packageCache.get(module)
  let found: { name: string; dir?: string } | undefined
  if (module.startsWith('file:')) {
    let dir: string
    try {
      dir = dirname(fileURLToPath(module))
    } catch {
      dir = ''
    }
    for (; dir && dirname(dir) !== dir; dir = dirname(dir)) {
      const file = join(dir, 'package.json')
      if (!existsSync(file)) continue
      try {
        const name = (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name
        if (typeof name === 'string' && name) {
          found = { name, dir }
          break
        }
      } catch {
        // An unreadable package.json says nothing; keep walking up.
      }
    }
  } else if (/^(@[^/]+\/)?[^./@][^/]*/.test(module) && !module.includes(':')) {
    const parts = module.split('/')
    found = { name: module.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0] }
  }
  packageCache.set(module, found)
  return found
}

/** The package name part of `packageInfoOfModule`. */
export function packageOfModule(module: string): string | undefined {
  return packageInfoOfModule(module)?.name
}

/** The Loader's rows in Loader order, structural group rows skipped (what `list()` returns). */
export function inventoryOf(loader: LoaderLike | undefined): PluginRow[] {
  if (!loader || typeof loader.entries !== 'function') return []
  const rows: PluginRow[] = []
  for (const entry of loader.entries()) {
    if (entry.options.group || entry.subgroup) continue
    const module = String(entry.options.name)
    const enabled = !entry.disabled
    const fiber = entry.fiber
    let state: PluginState
    if (!enabled) state = 'disabled'
    else if (!fiber) state = 'not-loaded'
    else state = fiberStateName(fiber)
    const row: PluginRow = { id: entry.id, module, enabled, state }
    const pkg = packageOfModule(module)
    if (pkg) row.package = pkg
    const error = fiber && fiberError(fiber)
    if (enabled && error !== undefined) {
      row.error = firstLine(error)
      if (state !== 'failed' && state !== 'disposed') row.state = 'failed'
    }
    const parent = entry.parent?.ctx?.fiber?.entry?.id
    if (parent) row.parent = parent
    rows.push(row)
  }
  return rows
}

export interface PluginInventoryConfig {
  /** Register `plugins.list` on `ctx.api` when that service is present. */
  api?: boolean
}

export class PluginInventory extends Service {
  static Config: Schema<PluginInventoryConfig> = Schema.object({
    api: Schema.boolean()
      .default(true)
      .description('Register the plugins.list method on ctx.api when the gateway is mounted.'),
  })

  constructor(ctx: Context, config: PluginInventoryConfig = {}) {
    super(ctx, 'pluginInventory')
    // A child plugin that needs `api`: active whenever a gateway is mounted, undone when it goes.
    if (config.api !== false) {
      ctx.plugin({
        name: 'plugin-inventory-api',
        inject: ['api'],
        // Synchronous on purpose: an apply that awaits (a dynamic import) can still be running
        // when app/ready is emitted, and a call held until then would miss the method.
        apply: (c: Context) => {
          c.api.register(pluginsList, () => ({ plugins: this.list() }))
        },
      })
    }
  }

  private locks = new Map<string, string>()

  /**
   * Marks rows the host refuses to switch (the app cannot run without them): `list()` gives them
   * `toggleable: false` and `lockedReason`. The owner of the refusal calls it (api-plugins);
   * the returned function (or the caller's scope going away, through `ctx.effect`) undoes it.
   */
  lock(ids: Iterable<string>, reason: string): () => void {
    const mine = [...ids].filter((id) => !this.locks.has(id))
    for (const id of mine) this.locks.set(id, reason)
    return () => {
      for (const id of mine) if (this.locks.get(id) === reason) this.locks.delete(id)
    }
  }

  /** The Loader's rows in Loader order, structural group rows skipped. Empty without a Loader (a bare Context). */
  list(): PluginRow[] {
    const rows = inventoryOf(this.ctx.get('loader'))
    for (const row of rows) {
      const reason = this.locks.get(row.id)
      if (reason !== undefined) Object.assign(row, { toggleable: false, lockedReason: reason })
    }
    return rows
  }
}

export const name = 'plugin-inventory'
export default PluginInventory
