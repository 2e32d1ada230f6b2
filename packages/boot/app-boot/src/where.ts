// Where in the user's patch files a row's config was written, so a refused config names the
// file and line to edit (`/h/cordis.patch.yml:4`), as settings.yaml problems do.
import type { BootFailure } from './boot.ts'
import { locateInLayer, type ComposedRow } from '@dsh/app-compose'

/**
 * `file:line` of the row's config, or of `keys` inside it, when a layer the user writes (profile,
 * home or `--patch`, not a shipped bundle) set it last; undefined otherwise (or when the file no
 * longer holds it).
 */
export function configLocation(row: ComposedRow, keys: readonly string[] = []): string | undefined {
  const from = row.configFrom
  if (!from || from.label.startsWith('bundle ')) return undefined
  const line = locateInLayer(from.file, [...from.path, ...keys])
  return line ? `${from.file}:${line}` : undefined
}

/**
 * Prefixes the cause of a row's config or apply failure with the place of its config in the
 * user's patch file: a `config` failure names the refused field's line, an `apply` failure (a
 * plugin refusing its config at start) the line of `config:`.
 */
export function locateFailures(failures: BootFailure[], rows: readonly ComposedRow[]): BootFailure[] {
  return failures.map((f) => {
    if (f.kind !== 'config' && f.kind !== 'apply') return f
    const row = rows.find((r) => r.row.id === f.id)
    if (!row) return f
    const field = /^invalid config: field config\.([^:]+):/.exec(f.cause)?.[1]
    const at = configLocation(row, field ? field.split('.') : [])
    return at ? { ...f, cause: `${at}: ${f.cause}` } : f
  })
}
