// Patch layers: parsing and validation of one `cordis.patch.yml` into typed operations.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type * as Yaml from 'yaml'
import type * as YamlUtil from 'yaml/util'
import type { ScalarTag } from 'yaml'

// The yaml package is loaded on first use only: a warm start reads parsed layers from the cache
// (see parseLayerCached) and never pays for loading and compiling the parser.
const load = createRequire(import.meta.url)
let yamlModule: typeof Yaml | undefined
let yamlUtil: typeof YamlUtil | undefined
export const yaml = (): typeof Yaml => (yamlModule ??= load('yaml') as typeof Yaml)
const util = (): typeof YamlUtil => (yamlUtil ??= load('yaml/util') as typeof YamlUtil)
import { DshUserError } from './errors.ts'
import { nearest } from './near.ts'

/** A `!!js` expression; the loader's interpolate() evaluates `{__jsExpr}` objects at mount. */
export class JsExpr {
  constructor(readonly __jsExpr: string) {}
}

export function isJsExpr(value: unknown): value is JsExpr {
  return value instanceof Object && '__jsExpr' in value
}

export const jsTag: ScalarTag = {
  tag: 'tag:yaml.org,2002:js',
  identify: (value) => value instanceof JsExpr,
  resolve: (source) => new JsExpr(source),
  // Quoted by the ordinary string rules so expressions containing `: ` or `#` stay one scalar.
  stringify: (item, ctx, onComment, onChompKeep) =>
    util().stringifyString({ value: (item.value as JsExpr).__jsExpr }, ctx, onComment, onChompKeep),
}

/** One row of the plugin tree, in the loader's own shape. */
export interface Row {
  id: string
  name: string
  config?: unknown
  disabled?: boolean | JsExpr
  inject?: string[] | Record<string, unknown>
  group?: boolean
  isolate?: Record<string, true | string>
  intercept?: Record<string, unknown>
}

export const ROW_FIELDS = ['id', 'name', 'config', 'disabled', 'inject', 'group', 'isolate', 'intercept'] as const
export type RowField = (typeof ROW_FIELDS)[number]

/** `- id: X` with fields: each listed field replaces X's field (`null` removes it). */
export interface PatchOp {
  kind: 'patch'
  index: number
  id: string
  fields: Partial<Record<Exclude<RowField, 'id'>, unknown>>
}

/** `- insert: [rows]`. */
export interface InsertOp {
  kind: 'insert'
  index: number
  rows: Row[]
}

/**
 * `- keep: [ids]`: every row composed so far whose id matches none of `ids` is disabled (rows of
 * later operations and layers are not affected). An entry is an exact id or a pattern where `*`
 * stands for any run of characters (`session-*`).
 */
export interface KeepOp {
  kind: 'keep'
  index: number
  ids: string[]
}

export type Op = PatchOp | InsertOp | KeepOp

/** Whether a row id matches a `keep` entry (an exact id, or a pattern with `*` wildcards). */
export function keepMatches(entry: string, id: string): boolean {
  if (!entry.includes('*')) return entry === id
  const parts = entry.split('*')
  if (!id.startsWith(parts[0]) || id.length < parts[0].length + parts[parts.length - 1].length) return false
  if (!id.endsWith(parts[parts.length - 1])) return false
  let at = parts[0].length
  const end = id.length - parts[parts.length - 1].length
  for (const part of parts.slice(1, -1)) {
    const found = id.indexOf(part, at)
    if (found === -1 || found + part.length > end) return false
    at = found + part.length
  }
  return true
}

export interface Layer {
  /** Absolute path of the file; row names introduced here resolve from it. */
  file: string
  /** Human name used in warnings and `# ==` comments, e.g. `bundle @dsh/bundle-base`. */
  label: string
  ops: Op[]
}

/** A user-facing configuration mistake: `message` is one line naming file, line, item and field. */
export class LayerError extends DshUserError {
  override name = 'LayerError'
  constructor(
    message: string,
    /** For a problem found in the parsed data: the item path (`[2].insert[0].name`) and the problem. */
    readonly at?: { file: string; where: string; problem: string },
  ) {
    super(message)
  }
}

