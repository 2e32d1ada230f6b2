// The on-disk layout of one session directory (`<root>/<cwd-key>/<id>/`): its file names, the
// directory key of a cwd, the stamp a summary cache records, and the small file helpers every part
// of the backend shares (existence checks, atomic writes, directory syncs, the log marker).
import { createHash } from 'node:crypto'
import { promises as fs } from 'node:fs'
import { dirname, join } from 'node:path'

export const LOG_ZSTD = 'session.jsonl.zstd'
export const LOG_RAW = 'session.jsonl'
export const HEADER_FILE = 'header.json'
export const LOCK_FILE = 'writer.lock'
export const SUMMARY_FILE = 'summary.json'
/**
 * Created beside the log by its first batch and holding the log's file name: a session directory
 * with this marker and no log lost its log (damage), one without either never wrote an event.
 */
export const CREATED_FILE = 'log.created'

/**
 * The stamp a summary was computed at: the log's name, size and mtime (a log overwritten in place at
 * the same size changes its mtime), `header.json`'s size and mtime.
 */
export interface Stamp {
  file: string
  size: number
  mtime: number
  header: string
}

/** `<sanitised cwd, at most 60 chars>-<8 hex of sha256(cwd)>`: readable and collision-safe. */
export function cwdKey(cwd: string): string {
  const readable =
    cwd
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(-60) || 'root'
  return `${readable}-${createHash('sha256').update(cwd).digest('hex').slice(0, 8)}`
}

export async function exists(path: string): Promise<boolean> {
  try {
    await fs.access(path)
    return true
  } catch {
    return false
  }
}

export async function anyExists(dir: string, files: string[]): Promise<boolean> {
  return (await Promise.all(files.map((file) => exists(join(dir, file))))).includes(true)
}

/** Size and modification time of a file, as the summary cache records them. */
export function stampOf(st: { size: number; mtimeMs: number }): string {
  return `${st.size}:${st.mtimeMs}`
}

/**
 * Records beside a just-created log that it exists. Written after the log's rename is durable, so
 * the marker never precedes the log; losing the marker to a crash only forgoes detecting a later
 * loss of that log.
 */
export async function markCreated(logPath: string): Promise<void> {
  await fs.writeFile(join(dirname(logPath), CREATED_FILE), logPath.slice(dirname(logPath).length + 1) + '\n', {
    mode: 0o600,
  })
}

export async function writeAtomic(path: string, text: string, durable = true): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`
  const handle = await fs.open(tmp, 'w', 0o600)
  try {
    await handle.writeFile(text)
    if (durable) await handle.sync()
  } finally {
    await handle.close()
  }
  await fs.rename(tmp, path)
}

export async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
