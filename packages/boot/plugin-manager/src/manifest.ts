// The `dsh` field of a plugin package's package.json: a default row, or a bundle patch.
import { readFileSync } from 'node:fs'
import { PluginError } from './errors.ts'

export type PluginManifest =
  | { kind: 'row'; name: string; version: string; id: string; config?: unknown; disabled?: boolean }
  | { kind: 'bundle'; name: string; version: string; patch: string }

export const ROW_ID = /^[A-Za-z0-9][\w.-]*$/

/** `@acme/dsh-plugin-hello` -> `hello`; `dsh-foo` -> `foo`; the row id used when the manifest names none. */
export function defaultRowId(pkg: string): string {
  const base = pkg.replace(/^@[^/]+\//, '')
  const stripped = base.replace(/^dsh-plugin-/, '').replace(/^dsh-/, '')
  return stripped || base
}

/**
 * Reads `dsh.plugin` (`{ id?, config?, disabled? }`: the row `dsh plugin add` writes) or
 * `dsh.bundle.patch` (a bundle: the package is added to the profile's bundle list). A package with
 * neither is not a dsh plugin.
 */
export function readPluginManifest(packageJson: string): PluginManifest {
  let pkg: Record<string, unknown>
  try {
    pkg = JSON.parse(readFileSync(packageJson, 'utf8')) as Record<string, unknown>
  } catch (error) {
    throw new PluginError(
      `${packageJson}: cannot read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    )
  }
  const name = String(pkg.name)
  const version = typeof pkg.version === 'string' ? pkg.version : '0.0.0'
  const dsh = pkg.dsh as Record<string, unknown> | undefined
  const where = `${name} (${packageJson})`
  if (!dsh || typeof dsh !== 'object' || (!('plugin' in dsh) && !('bundle' in dsh))) {
    throw new PluginError(
      `${where}: not a dsh plugin: package.json has no "dsh.plugin" (a default row) or "dsh.bundle" (a patch) field`,
    )
  }
  if ('bundle' in dsh) {
    const patch = (dsh.bundle as Record<string, unknown> | undefined)?.patch
    if (typeof patch !== 'string' || !patch)
      throw new PluginError(`${where}: field "dsh.bundle.patch" must name the bundle's patch file`)
    return { kind: 'bundle', name, version, patch }
  }
  const plugin = dsh.plugin
  if (!plugin || typeof plugin !== 'object' || Array.isArray(plugin)) {
    throw new PluginError(`${where}: field "dsh.plugin" must be an object such as { "id": "hello", "config": {} }`)
  }
  const p = plugin as Record<string, unknown>
  for (const key of Object.keys(p)) {
    if (!['id', 'config', 'disabled'].includes(key))
      throw new PluginError(`${where}: field "dsh.plugin.${key}" is not known (use id, config, disabled)`)
  }
  const id = p.id === undefined ? defaultRowId(name) : p.id
  if (typeof id !== 'string' || !ROW_ID.test(id))
    throw new PluginError(`${where}: field "dsh.plugin.id" must be a row id (letters, digits, ".", "_", "-")`)
  if (p.disabled !== undefined && typeof p.disabled !== 'boolean')
    throw new PluginError(`${where}: field "dsh.plugin.disabled" must be true or false`)
  return { kind: 'row', name, version, id, config: p.config, disabled: p.disabled as boolean | undefined }
}