/** `[2].insert[0].name` -> `[2, 'insert', 0, 'name']`. */
export function itemPath(where: string): (string | number)[] {
  const out: (string | number)[] = []
  for (const m of where.matchAll(/\[(\d+)\]|\.?([^.[\]]+)/g)) out.push(m[1] !== undefined ? Number(m[1]) : m[2])
  return out
}

/**
 * The 1-based line of the item at `path` in a parsed layer document: the line of the deepest key
 * or list item the path reaches (a path that leaves the document stops at its last found part).
 */
function lineIn(
  doc: Yaml.Document,
  lineCounter: Yaml.LineCounter,
  path: readonly (string | number)[],
): number | undefined {
  const { isMap, isSeq, isScalar } = yaml()
  let node: unknown = doc.contents
  let offset = (node as { range?: [number] } | null)?.range?.[0]
  for (const part of path) {
    if (isSeq(node) && typeof part === 'number' && node.items[part] !== undefined) {
      node = node.items[part]
      offset = (node as { range?: [number] } | null)?.range?.[0] ?? offset
    } else if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(part))
      if (!pair) break
      offset = (pair.key as { range?: [number] }).range?.[0] ?? offset
      node = pair.value
    } else break
  }
  return offset === undefined ? undefined : lineCounter.linePos(offset).line
}

/**
 * The line of an item in a layer file on disk, for errors found after parsing (a row's config
 * refused by its plugin, a patch naming no row). Reads and parses the file again: only on error.
 */
export function locateInLayer(file: string, path: readonly (string | number)[]): number | undefined {
  try {
    const { LineCounter, parseDocument } = yaml()
    const lineCounter = new LineCounter()
    const doc = parseDocument(readFileSync(file, 'utf8'), { customTags: [jsTag], lineCounter })
    return lineIn(doc, lineCounter, path)
  } catch {
    return undefined
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof JsExpr)

function fail(file: string, where: string, problem: string): never {
  throw new LayerError(`${file}: ${where}: ${problem}`, { file, where, problem })
}

/** Finds a `!!js` value anywhere under `value`; returns its path suffix or undefined. */
function findJs(value: unknown, path = ''): string | undefined {
  if (value instanceof JsExpr) return path
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findJs(value[i], `${path}[${i}]`)
      if (hit !== undefined) return hit
    }
  } else if (isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      const hit = findJs(v, `${path}.${k}`)
      if (hit !== undefined) return hit
    }
  }
  return undefined
}

function checkField(file: string, where: string, field: string, value: unknown, forInsert: boolean): void {
  const at = `${where}.${field}`
  if (field !== 'config' && field !== 'disabled') {
    const js = findJs(value)
    if (js !== undefined) fail(file, at + js, '!!js is only allowed inside "config" and "disabled"')
  }
  switch (field) {
    case 'id':
      if (typeof value !== 'string' || !value) fail(file, at, 'must be a non-empty string')
      if (value.includes(':')) fail(file, at, 'must not contain ":" (the loader uses it to separate nested ids)')
      return
    case 'name':
      if (typeof value !== 'string' || !value)
        fail(file, at, 'must be a non-empty string (a package name or a relative path)')
      return
    case 'config':
      return
    case 'disabled':
      if (value === null && !forInsert) return
      if (typeof value !== 'boolean' && !(value instanceof JsExpr))
        fail(file, at, 'must be true, false or a !!js expression')
      return
    case 'group':
      if (value === null && !forInsert) return
      if (typeof value !== 'boolean') fail(file, at, 'must be true or false')
      return
    case 'inject':
      if (value === null && !forInsert) return
      if (Array.isArray(value)) {
        value.forEach((v, i) => {
          if (typeof v !== 'string' || !v) fail(file, `${at}[${i}]`, 'must be a service name')
        })
        return
      }
      if (!isPlainObject(value)) fail(file, at, 'must be a list of service names or a map of name to options')
      return
    case 'isolate':
    case 'intercept':
      if (value === null && !forInsert) return
      if (!isPlainObject(value)) fail(file, at, 'must be a map')
      return
    default: {
      const guess = nearest(field, ROW_FIELDS)
      fail(
        file,
        at,
        `unknown field${guess ? ` (did you mean "${guess}"?)` : ''}; a row has ${ROW_FIELDS.map((f) => `"${f}"`).join(', ')}`,
      )
    }
  }
}

