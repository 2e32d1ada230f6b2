// Reading and checking one preset file (`agent.cordis.yml`): a YAML list of rows
// `{id, name, config?, disabled?}`. Every mistake is one line naming the file, the row and the field.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const PRESET_FILE = 'agent.cordis.yml'
export const PRESET_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/
const ROW_FIELDS = new Set(['id', 'name', 'config', 'disabled'])

/** A user-facing preset mistake: the message is one line. */
export class PresetError extends Error {
  override name = 'PresetError'
  readonly code = 'PRESET_ERROR'
}

export interface PresetRow {
  id: string
  name: string
  config?: Record<string, unknown>
  disabled?: boolean
}

/** A Cordis plugin as a row module exports it. */
export interface RowPlugin {
  name?: string
  inject?: unknown
  Config?: (value: unknown) => unknown
  apply?: unknown
}

export interface LoadedRow extends PresetRow {
  plugin: RowPlugin
  /** Required services (from `inject`) that must exist before the row can be mounted. */
  needs: string[]
}

const OWN_FILE = fileURLToPath(import.meta.url)
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** True for values that survive a JSON round trip unchanged (what the parse cache may store). */
function jsonSafe(value: unknown): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true
  if (typeof value === 'number') return Number.isFinite(value)
  if (Array.isArray(value)) return value.every(jsonSafe)
  if (isObject(value) && Object.getPrototypeOf(value) === Object.prototype) return Object.values(value).every(jsonSafe)
  return false
}

/**
 * The YAML document of a preset file, from `cacheDir/<sha256 of the text>.json` when a previous
 * parse stored it there: a boot then never loads the yaml package for the default preset. Only
 * successful, JSON-exact parses are stored; an unreadable or unwritable cache only costs the parse.
 */
async function parsePresetText(text: string, cacheDir: string | undefined): Promise<unknown> {
  const entry = cacheDir
    ? join(cacheDir, `${createHash('sha256').update('preset-v1\0').update(text).digest('hex').slice(0, 32)}.json`)
    : undefined
  if (entry) {
    try {
      const cached: unknown = JSON.parse(readFileSync(entry, 'utf8'))
      if (isObject(cached) && 'doc' in cached) return cached.doc
      // another shape (a damaged entry): parse, and the write below replaces it
    } catch {
      // not cached yet, or unreadable: parse
    }
  }
  const { parse } = await import('yaml')
  const doc: unknown = parse(text)
  if (entry && cacheDir && jsonSafe(doc ?? null)) {
    try {
      mkdirSync(cacheDir, { recursive: true })
      const temp = `${entry}.${process.pid}.tmp`
      writeFileSync(temp, JSON.stringify({ doc: doc ?? null }))
      renameSync(temp, entry)
    } catch {
      // a read-only home: parse every time
    }
  }
  return doc
}

/**
 * Parses and checks the rows of `file`, resolving and importing each row's module. `cacheDir`
 * keeps parsed documents (see parsePresetText).
 */
export async function loadPresetFile(
  file: string,
  bases: readonly string[] = [],
  cacheDir?: string,
): Promise<LoadedRow[]> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new PresetError(
      `${file}: cannot read the preset file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    )
  }
  // Loaded on first use: a boot that composes no preset pays nothing for it.
  const { resolveFrom } = await import('@dsh/app-boot')
  let doc: unknown
  try {
    doc = await parsePresetText(text, cacheDir)
  } catch (error) {
    throw new PresetError(`${file}: not valid YAML: ${(error as Error).message.split('\n')[0]}`)
  }
  if (doc === null || doc === undefined) return []
  if (!Array.isArray(doc))
    throw new PresetError(`${file}: expected a list of rows ("- id: ... / name: ..."), found ${typeof doc}`)
  const seen = new Set<string>()
  const rows: LoadedRow[] = []
  for (let index = 0; index < doc.length; index++) {
    const raw = doc[index]
    const at = (field: string) =>
      `${file}: row ${index + 1}${isObject(raw) && typeof raw.id === 'string' ? ` (${raw.id})` : ''}: ${field}`
    if (!isObject(raw)) throw new PresetError(`${file}: row ${index + 1}: expected a mapping with id and name`)
    for (const field of Object.keys(raw))
      if (!ROW_FIELDS.has(field))
        throw new PresetError(`${at(field)}: unknown field (rows have id, name, config, disabled)`)
    if (typeof raw.id !== 'string' || raw.id === '') throw new PresetError(`${at('id')}: must be a non-empty string`)
    if (seen.has(raw.id)) throw new PresetError(`${at('id')}: duplicate id "${raw.id}"`)
    seen.add(raw.id)
    if (typeof raw.name !== 'string' || raw.name === '')
      throw new PresetError(`${at('name')}: must be a non-empty string (a package name or a relative path)`)
    if (raw.config !== undefined && raw.config !== null && !isObject(raw.config))
      throw new PresetError(`${at('config')}: must be a mapping`)
    if (raw.disabled !== undefined && typeof raw.disabled !== 'boolean')
      throw new PresetError(`${at('disabled')}: must be true or false`)
    const row: PresetRow = {
      id: raw.id,
      name: raw.name,
      ...(isObject(raw.config) ? { config: raw.config } : {}),
      ...(raw.disabled ? { disabled: true } : {}),
    }
    if (row.disabled) continue
    const url =
      resolveFrom(row.name, file) ?? [...bases, OWN_FILE].map((base) => resolveFrom(row.name, base)).find(Boolean)
    if (!url)
      throw new PresetError(
        `${at('name')}: cannot resolve "${row.name}" from the preset directory or the dsh installation`,
      )
    let module: Record<string, unknown>
    try {
      module = (await import(url)) as Record<string, unknown>
    } catch (error) {
      throw new PresetError(`${at('name')}: "${row.name}" failed to load: ${(error as Error).message.split('\n')[0]}`)
    }
    const plugin = (typeof module.apply === 'function' ? module : (module.default ?? module)) as RowPlugin
    if (typeof plugin !== 'function' && typeof plugin.apply !== 'function')
      throw new PresetError(`${at('name')}: "${row.name}" is not a plugin (no apply function or class)`)
    if (typeof plugin.Config === 'function') {
      try {
        plugin.Config(row.config ?? {})
      } catch (error) {
        throw new PresetError(`${at('config')}: ${(error as Error).message.split('\n')[0]}`)
      }
    }
    rows.push({ ...row, plugin, needs: requiredServices(plugin.inject) })
  }
  return rows
}

/** Names of the required services in a Cordis `inject` declaration (a list, or a map with `required`). */
function requiredServices(inject: unknown): string[] {
  if (Array.isArray(inject)) return inject.filter((name): name is string => typeof name === 'string')
  if (isObject(inject))
    return Object.entries(inject)
      .filter(([, v]) => !(isObject(v) && v.required === false))
      .map(([k]) => k)
  return []
}
