// Edits of a profile's `cordis.patch.yml` that keep the user's comments, order and formatting:
// appending an `- insert:` operation for a plugin's row, and taking a package's rows out again.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { isMap, isSeq, parseDocument, type YAMLMap, YAMLSeq, type Document } from 'yaml'
import { jsTag } from '@dsh/app-boot'
import { PluginError } from './errors.ts'

export interface PluginRow {
  id: string
  name: string
  config?: unknown
  disabled?: boolean
}

function load(file: string): Document {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : ''
  const doc = parseDocument(text, { customTags: [jsTag] })
  if (doc.errors.length) {
    const e = doc.errors[0]
    const at = e.linePos?.[0]
    throw new PluginError(`${file}${at ? `:${at.line}:${at.col}` : ''}: cannot edit: ${e.message.split('\n')[0]}`)
  }
  if (doc.contents === null) doc.contents = new YAMLSeq() as never
  if (!isSeq(doc.contents)) throw new PluginError(`${file}: cannot edit: the layer must be a YAML list of operations`)
  return doc
}

/** Writes through a temp file and a rename, so a running host's watcher never reads half a file. */
export function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, text)
  renameSync(tmp, file)
}

/** Appends `- insert: [row]` (preceded by `comment`) to the layer file, creating it when missing. */
export function addRow(file: string, row: PluginRow, comment: string): void {
  const doc = load(file)
  const seq = doc.contents as YAMLSeq
  seq.flow = false
  const op = doc.createNode({ insert: [row] }) as YAMLMap
  op.commentBefore = ` ${comment}`
  seq.items.push(op)
  writeAtomic(file, doc.toString({ lineWidth: 0 }))
}

/** Rows of the layer's insert operations whose `name` is `pkg`. */
export function rowsOf(file: string, pkg: string): string[] {
  if (!existsSync(file)) return []
  const seq = load(file).contents as YAMLSeq
  const ids: string[] = []
  for (const item of seq.items) {
    const rows = isMap(item) ? item.get('insert') : undefined
    if (!isSeq(rows)) continue
    for (const r of rows.items) if (isMap(r) && r.get('name') === pkg) ids.push(String(r.get('id')))
  }
  return ids
}

/**
 * Removes every inserted row named `pkg` (and an insert operation left empty). Returns the ids
 * removed and the ids of `- id:` operations that still patch one of them (left for the user).
 */
export function removeRows(file: string, pkg: string): { removed: string[]; dangling: string[] } {
  if (!existsSync(file)) return { removed: [], dangling: [] }
  const doc = load(file)
  const seq = doc.contents as YAMLSeq
  const removed: string[] = []
  // A comment above a removed operation may be the user's (the file's header is attached to the
  // first item by the parser): it moves to the next item, or the document, unless we wrote it.
  let carried: string | undefined
  const kept: unknown[] = []
  for (const item of seq.items) {
    const rows = isMap(item) ? item.get('insert') : undefined
    if (isSeq(rows)) {
      rows.items = rows.items.filter((r) => {
        if (!isMap(r) || r.get('name') !== pkg) return true
        removed.push(String(r.get('id')))
        return false
      })
    }
    const node = item as { commentBefore?: string | null }
    if (isSeq(rows) && rows.items.length === 0) {
      const own = (node.commentBefore ?? '')
        .split('\n')
        .filter((l) => !l.startsWith(' dsh plugin add '))
        .join('\n')
      if (own.trim()) carried = carried ? `${carried}\n${own}` : own
      continue
    }
    if (carried) {
      node.commentBefore = node.commentBefore ? `${carried}\n${node.commentBefore}` : carried
      carried = undefined
    }
    kept.push(item)
  }
  seq.items = kept
  if (carried) {
    // Above an empty list the comment belongs to the list itself (`# ...` then `[]`, no blank line).
    const target = (kept.length ? doc : seq) as { commentBefore?: string | null }
    target.commentBefore = target.commentBefore ? `${target.commentBefore}\n${carried}` : carried
  }
  const dangling = seq.items
    .map((item) => (isMap(item) && !item.has('insert') ? String(item.get('id')) : undefined))
    .filter((id): id is string => id !== undefined && removed.includes(id))
  if (removed.length) writeAtomic(file, doc.toString({ lineWidth: 0 }))
  return { removed, dangling }
}