function checkRow(file: string, where: string, raw: unknown): Row {
  if (!isPlainObject(raw)) fail(file, where, 'a row must be a map with at least "id" and "name"')
  for (const required of ['id', 'name'] as const) {
    if (!(required in raw)) fail(file, `${where}.${required}`, 'is required')
  }
  for (const [field, value] of Object.entries(raw)) checkField(file, where, field, value, true)
  const row = raw as unknown as Row
  if (row.group || row.name === 'cordis:group') {
    if (row.config !== undefined && row.config !== null && !Array.isArray(row.config)) {
      fail(file, `${where}.config`, "a group row's config must be a list of rows")
    }
    const ids = new Set<string>()
    ;((row.config as unknown[] | undefined) ?? []).forEach((child, i) => {
      const c = checkRow(file, `${where}.config[${i}]`, child)
      if (ids.has(c.id)) fail(file, `${where}.config[${i}].id`, `duplicate id "${c.id}"`)
      ids.add(c.id)
    })
  }
  return row
}

function checkOp(file: string, index: number, raw: unknown): Op {
  const where = `[${index}]`
  if (!isPlainObject(raw))
    fail(
      file,
      where,
      'an operation must be a map: "- id: <row id>" with fields, "- insert: [rows]" or "- keep: [row ids]"',
    )
  if ('keep' in raw) {
    const extra = Object.keys(raw).filter((k) => k !== 'keep')
    if (extra.length) fail(file, `${where}.${extra[0]}`, 'a "keep" operation takes no other fields')
    const ids = raw.keep
    if (!Array.isArray(ids) || !ids.length)
      fail(file, `${where}.keep`, 'must be a non-empty list of row ids or patterns such as "session-*"')
    ids.forEach((id, i) => {
      if (typeof id !== 'string' || !id)
        fail(file, `${where}.keep[${i}]`, 'must be a row id or a pattern such as "session-*"')
      if (id.includes(':'))
        fail(file, `${where}.keep[${i}]`, 'must not contain ":" (nested rows cannot be kept one by one)')
    })
    return { kind: 'keep', index, ids: ids as string[] }
  }
  if ('insert' in raw) {
    const extra = Object.keys(raw).filter((k) => k !== 'insert')
    if (extra.length) fail(file, `${where}.${extra[0]}`, 'an "insert" operation takes no other fields')
    const rows = raw.insert
    if (!Array.isArray(rows)) fail(file, `${where}.insert`, 'must be a list of rows')
    return { kind: 'insert', index, rows: rows.map((r, i) => checkRow(file, `${where}.insert[${i}]`, r)) }
  }
  if (!('id' in raw))
    fail(
      file,
      where,
      'an operation needs "id" (to patch a row), "insert" (to add rows) or "keep" (to disable every other row)',
    )
  checkField(file, where, 'id', raw.id, false)
  const fields: PatchOp['fields'] = {}
  for (const [field, value] of Object.entries(raw)) {
    if (field === 'id') continue
    checkField(file, where, field, value, false)
    if (field === 'name' && value === null) fail(file, `${where}.name`, 'cannot be removed')
    ;(fields as Record<string, unknown>)[field] = value
  }
  if (!Object.keys(fields).length) fail(file, where, `patch of "${raw.id as string}" lists no field to replace`)
  return { kind: 'patch', index, id: raw.id as string, fields }
}

/**
 * Parses one layer. Throws LayerError with a single line naming the file, the item path
 * (`[2].insert[0].name`) and the problem; YAML syntax errors name the line and column.
 */
