// `--dump-config`: the composed rows as one YAML patch layer that, loaded as the only layer,
// composes to the same rows (same ids, same resolved modules, same config).
import { fileURLToPath } from 'node:url'
import { jsTag, yaml, type Row } from './layer.ts'
import type { Composition, ResolvedRow } from './profile.ts'
import { isBareSpecifier, resolveFrom } from './resolve.ts'

/**
 * The name written to the dump: a bare name stays bare when the dsh installation resolves it to
 * the same module; anything else becomes the absolute path of the module that boots, so the
 * dump loads from any directory.
 */
function portableName(r: ResolvedRow, installBase: string): string {
  const { name } = r.row
  if (!r.url || name.startsWith('cordis:')) return name
  if (isBareSpecifier(name) && resolveFrom(name, installBase) === r.url) return name
  return fileURLToPath(r.url)
}

function portableRow(r: ResolvedRow, installBase: string): Row {
  const row: Row = { ...r.row, name: portableName(r, installBase) }
  if (r.children) row.config = r.children.map((c) => portableRow(c, installBase))
  return row
}

export function dumpComposition(comp: Composition): string {
  const runs: { layers: string[]; rows: Row[] }[] = []
  for (const r of comp.rows) {
    const last = runs[runs.length - 1]
    const row = portableRow(r, comp.installBase)
    if (last && last.layers.join('\0') === r.layers.join('\0')) last.rows.push(row)
    else runs.push({ layers: r.layers, rows: [row] })
  }
  const { Document, isSeq } = yaml()
  const doc = new Document(
    runs.map((run) => ({ insert: run.rows })),
    { customTags: [jsTag] },
  )
  const header = [
    ` dsh --dump-config: profile ${comp.profile.name} (${comp.profile.dir})`,
    ' layers, in order:',
    ...comp.layers.map((l) => `   ${l.label}: ${l.file}`),
    ' Load it as the only layer (an empty profile plus --patch) to boot the same rows.',
  ]
  doc.commentBefore = header.join('\n')
  if (isSeq(doc.contents)) {
    doc.contents.items.forEach((item, i) => {
      ;(item as { commentBefore?: string }).commentBefore = ` == ${runs[i].layers.join(', ')}`
    })
  }
  return doc.toString({ lineWidth: 0 })
}
