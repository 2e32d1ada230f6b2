// Editing one patch layer (a YAML list of operations) in place: comments and the other operations
// stay as the user wrote them; a row's change goes into its last `- id: X` operation, or a new one.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type * as Yaml from 'yaml'
import type { YAMLMap } from 'yaml'

// The yaml package is loaded at the first edit, not with the web host: compiling it is tens of
// milliseconds of `dsh web`'s launch, and most runs never edit a layer.
const load = createRequire(import.meta.url)
let yamlModule: typeof Yaml | undefined
const yaml = (): typeof Yaml => (yamlModule ??= load('yaml') as typeof Yaml)

export interface RowChange {
  disabled?: boolean
  config?: unknown
}

export class LayerEditError extends Error {
  override name = 'LayerEditError'
}

/** `text` with `change` applied to row `id`; throws LayerEditError for a layer that is not a list. */
export function editLayerText(text: string, file: string, id: string, change: RowChange): string {
  const { isMap, isSeq, parseDocument } = yaml()
  const doc = parseDocument(text)
  if (doc.errors.length)
    throw new LayerEditError(
      `${file}: not valid YAML (${doc.errors[0].message.split('\n')[0]}); fix it before changing plugins here`,
    )
  if (doc.contents === null || doc.contents === undefined) doc.contents = doc.createNode([]) as never
  const list = doc.contents
  if (!isSeq(list))
    throw new LayerEditError(`${file}: a patch layer is a YAML list of operations; fix it before changing plugins here`)
  let target: YAMLMap | undefined
  for (const item of list.items) {
    if (isMap(item) && ((item as YAMLMap).get('id') as unknown) === id && !item.has('insert')) target = item as YAMLMap
  }
  if (!target) {
    target = doc.createNode({ id }) as YAMLMap
    list.items.push(target as never)
  }
  if (change.disabled !== undefined) target.set('disabled', change.disabled)
  if (change.config !== undefined) target.set('config', doc.createNode(change.config))
  return doc.toString()
}

/** Applies `change` to the layer file (created when absent), replacing it atomically. */
export function editLayerFile(file: string, id: string, change: RowChange): void {
  const before = existsSync(file) ? readFileSync(file, 'utf8') : ''
  const after = editLayerText(before, file, id, change)
  const temp = `${file}.${process.pid}.tmp`
  writeFileSync(temp, after)
  renameSync(temp, file)
}