export function parseLayer(text: string, file: string, label: string = file): Layer {
  const { isMap, isSeq, LineCounter, parseDocument } = yaml()
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { customTags: [jsTag], lineCounter, prettyErrors: false, uniqueKeys: true })
  if (doc.errors.length) {
    const err = doc.errors[0]
    const pos = lineCounter.linePos(err.pos[0])
    const firstLine = err.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')
    throw new LayerError(`${file}:${pos.line}:${pos.col}: invalid YAML: ${firstLine}`)
  }
  if (doc.contents === null) return { file, label, ops: [] }
  if (!isSeq(doc.contents)) {
    const what = isMap(doc.contents) ? 'a map' : 'a scalar'
    throw new LayerError(`${file}: expected a YAML list of operations, got ${what}`)
  }
  const data = doc.toJS() as unknown[]
  try {
    return { file, label, ops: data.map((op, i) => checkOp(file, i, op)) }
  } catch (error) {
    // Name the line of the offending item: the checks walk plain data, the document knows where.
    const at = error instanceof LayerError ? error.at : undefined
    if (!at) throw error
    const line = lineIn(doc, lineCounter, itemPath(at.where))
    throw new LayerError(`${at.file}${line ? `:${line}` : ''}: ${at.where}: ${at.problem}`, at)
  }
}

/**
 * `parseLayer` with a cache of successful parses under `cacheDir`, keyed by the layer's text and
 * this parser's own build (so a changed parser never reads an old entry). Parsing YAML is most of
 * a cold boot's composition time; the cache makes a warm boot skip the yaml package entirely.
 * Failures are never cached; an unreadable or unwritable cache only costs the parse.
 */
export function parseLayerCached(text: string, file: string, label: string, cacheDir: string | undefined): Layer {
  if (!cacheDir) return parseLayer(text, file, label)
  const key = layerCacheKey(text)
  const shipped = shippedOps(key)
  if (shipped) return { file, label, ops: shipped }
  const entry = join(cacheDir, `${key}.json`)
  try {
    const ops = reviveJsExpr(JSON.parse(readFileSync(entry, 'utf8'))) as Op[]
    return { file, label, ops }
  } catch {
    // not cached yet (or unreadable): parse
  }
  const layer = parseLayer(text, file, label)
  try {
    mkdirSync(cacheDir, { recursive: true })
    const temp = `${entry}.${process.pid}.tmp`
    writeFileSync(temp, JSON.stringify(layer.ops))
    renameSync(temp, entry)
  } catch {
    // a read-only home: fine, the next boot parses again
  }
  return layer
}

/**
 * The cache key of a layer's text under this parser: a hash of the text and of this module's own
 * file content (not its path, so a relocated installation keeps its shipped table valid).
 */
export function layerCacheKey(text: string): string {
  return createHash('sha256').update(parserStamp()).update('\0').update(text).digest('hex').slice(0, 32)
}

let stamp: string | undefined
function parserStamp(): string {
  stamp ??= createHash('sha256')
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .digest('hex')
  return stamp
}

/** `<checkout>/prelinked/layers.json` (dist/ and src/ are both two levels below the package). */
export const shippedLayersFile = (): string =>
  fileURLToPath(new URL('../../../../prelinked/layers.json', import.meta.url))

/**
 * The shipped layers, parsed at build time (scripts/prelink.mjs writes `prelinked/layers.json`,
 * `{layers: {<layerCacheKey>: ops}}`): a first boot in a fresh home (every first run, every test)
 * then loads no YAML parser for the bundles and profile templates dsh ships. Read once per process;
 * a missing or unreadable table only means parsing.
 */
let shippedTable: Record<string, unknown> | null | undefined
function shippedOps(key: string): Op[] | undefined {
  if (shippedTable === undefined) {
    try {
      const data = JSON.parse(readFileSync(shippedLayersFile(), 'utf8')) as { layers?: unknown }
      shippedTable = data?.layers && typeof data.layers === 'object' ? (data.layers as Record<string, unknown>) : null
    } catch {
      shippedTable = null
    }
  }
  const ops = shippedTable ? shippedTable[key] : undefined
  return Array.isArray(ops) ? (reviveJsExpr(ops) as Op[]) : undefined
}

/** JSON turns a JsExpr into `{__jsExpr}`; turn those back into JsExpr instances. */
function reviveJsExpr(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reviveJsExpr)
  if (value && typeof value === 'object') {
    const keys = Object.keys(value)
    if (keys.length === 1 && keys[0] === '__jsExpr' && typeof (value as JsExpr).__jsExpr === 'string')
      return new JsExpr((value as JsExpr).__jsExpr)
    const out: Record<string, unknown> = {}
    for (const key of keys) out[key] = reviveJsExpr((value as Record<string, unknown>)[key])
    return out
  }
  return value
}
