// Whether a cached summary still describes its session: the per-session `summary.json` and the
// rows of the store index are both trusted only while the files they were computed from carry
// the recorded stamp (log name, size and mtime; header size and mtime).
import { existsSync, promises as fs, statSync } from 'node:fs'
import { join } from 'node:path'
import type { SessionId } from '@dsh/session'
import type { SessionSummary } from '@dsh/session-persistence'
import type { IndexRow } from './list-index.ts'
import { HEADER_FILE, LOG_RAW, LOG_ZSTD, SUMMARY_FILE, type Stamp, exists, stampOf, writeAtomic } from './layout.ts'

/**
 * The cached summary when its recorded log is still the session's log, at the recorded size, and
 * `header.json` is the one read then (same size and modification time): a header damaged after
 * the cache was written takes the full path and is reported.
 */
export async function cachedSummary(
  id: SessionId,
  dir: string,
): Promise<{ summary: SessionSummary; stamp: Stamp } | undefined> {
  let cached: { size?: unknown; mtime?: unknown; file?: unknown; header?: unknown; summary?: SessionSummary }
  try {
    cached = JSON.parse(await fs.readFile(join(dir, SUMMARY_FILE), 'utf8'))
  } catch {
    return undefined // missing or unreadable: rebuilt by the caller
  }
  // An older cache without `file`, or a cache of another session: rebuilt.
  if (
    cached?.summary?.id !== id ||
    typeof cached.size !== 'number' ||
    (cached.file !== LOG_ZSTD && cached.file !== LOG_RAW)
  )
    return undefined
  if (typeof cached.header !== 'string') return undefined
  // A compressed log is preferred over a raw one, so a cached raw log must not have a rival.
  if (cached.file === LOG_RAW && (await exists(join(dir, LOG_ZSTD)))) return undefined
  const [log, header] = await Promise.all([
    fs.stat(join(dir, cached.file)).then(
      (st) => st,
      () => undefined,
    ),
    fs.stat(join(dir, HEADER_FILE)).then(stampOf, () => undefined),
  ])
  // The log's mtime is checked when the cache records it (caches of older builds do not).
  if (!log || log.size !== cached.size || (typeof cached.mtime === 'number' && cached.mtime !== log.mtimeMs))
    return undefined
  return header === cached.header
    ? { summary: cached.summary, stamp: { file: cached.file, size: log.size, mtime: log.mtimeMs, header } }
    : undefined
}

/** Writes a session's `summary.json` cache (not made durable: it is rebuilt when lost). */
export async function writeSummaryCache(dir: string, stamp: Stamp, summary: SessionSummary): Promise<void> {
  await writeAtomic(join(dir, SUMMARY_FILE), JSON.stringify({ ...stamp, summary }) + '\n', false)
}

/**
 * Whether an index row still describes its session: the log it names (one of the two log names) has
 * the recorded size, `header.json` the recorded size and mtime, and a raw log has no compressed
 * rival (which would win).
 */
export function rowValid(dir: string, row: IndexRow): boolean {
  if (row.file !== LOG_ZSTD && row.file !== LOG_RAW) return false
  // `dir` is already normalized and the names are fixed: a concatenation, not path.join, whose
  // normalization was a sixth of a 10,000-session listing.
  const log = statSync(`${dir}/${row.file}`, { throwIfNoEntry: false })
  if (!log || log.size !== row.size || log.mtimeMs !== row.mtime) return false
  const header = statSync(`${dir}/${HEADER_FILE}`, { throwIfNoEntry: false })
  if (!header || stampOf(header) !== row.header) return false
  return row.file === LOG_ZSTD || !existsSync(`${dir}/${LOG_ZSTD}`)
}
