// Applies ordered layers to an empty row list. No evaluation; the file system is read only to
// name the line of a problem.
import { keepMatches, LayerError, locateInLayer, type Layer, type Row } from './layer.ts'
import { nearest } from './near.ts'

export interface ComposedRow {
  row: Row
  /** Labels of every layer that inserted or patched this row, in order, without repeats. */
  layers: string[]
  /** File of the layer that last set `name`; the name resolves from there. */
  nameFrom: string
  /** Where the row's `config` was last written: the layer's file and the item path to it. */
  configFrom?: { file: string; label: string; path: (string | number)[] }
}

export interface Applied {
  rows: ComposedRow[]
  /** One line each, e.g. `profile headless (/h/profiles/headless/cordis.patch.yml): [0] id "x" names no row; skipped`. */
  warnings: string[]
}

function clone<T>(value: T): T {
  // structuredClone would drop the JsExpr prototype; rows hold only plain data and JsExpr.
  if (Array.isArray(value)) return value.map(clone) as T
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clone(v)])) as T
  }
  return value
}

/**
 * Layer semantics: `insert` appends rows (a duplicate id is an error); `- id: X` replaces each
 * listed field of row X whole (`config` is never merged; `null` removes the field). A patch
 * naming an id no earlier layer (or earlier operation of the same layer) inserted is a warning.
 * `keep` disables every row so far that none of its entries matches (so does an exact entry that
 * names no row: a warning).
 */
export function applyLayers(layers: readonly Layer[]): Applied {
  const rows: ComposedRow[] = []
  const byId = new Map<string, ComposedRow>()
  const warnings: string[] = []
  for (const layer of layers) {
    const touch = (c: ComposedRow) => {
      if (c.layers[c.layers.length - 1] !== layer.label) c.layers.push(layer.label)
    }
    for (const op of layer.ops) {
      if (op.kind === 'keep') {
        // Every row so far that no entry keeps is disabled; a kept row keeps its own `disabled`.
        for (const c of rows) {
          if (op.ids.some((entry) => keepMatches(entry, c.row.id))) continue
          if (c.row.disabled !== true) {
            c.row.disabled = true
            touch(c)
          }
        }
        op.ids.forEach((entry, i) => {
          if (entry.includes('*') || byId.has(entry)) return
          const guess = nearest(entry, byId.keys())
          const line = locateInLayer(layer.file, [op.index, 'keep', i])
          warnings.push(
            `${layer.label} (${layer.file}${line ? `:${line}` : ''}): [${op.index}].keep[${i}] id "${entry}" names no row${guess ? ` (did you mean "${guess}"?)` : ''}; nothing kept by it`,
          )
        })
        continue
      }
      if (op.kind === 'insert') {
        op.rows.forEach((row, i) => {
          if (byId.has(row.id)) {
            const prior = byId.get(row.id)!
            const line = locateInLayer(layer.file, [op.index, 'insert', i, 'id'])
            throw new LayerError(
              `${layer.file}${line ? `:${line}` : ''}: [${op.index}].insert[${i}].id: duplicate id "${row.id}" (already inserted by ${prior.layers[0]}); patch it with "- id: ${row.id}" instead`,
            )
          }
          const c: ComposedRow = { row: clone(row), layers: [layer.label], nameFrom: layer.file }
          if (row.config !== undefined)
            c.configFrom = { file: layer.file, label: layer.label, path: [op.index, 'insert', i, 'config'] }
          rows.push(c)
          byId.set(row.id, c)
        })
      } else {
        const target = byId.get(op.id)
        if (!target) {
          const guess = nearest(op.id, byId.keys())
          const line = locateInLayer(layer.file, [op.index, 'id'])
          warnings.push(
            `${layer.label} (${layer.file}${line ? `:${line}` : ''}): [${op.index}] id "${op.id}" names no row${guess ? ` (did you mean "${guess}"?)` : ''}; skipped`,
          )
          continue
        }
        const row = target.row as unknown as Record<string, unknown>
        for (const [field, value] of Object.entries(op.fields)) {
          if (value === null) delete row[field]
          else row[field] = clone(value)
          if (field === 'name') target.nameFrom = layer.file
          if (field === 'config')
            target.configFrom =
              value === null ? undefined : { file: layer.file, label: layer.label, path: [op.index, 'config'] }
        }
        touch(target)
      }
    }
  }
  return { rows, warnings }
}
