// The listing row of a session that cannot be read: kept (marked `damaged`) so `latest()` and
// `--continue` stop at it instead of silently picking an older session.
import { promises as fs } from 'node:fs'
import { dirname, join } from 'node:path'
import type { SessionId } from '@dsh/session'
import { SummaryBuilder, type SessionSummary, isValidSessionId } from '@dsh/session-persistence'
import { readHeader } from './header.ts'
import { CREATED_FILE, HEADER_FILE, LOG_RAW, LOG_ZSTD, SUMMARY_FILE, cwdKey } from './layout.ts'

/**
 * The row of a session whose header or log cannot be read: listed (by the newest of its files'
 * mtimes) with `damaged`, so `latest()` and `--continue` stop at it instead of picking an older
 * session. Without a readable header the cwd is recovered from what the directory key can
 * confirm (see recoverCwd); the creation time is then the directory's.
 */
export async function damagedSummary(
  root: string,
  id: SessionId,
  dir: string,
  error: unknown,
): Promise<SessionSummary | undefined> {
  const damaged = (error as Error)?.message ?? String(error)
  const header = await readHeader(id, dir).catch(() => undefined)
  const times = await Promise.all(
    [LOG_ZSTD, LOG_RAW, CREATED_FILE, HEADER_FILE].map((file) =>
      fs.stat(join(dir, file)).then(
        (st) => st.mtimeMs,
        () => 0,
      ),
    ),
  )
  const mtime = Math.floor(Math.max(...times))
  if (header) {
    const row = new SummaryBuilder(header).result()
    return { ...row, updatedAt: Math.max(row.updatedAt, mtime), damaged }
  }
  const born = await fs.stat(dir).then(
    (st) => Math.floor(st.birthtimeMs || st.mtimeMs),
    () => mtime,
  )
  return {
    id,
    cwd: await recoverCwd(root, id, dir),
    createdAt: Math.min(born, mtime || born),
    updatedAt: Math.max(born, mtime),
    turns: 0,
    events: 0,
    damaged,
  }
}

/**
 * The cwd of a session whose header is unreadable. The directory key ends in a hash of the cwd,
 * so a candidate is accepted only when its key is the directory's: the session's own summary
 * cache, an intact sibling header (every session of one directory key shares the cwd), and this
 * process's cwd (so `--continue` from that directory finds the damage). '' when none matches.
 */
export async function recoverCwd(root: string, id: SessionId, dir: string): Promise<string> {
  const keyDir = dirname(dir)
  const key = keyDir.slice(root.length + 1)
  const candidates: string[] = []
  // `.then(ok).catch(...)`: a file that is not JSON throws in `ok`, which must not fail the listing.
  const cached = await fs
    .readFile(join(dir, SUMMARY_FILE), 'utf8')
    .then((text) => JSON.parse(text)?.summary?.cwd)
    .catch(() => undefined)
  if (typeof cached === 'string') candidates.push(cached)
  candidates.push(process.cwd())
  for (const candidate of candidates) if (cwdKey(candidate) === key) return candidate
  const siblings = await fs.readdir(keyDir).catch(() => [] as string[])
  for (const sibling of siblings) {
    if (sibling === id || !isValidSessionId(sibling)) continue
    const cwd = await fs
      .readFile(join(keyDir, sibling, HEADER_FILE), 'utf8')
      .then((text) => JSON.parse(text)?.cwd)
      .catch(() => undefined)
    if (typeof cwd === 'string' && cwdKey(cwd) === key) return cwd
  }
  return ''
}
