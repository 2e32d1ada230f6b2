// The per-store listing index: `<root>/index.jsonl`, one line per session summary with the stamp it
// was computed at (`{id, key, file, size, mtime, header, summary}`), appended by the writer that closes a
// session and by a listing that had to recompute a row. The last line of an id wins. A listing
// reads this one file and checks each row against its log with two `stat`s, instead of reading a
// `summary.json` per session; rows that are missing or stale take the per-session path.
//
// Appends are one `write()` on an O_APPEND descriptor, so writers in several processes never
// interleave or lose each other's lines. Compaction (a listing that finds the file mostly
// superseded lines, or damaged) rewrites it aside and renames it into place under `index.lock`;
// an append that raced with the rename is carried over by the compactor (it re-reads the old
// file's tail after the rename) or re-done by the appender (its descriptor is no longer the
// file's), so no row is lost either way. A lost row would only cost a slower listing: every row
// is checked against its log before it is trusted.
import { constants as fsc, promises as fs, readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { isValidSessionId, processAlive, type SessionSummary } from '@dsh/session-persistence'

export const INDEX_FILE = 'index.jsonl'
const INDEX_LOCK = 'index.lock'

/** One row of the index: a summary and the stamp of the files it was computed from. */
export interface IndexRow {
  id: string
  /** The session directory's `<cwd-key>`. */
  key: string
  /** The log's file name (`session.jsonl.zstd` or `session.jsonl`). */
  file: string
  /** The log's byte length when the summary was computed. */
  size: number
  /** The log's mtime (ms) then. */
  mtime: number
  /** `header.json`'s `size:mtimeMs` then. */
  header: string
  summary: SessionSummary
}

export interface IndexRead {
  rows: Map<string, IndexRow>
  /** Lines in the file (superseded ones included). */
  lines: number
  /** Why the file cannot be trusted (then `rows` is empty), undefined when it is sound or absent. */
  damage?: string
}

/**
 * Reads the index whole. Absent is an empty index (a store written before the index existed). A
 * line that is not a well-formed row, a torn last line included, makes the whole file untrusted:
 * `damage` says where, and the caller rebuilds it from the sessions themselves.
 *
 * With `key` (one `<cwd-key>` directory), only the lines of that directory's rows are parsed and
 * checked (`lines` counts them): the others are found not to hold `"key":"<key>"` and skipped. That
 * text cannot occur inside a JSON string (its quotes would be escaped there), so every row of the
 * directory is found; a line that holds it by another field is parsed and then dropped by its key.
 */
export function readIndex(root: string, key?: string): IndexRead {
  let text: string
  try {
    text = readFileSync(join(root, INDEX_FILE), 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return { rows: new Map(), lines: 0 }
    return { rows: new Map(), lines: 0, damage: `cannot read ${join(root, INDEX_FILE)}: ${code ?? String(error)}` }
  }
  const rows = new Map<string, IndexRow>()
  if (text === '') return { rows, lines: 0 }
  if (!text.endsWith('\n')) return { rows: new Map(), lines: 0, damage: 'its last line is incomplete' }
  if (key !== undefined) return readKey(text, key)
  const lines = text.split('\n')
  lines.pop()
  for (let i = 0; i < lines.length; i++) {
    let row: unknown
    try {
      row = JSON.parse(lines[i])
    } catch {
      return { rows: new Map(), lines: 0, damage: `line ${i + 1} is not JSON` }
    }
    if (!isRow(row)) return { rows: new Map(), lines: 0, damage: `line ${i + 1} is not an index row` }
    rows.set(row.id, row)
  }
  return { rows, lines: lines.length }
}

/** The rows of one `<cwd-key>` directory: only the lines naming it are cut out and parsed. */
function readKey(text: string, key: string): IndexRead {
  const rows = new Map<string, IndexRow>()
  const needle = `"key":${JSON.stringify(key)}`
  let lines = 0
  for (let at = text.indexOf(needle); at !== -1; ) {
    const start = text.lastIndexOf('\n', at) + 1
    const end = text.indexOf('\n', at)
    lines++
    let row: unknown
    try {
      row = JSON.parse(text.slice(start, end))
    } catch {
      return { rows: new Map(), lines: 0, damage: `a line of ${key} is not JSON` }
    }
    if (!isRow(row)) return { rows: new Map(), lines: 0, damage: `a line of ${key} is not an index row` }
    if (row.key === key) rows.set(row.id, row)
    at = text.indexOf(needle, end)
  }
  return { rows, lines }
}

function isRow(value: unknown): value is IndexRow {
  const row = value as IndexRow
  return (
    typeof row === 'object' &&
    row !== null &&
    typeof row.id === 'string' &&
    isValidSessionId(row.id) &&
    typeof row.key === 'string' &&
    typeof row.file === 'string' &&
    typeof row.size === 'number' &&
    typeof row.mtime === 'number' &&
    typeof row.header === 'string' &&
    typeof row.summary === 'object' &&
    row.summary !== null &&
    row.summary.id === row.id &&
    typeof row.summary.cwd === 'string' &&
    typeof row.summary.createdAt === 'number' &&
    typeof row.summary.updatedAt === 'number' &&
    typeof row.summary.turns === 'number' &&
    typeof row.summary.events === 'number'
  )
}

const encode = (rows: Iterable<IndexRow>) => {
  let text = ''
  for (const row of rows) text += JSON.stringify(row) + '\n'
  return text
}

/**
 * Appends rows in one write. When the file was replaced by a compaction while the write was under
 * way (the descriptor is no longer the path's file), the rows are appended again to the new file.
 */
export async function appendIndex(root: string, rows: IndexRow[]): Promise<void> {
  if (rows.length === 0) return
  const bytes = Buffer.from(encode(rows))
  const path = join(root, INDEX_FILE)
  for (let attempt = 0; attempt < 3; attempt++) {
    const handle = await fs.open(path, fsc.O_WRONLY | fsc.O_APPEND | fsc.O_CREAT, 0o600)
    let ino: number
    try {
      let written = 0
      while (written < bytes.length) written += (await handle.write(bytes, written)).bytesWritten
      ino = (await handle.stat()).ino
    } finally {
      await handle.close()
    }
    const now = await fs.stat(path).then(
      (st) => st.ino,
      () => -1,
    )
    if (now === ino) return
  }
}

/**
 * Replaces the index with `rows` (one line each) under `index.lock`; skipped (false) while another
 * live process holds the lock. Lines appended to the old file during the rewrite are copied over.
 */
export async function rewriteIndex(root: string, rows: Iterable<IndexRow>): Promise<boolean> {
  const lockPath = join(root, INDEX_LOCK)
  if (!(await takeLock(lockPath))) return false
  const path = join(root, INDEX_FILE)
  try {
    const old = await fs.open(path, 'r').catch(() => undefined)
    try {
      const seen = old ? (await old.stat()).size : 0
      const tmp = `${path}.${process.pid}.tmp`
      await fs.writeFile(tmp, encode(rows), { mode: 0o600 })
      await fs.rename(tmp, path)
      if (old) {
        // Appends that went to the old file after it was read: carry them over whole lines only.
        const end = (await old.stat()).size
        if (end > seen) {
          const tail = Buffer.alloc(end - seen)
          await old.read(tail, 0, tail.length, seen)
          const text = tail.toString('utf8')
          const whole = text.slice(0, text.lastIndexOf('\n') + 1)
          if (whole) await fs.appendFile(path, whole)
        }
      }
    } finally {
      await old?.close()
    }
  } finally {
    await fs.rm(lockPath, { force: true })
  }
  return true
}

/** O_EXCL lock file; one left by a dead process on this host is taken over. */
async function takeLock(path: string): Promise<boolean> {
  const mine = JSON.stringify({ pid: process.pid, host: hostname() }) + '\n'
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await fs.writeFile(path, mine, { flag: 'wx', mode: 0o600 })
      return true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return false
    }
    // An empty or torn lock (its writer died while taking it), or one that is not an object, has no holder.
    let holder: { pid?: number; host?: string } = {}
    try {
      holder = JSON.parse(await fs.readFile(path, 'utf8')) ?? {}
    } catch {}
    if (holder.host !== undefined && holder.host !== hostname()) return false
    if (typeof holder.pid === 'number' && processAlive(holder.pid)) return false
    await fs.rm(path, { force: true })
  }
  return false
}

/**
 * The summary after `more` (a `SummaryBuilder` result over the events written since) is added to
 * `base` (the summary of the log up to then), with `SummaryBuilder`'s rules: counts add up, the
 * last title and time win, the first human prompt stays. Keys in `SummaryBuilder.result()` order.
 */
export function mergeSummary(base: SessionSummary, more: SessionSummary): SessionSummary {
  const title = more.title ?? base.title
  const firstPrompt = base.firstPrompt ?? more.firstPrompt
  return {
    id: base.id,
    cwd: base.cwd,
    createdAt: base.createdAt,
    updatedAt: more.events > 0 ? more.updatedAt : base.updatedAt,
    ...(title !== undefined ? { title } : {}),
    ...(firstPrompt !== undefined ? { firstPrompt } : {}),
    turns: base.turns + more.turns,
    events: base.events + more.events,
    ...(base.parentSession ? { parentSession: base.parentSession } : {}),
    ...(base.origin !== undefined ? { origin: base.origin } : {}),
  }
}
