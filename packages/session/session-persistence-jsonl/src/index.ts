// @dsh/session-persistence-jsonl: the default `ctx.sessionPersistence` backend. One directory per
// session under `<root>/<cwd-key>/<id>/`: `header.json`, the log (`session.jsonl.zstd` or
// `session.jsonl`), `log.created` (written with the first batch: the log must exist from then
// on), a writer lock and a rebuildable `summary.json` cache for `list()`; the store root holds the
// listing index (`index.jsonl`, see list-index.ts) that lets `list()` read one file.
import { createHash } from 'node:crypto'
import { existsSync, constants as fsc, promises as fs, readdirSync, statSync } from 'node:fs'
import { hostname } from 'node:os'
import { basename, dirname, join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { SessionId } from '@dsh/session'
import { resolveDshHome } from '@dsh/home-paths'
import {
  SessionCorruptError,
  SessionPersistence,
  SessionPersistenceError,
  SummaryBuilder,
  parseHeader,
  type BackendReadResult,
  type SessionHeader,
  type SessionSummary,
  type StoredRecord,
  isValidSessionId,
  parseSessionId,
  processAlive,
  sessionNotFound,
} from '@dsh/session-persistence'
import { CodecNeeded, FramingError, encodeBatch, encodeLines, type ScanResult, scanRaw, scanZstd } from './framing.ts'
import { appendIndex, INDEX_FILE, type IndexRow, mergeSummary, readIndex, rewriteIndex } from './list-index.ts'
import { loadZstd, readyZstd, type ZstdCodec } from './zstd.ts'

export { loadZstd, readyZstd, type ZstdCodec } from './zstd.ts'
export { INDEX_FILE, readIndex, type IndexRow } from './list-index.ts'
export {
  scanRaw,
  scanZstd,
  encodeBatch,
  encodeLines,
  storedFrame,
  unstoreFrame,
  BATCH_HEADER_SIZE,
  FramingError,
} from './framing.ts'

export const name = '@dsh/session-persistence-jsonl'

export const LOG_ZSTD = 'session.jsonl.zstd'
/**
 * Where the WebAssembly codec is concerned (Node without zlib zstd), a log below this size is
 * written in stored frames without loading it; the batch that finds the log this large starts
 * the load, and batches after it are compressed once it is ready.
 */
export const STORE_BELOW = 64 * 1024
export const LOG_RAW = 'session.jsonl'
const HEADER_FILE = 'header.json'
const LOCK_FILE = 'writer.lock'
const SUMMARY_FILE = 'summary.json'
/**
 * Created beside the log by its first batch and holding the log's file name: a session directory
 * with this marker and no log lost its log (damage), one without either never wrote an event.
 */
const CREATED_FILE = 'log.created'
/** Sessions whose `list()` row is computed concurrently. */
const LIST_CONCURRENCY = 16

export interface JsonlPersistenceConfig {
  /** Directory holding the sessions. Default: `$DSH_HOME/sessions`. */
  root?: string
  /** Log format of new sessions. Existing sessions keep theirs. */
  compression?: 'zstd' | 'none'
  /** zstd level of each batch frame. */
  zstdLevel?: number
  /** `wasm` forces the @bokuweb/zstd-wasm codec even where Node's zlib has zstd. */
  zstdCodec?: 'auto' | 'wasm'
  batchWindowMs?: number
  /** fsync each batch (off only for throwaway data: a crash may then lose acknowledged batches). */
  fsync?: boolean
  eventTypes?: Array<{ type: string; ignorable?: boolean }>
  unknownEventTypes?: 'warn' | 'refuse'
  /**
   * Keep `<root>/index.jsonl` (written when a session closes and when a listing recomputes a row)
   * and list from it. Off: every listing reads each session's own `summary.json`.
   */
  listIndex?: boolean
}

/**
 * The stamp a summary was computed at: the log's name, size and mtime (a log overwritten in place at
 * the same size changes its mtime), `header.json`'s size and mtime.
 */
interface Stamp {
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

interface OpenLog {
  /** Unset until the first batch creates the log file (a session with no events has none). */
  handle?: fs.FileHandle
  /** The handle was opened O_DSYNC: each write returns durable, no separate fdatasync. */
  dsync?: boolean
  path: string
  compressed: boolean
  /** Byte length of the durable, intact log. */
  size: number
  lockPath: string
  /**
   * The summary of what the log holds, kept up to date by each batch for the listing index:
   * `base` is the summary of the log as opened (undefined for a new session), `more` folds the
   * batches written since. Unset when the opened log's summary was not known (the index row is
   * then left to the next listing).
   */
  tracked?: { base?: SessionSummary; more: SummaryBuilder }
}

export class JsonlPersistence extends SessionPersistence {
  static Config: Schema<JsonlPersistenceConfig> = Schema.object({
    root: Schema.string().description('Sessions directory. Default: $DSH_HOME/sessions.'),
    compression: Schema.union(['zstd', 'none']).default('zstd').description('Log format of new sessions.'),
    zstdLevel: Schema.natural().min(1).max(19).default(3).description('zstd level per batch frame.'),
    zstdCodec: Schema.union(['auto', 'wasm'])
      .default('auto')
      .description('auto: node:zlib when it has zstd, else @bokuweb/zstd-wasm.'),
    batchWindowMs: Schema.natural().default(20).description('Batch window after the first pending event.'),
    fsync: Schema.boolean().default(true).description('fsync each batch.'),
    eventTypes: Schema.array(Schema.object({ type: Schema.string().required(), ignorable: Schema.boolean() })).default(
      [],
    ),
    unknownEventTypes: Schema.union(['warn', 'refuse'])
      .default('warn')
      .description('Appending an unregistered event type: warn once, or refuse the append.'),
    listIndex: Schema.boolean().default(true).description('List from <root>/index.jsonl (one file per listing).'),
  })

  readonly backend = 'jsonl'
  readonly root: string
  private readonly options: Required<
    Pick<JsonlPersistenceConfig, 'compression' | 'zstdLevel' | 'zstdCodec' | 'fsync' | 'listIndex'>
  >
  private readonly open = new Map<string, OpenLog>()
  /** Directory of each session id seen by this instance. */
  private readonly dirs = new Map<string, string>()

  constructor(ctx: Context, config: JsonlPersistenceConfig = {}) {
    super(ctx, config)
    this.root = config.root ?? join(resolveDshHome(), 'sessions')
    this.options = {
      compression: config.compression ?? 'zstd',
      zstdLevel: config.zstdLevel ?? 3,
      zstdCodec: config.zstdCodec ?? 'auto',
      fsync: config.fsync ?? true,
      listIndex: config.listIndex ?? true,
    }
  }

  /** The codec in use (loaded on first need). */
  codec(): Promise<ZstdCodec> {
    return loadZstd(this.options.zstdCodec)
  }

  /**
   * The codec if loaded; else undefined (batches are stored meanwhile), and its load starts when
   * `start`. node:zlib's is always loaded.
   */
  private readyCodec(start = true): ZstdCodec | undefined {
    return readyZstd(this.options.zstdCodec, start)
  }

  /** Directory of a stored session, or undefined. */
  async sessionDir(id: SessionId | string): Promise<string | undefined> {
    parseSessionId(id)
    const known = this.dirs.get(id)
    if (known) return known
    let keys: string[]
    try {
      keys = await fs.readdir(this.root)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
    // One check per project directory, all at once: a new session's id is looked up in every
    // one of them, and one by one that was a file system round trip per project.
    const dirs = keys.map((key) => join(this.root, key, id))
    // A directory whose header is gone but whose log or log marker remains is still this session
    // (damaged, and reported as such by readHeader), never "not found".
    const found = await Promise.all(dirs.map((dir) => anyExists(dir, [HEADER_FILE, LOG_ZSTD, LOG_RAW, CREATED_FILE])))
    const dir = dirs[found.indexOf(true)]
    if (dir) this.dirs.set(id, dir)
    return dir
  }

  /**
   * Path of a session's log: the file when it exists, else (for a session this instance holds open
   * and has not written yet) where its first batch will create it; undefined otherwise.
   */
  async logPath(id: SessionId | string): Promise<string | undefined> {
    return (await this.existingLog(id)) ?? this.open.get(id)?.path
  }

  private async existingLog(id: SessionId | string): Promise<string | undefined> {
    const dir = await this.sessionDir(id)
    if (!dir) return undefined
    for (const file of [LOG_ZSTD, LOG_RAW]) if (await exists(join(dir, file))) return join(dir, file)
    return undefined
  }

  protected async backendCreate(header: SessionHeader): Promise<void> {
    if (await this.sessionDir(header.id))
      throw new SessionPersistenceError('EXISTS', header.id, `session ${header.id} already exists`)
    const dir = join(this.root, cwdKey(header.cwd), header.id)
    await fs.mkdir(dir, { recursive: true })
    const lockPath = await this.lock(header.id, dir)
    try {
      const compressed = this.options.compression === 'zstd'
      const path = join(dir, compressed ? LOG_ZSTD : LOG_RAW)
      if (await exists(path)) throw Object.assign(new Error('log exists'), { code: 'EEXIST' })
      // The log file itself appears with its first batch (see backendWrite), so an existing
      // empty log always means lost data, never "nothing written yet".
      await writeAtomic(join(dir, HEADER_FILE), JSON.stringify(header, null, 2) + '\n')
      if (this.options.fsync) await syncDir(dir)
      this.dirs.set(header.id, dir)
      this.open.set(header.id, { path, compressed, size: 0, lockPath, tracked: { more: new SummaryBuilder(header) } })
    } catch (error) {
      await fs.rm(lockPath, { force: true })
      if ((error as NodeJS.ErrnoException).code === 'EEXIST')
        throw new SessionPersistenceError('EXISTS', header.id, `session ${header.id} already exists`)
      throw error
    }
  }

  protected async backendOpen(id: SessionId): Promise<void> {
    const dir = await this.sessionDir(id)
    if (!dir) throw sessionNotFound(id)
    const lockPath = await this.lock(id, dir)
    const path = await this.existingLog(id)
    if (!path) {
      // A log that was created and is gone: writing would start a fresh log over lost history.
      const missing = await this.missingLog(id, dir)
      if (missing) {
        await fs.rm(lockPath, { force: true })
        throw missing
      }
      // Created, never written: the first batch creates the log in this build's format.
      const compressed = this.options.compression === 'zstd'
      const header = await this.readHeader(id, dir).catch(() => undefined)
      this.open.set(id, {
        path: join(dir, compressed ? LOG_ZSTD : LOG_RAW),
        compressed,
        size: 0,
        lockPath,
        ...(header ? { tracked: { more: new SummaryBuilder(header) } } : {}),
      })
      return
    }
    try {
      const handle = await fs.open(path, this.appendFlags())
      const compressed = path.endsWith('.zstd')
      const size = (await handle.stat()).size
      // The summary of the log as it is now, when its cache matches: batches written from here on
      // extend it, so closing can write the index row without reading the log back.
      const cached = this.options.listIndex ? await this.cachedSummary(id, dir) : undefined
      const tracked =
        cached && cached.stamp.size === size && join(dir, cached.stamp.file) === path
          ? { base: cached.summary, more: new SummaryBuilder(cached.summary as unknown as SessionHeader) }
          : undefined
      this.open.set(id, { handle, dsync: this.dsync, path, compressed, size, lockPath, tracked })
    } catch (error) {
      await fs.rm(lockPath, { force: true })
      throw error
    }
  }

  protected async backendRead(id: SessionId, mode: 'load' | 'inspect'): Promise<BackendReadResult> {
    const dir = await this.sessionDir(id)
    if (!dir) throw sessionNotFound(id)
    const header = await this.readHeader(id, dir)
    const path = await this.existingLog(id)
    if (!path) {
      const missing = await this.missingLog(id, dir)
      if (missing) throw missing
      // No log file and no marker: the session was created and nothing was ever written to it.
      return { header, records: [] }
    }
    const buf = await fs.readFile(path)
    // The first batch creates the file whole (written aside, then renamed into place), so an
    // empty log, or one without a single intact batch, lost its events: refuse, never load it empty.
    if (buf.length === 0)
      throw new SessionCorruptError(id, 0, `the log ${path} is empty (0 bytes): its events are lost`)
    const compressed = path.endsWith('.zstd')
    let scan: ScanResult
    try {
      if (!compressed) scan = scanRaw(buf)
      else {
        // Batches written before the codec loaded are stored frames: a log made only of those
        // (a short one-shot session) reads without loading the codec.
        try {
          scan = scanZstd(buf, this.readyCodec(false))
        } catch (error) {
          if (!(error instanceof CodecNeeded)) throw error
          scan = scanZstd(buf, await this.codec())
        }
      }
    } catch (error) {
      if (error instanceof FramingError) throw new SessionCorruptError(id, error.offset, `${error.reason} in ${path}`)
      throw error
    }
    if (scan.goodLength === 0 && scan.records.length === 0) {
      throw new SessionCorruptError(
        id,
        0,
        `the log ${path} holds no intact batch (${buf.length} bytes${scan.torn ? `: ${scan.torn.reason}` : ''})`,
      )
    }
    const result: BackendReadResult = { header, records: scan.records }
    if (scan.torn) {
      result.tornTail = { offset: scan.goodLength, dropped: buf.length - scan.goodLength, reason: scan.torn.reason }
      const log = this.open.get(id)
      if (mode === 'load' && log?.handle) {
        await log.handle.truncate(scan.goodLength)
        await log.handle.sync()
        log.size = scan.goodLength
      }
    }
    return result
  }

  protected async backendWrite(id: SessionId, records: StoredRecord[]): Promise<void> {
    const log = this.open.get(id)
    if (!log) throw new SessionPersistenceError('NOT_OPEN', id, `session ${id} is not open for writing`)
    // Until the codec has loaded, a batch is a stored zstd frame: no write waits for the
    // WebAssembly compile, and a short log (most one-shot sessions) never loads it at all.
    const bytes = log.compressed
      ? encodeBatch(records, this.readyCodec(log.size >= STORE_BELOW), this.options.zstdLevel)
      : encodeLines(records)
    if (!log.handle) {
      await this.createLog(log, bytes)
      track(log, records)
      return
    }
    try {
      let written = 0
      while (written < bytes.length) {
        const { bytesWritten } = await log.handle.write(bytes, written, bytes.length - written)
        written += bytesWritten
      }
      if (this.options.fsync && !log.dsync) await log.handle.datasync()
      log.size += bytes.length
      track(log, records)
    } catch (error) {
      // Leave no half batch behind: the next write must start on a batch boundary.
      await log.handle.truncate(log.size).catch(() => {})
      throw error
    }
  }

  protected async backendClose(id: SessionId): Promise<void> {
    const log = this.open.get(id)
    if (!log) return
    this.open.delete(id)
    await log.handle?.close().catch(() => {})
    // Before the lock goes: the next writer of this session appends its own row after this one.
    if (log.handle && log.tracked && this.options.listIndex) await this.indexClosed(id, log).catch(() => {})
    await fs.rm(log.lockPath, { force: true })
  }

  /** Writes a closed session's summary to its `summary.json` and appends it to the index. */
  private async indexClosed(id: SessionId, log: OpenLog): Promise<void> {
    const tracked = log.tracked as NonNullable<OpenLog['tracked']>
    const more = tracked.more.result()
    const summary = tracked.base ? mergeSummary(tracked.base, more) : more
    const dir = dirname(log.path)
    const [header, logStat] = await Promise.all([fs.stat(join(dir, HEADER_FILE)), fs.stat(log.path)])
    if (logStat.size !== log.size) return
    const stamp: Stamp = {
      file: log.path.slice(dir.length + 1),
      size: log.size,
      mtime: logStat.mtimeMs,
      header: stampOf(header),
    }
    await writeAtomic(join(dir, SUMMARY_FILE), JSON.stringify({ ...stamp, summary }) + '\n', false)
    await appendIndex(this.root, [{ id, key: basename(dirname(dir)), ...stamp, summary }])
  }

  protected async backendList(): Promise<SessionSummary[]> {
    // Plain locals: inside a service method `this` is a proxy, too slow for a loop per session.
    const root = this.root
    const dirs = this.dirs
    const useIndex = this.options.listIndex
    // The directories first (one readdir per project), synchronously: a few hundred microseconds.
    const found: Array<[SessionId, string, string]> = []
    let keys: string[]
    try {
      keys = readdirSync(root)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    }
    for (const key of keys) {
      if (key === INDEX_FILE) continue
      let ids: string[]
      try {
        ids = readdirSync(join(root, key))
      } catch {
        continue
      }
      for (const id of ids) if (isValidSessionId(id)) found.push([id, key, join(root, key, id)])
    }
    const rows: SessionSummary[] = []
    const index = useIndex ? readIndex(root) : undefined
    if (index?.damage)
      this.ctx.emit(
        'session-persistence/warning',
        `the session index ${join(root, INDEX_FILE)} is damaged (${index.damage}): rebuilt from the sessions`,
      )
    // A row of the index is trusted while its log has the recorded name and size and header.json
    // the recorded size and mtime: two stat calls, made synchronously (a few microseconds each,
    // where a promise per call cost tens). The rest take the per-session path below.
    const current = new Map<string, IndexRow>()
    const pending: Array<[SessionId, string, string]> = []
    for (const entry of found) {
      const row = index?.rows.get(entry[0])
      if (row && row.key === entry[1] && rowValid(entry[2], row)) {
        rows.push(row.summary)
        current.set(row.id, row)
        dirs.set(entry[0], entry[2])
      } else pending.push(entry)
    }
    // A few summaries in flight at once: each is several small file operations, and one at a time
    // made a listing of 1,000 sessions wait on 5,000 round trips to the thread pool in turn.
    const fresh: IndexRow[] = []
    let next = 0
    const worker = async () => {
      while (next < pending.length) {
        const [id, key, dir] = pending[next++]
        const got = await this.summaryOf(id, dir).catch(async (error: unknown) => ({
          summary: await this.damagedSummary(id, dir, error),
          stamp: undefined,
        }))
        if (!got?.summary) continue
        rows.push(got.summary)
        if (got.stamp) {
          const row: IndexRow = { id, key, ...got.stamp, summary: got.summary }
          fresh.push(row)
          current.set(id, row)
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, pending.length) }, worker))
    if (index) {
      // Repair: recomputed rows are appended; a damaged index, or one mostly made of superseded
      // lines (sessions closed many times, or deleted), is rewritten from the rows just checked.
      const lines = index.lines + fresh.length
      if (index.damage || lines > 2 * current.size + 64) await rewriteIndex(root, current.values()).catch(() => {})
      else await appendIndex(root, fresh).catch(() => {})
    }
    return rows
  }

  protected override async shutdown(): Promise<void> {
    await super.shutdown()
    for (const id of [...this.open.keys()]) await this.backendClose(id as SessionId)
  }

  /**
   * Summary from the cache when it matches the log's size, else recomputed (and cached). The cache
   * names its log file, so a warm row costs two file operations (read the cache, stat that log)
   * instead of five; anything that does not line up takes the full path.
   */
  private async summaryOf(id: SessionId, dir: string): Promise<{ summary: SessionSummary; stamp?: Stamp } | undefined> {
    const cached = await this.cachedSummary(id, dir)
    if (cached) {
      this.dirs.set(id, dir)
      return cached
    }
    // A header, or else a log or its marker (a session whose header is gone: damage, reported).
    if (!(await exists(join(dir, HEADER_FILE))) && !(await anyExists(dir, [LOG_ZSTD, LOG_RAW, CREATED_FILE])))
      return undefined
    this.dirs.set(id, dir)
    const header = await this.readHeader(id, dir)
    const path = await this.existingLog(id)
    if (!path) {
      const missing = await this.missingLog(id, dir)
      if (missing) throw missing
      return { summary: new SummaryBuilder(header).result() }
    }
    const [logStat, headerStat] = await Promise.all([fs.stat(path), fs.stat(join(dir, HEADER_FILE))])
    const size = logStat.size
    const read = await this.backendRead(id, 'inspect')
    const builder = new SummaryBuilder(read.header)
    for (const record of read.records) builder.add(record.event as never)
    const summary = builder.result()
    const intact = read.tornTail ? read.tornTail.offset : size
    const file = path.slice(dir.length + 1)
    const headerStamp = stampOf(headerStat)
    if (intact !== size) return { summary }
    const stamp: Stamp = { file, size, mtime: logStat.mtimeMs, header: headerStamp }
    await writeAtomic(join(dir, SUMMARY_FILE), JSON.stringify({ ...stamp, summary }) + '\n', false).catch(() => {})
    return { summary, stamp }
  }

  /**
   * The cached summary when its recorded log is still the session's log, at the recorded size, and
   * `header.json` is the one read then (same size and modification time): a header damaged after
   * the cache was written takes the full path and is reported.
   */
  private async cachedSummary(
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

  /**
   * The row of a session whose header or log cannot be read: listed (by the newest of its files'
   * mtimes) with `damaged`, so `latest()` and `--continue` stop at it instead of picking an older
   * session. Without a readable header the cwd is recovered from what the directory key can
   * confirm (see recoverCwd); the creation time is then the directory's.
   */
  private async damagedSummary(id: SessionId, dir: string, error: unknown): Promise<SessionSummary | undefined> {
    const damaged = (error as Error)?.message ?? String(error)
    const header = await this.readHeader(id, dir).catch(() => undefined)
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
      cwd: await this.recoverCwd(id, dir),
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
  private async recoverCwd(id: SessionId, dir: string): Promise<string> {
    const keyDir = dirname(dir)
    const key = keyDir.slice(this.root.length + 1)
    const candidates: string[] = []
    const cached = await fs.readFile(join(dir, SUMMARY_FILE), 'utf8').then(
      (text) => JSON.parse(text)?.summary?.cwd,
      () => undefined,
    )
    if (typeof cached === 'string') candidates.push(cached)
    candidates.push(process.cwd())
    for (const candidate of candidates) if (cwdKey(candidate) === key) return candidate
    const siblings = await fs.readdir(keyDir).catch(() => [] as string[])
    for (const sibling of siblings) {
      if (sibling === id || !isValidSessionId(sibling)) continue
      const cwd = await fs.readFile(join(keyDir, sibling, HEADER_FILE), 'utf8').then(
        (text) => JSON.parse(text)?.cwd,
        () => undefined,
      )
      if (typeof cwd === 'string' && cwdKey(cwd) === key) return cwd
    }
    return ''
  }

  /**
   * The damage of a session directory whose log was created (its marker is there) and is gone;
   * undefined when no log was ever created.
   */
  private async missingLog(id: SessionId, dir: string): Promise<SessionCorruptError | undefined> {
    let file: string
    try {
      file = (await fs.readFile(join(dir, CREATED_FILE), 'utf8')).trim()
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
    const name = file === LOG_RAW || file === LOG_ZSTD ? file : LOG_ZSTD
    return new SessionCorruptError(
      id,
      0,
      `the log ${join(dir, name)} is missing (${join(dir, CREATED_FILE)} records that it was written): its events are lost`,
    )
  }

  /** Writes the first batch aside, makes it durable, then renames it into place as the log. */
  /**
   * With fsync on, where the platform has O_DSYNC the log is opened with it: a batch is one
   * `write()` that returns once the data is durable (what write + fdatasync guaranteed), one round
   * trip to the thread pool instead of two on every checkpoint.
   */
  private get dsync(): boolean {
    return this.options.fsync && typeof fsc.O_DSYNC === 'number' && fsc.O_DSYNC !== 0
  }

  private appendFlags(): number {
    return fsc.O_RDWR | fsc.O_APPEND | (this.dsync ? fsc.O_DSYNC : 0)
  }

  private async createLog(log: OpenLog, bytes: Uint8Array): Promise<void> {
    const tmp = `${log.path}.${process.pid}.tmp`
    if (this.dsync) {
      // The temp file is opened as the log will be (append, O_DSYNC): the batch is durable when
      // its write returns, and after the rename the same descriptor is the log's (a rename keeps
      // the file). No separate datasync, close and reopen on the way to the first request.
      let handle: fs.FileHandle | undefined
      try {
        handle = await fs.open(tmp, this.appendFlags() | fsc.O_CREAT | fsc.O_TRUNC, 0o600)
        let written = 0
        while (written < bytes.length)
          written += (await handle.write(bytes, written, bytes.length - written)).bytesWritten
        await fs.rename(tmp, log.path)
        await syncDir(dirname(log.path))
        await markCreated(log.path)
      } catch (error) {
        await handle?.close().catch(() => {})
        await fs.rm(tmp, { force: true })
        throw error
      }
      log.handle = handle
      log.dsync = true
      log.size = bytes.length
      return
    }
    try {
      const handle = await fs.open(tmp, 'w', 0o600)
      try {
        await handle.writeFile(bytes)
        if (this.options.fsync) await handle.datasync()
      } finally {
        await handle.close()
      }
      await fs.rename(tmp, log.path)
      if (this.options.fsync) await syncDir(dirname(log.path))
      await markCreated(log.path)
    } catch (error) {
      await fs.rm(tmp, { force: true })
      throw error
    }
    log.handle = await fs.open(log.path, this.appendFlags())
    log.dsync = this.dsync
    log.size = bytes.length
  }

  /**
   * The session's header. A header that is missing while the log (or its marker) remains, not
   * JSON, or not a valid header is `BAD_HEADER` naming the file: damage, never "not found".
   */
  private async readHeader(id: SessionId, dir: string): Promise<SessionHeader> {
    const path = join(dir, HEADER_FILE)
    let text: string
    try {
      text = await fs.readFile(path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      if (await anyExists(dir, [LOG_ZSTD, LOG_RAW, CREATED_FILE])) {
        throw new SessionPersistenceError('BAD_HEADER', id, `session ${id}: ${path} is missing while its log remains`)
      }
      throw sessionNotFound(id)
    }
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      throw new SessionPersistenceError('BAD_HEADER', id, `session ${id}: ${path} is not valid JSON`)
    }
    try {
      return parseHeader(id, value)
    } catch (error) {
      if (!(error instanceof SessionPersistenceError)) throw error
      throw new SessionPersistenceError('BAD_HEADER', id, `${error.message} (${path})`)
    }
  }

  /**
   * Takes `writer.lock` (O_EXCL). A lock left by a dead process on this host is taken over; a
   * live holder (including this process) makes it `LOCKED`.
   */
  private async lock(id: string, dir: string): Promise<string> {
    const path = join(dir, LOCK_FILE)
    const mine = JSON.stringify({ pid: process.pid, host: hostname(), since: Date.now() }) + '\n'
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await fs.writeFile(path, mine, { flag: 'wx', mode: 0o600 })
        return path
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
      let holder: { pid?: number; host?: string } = {}
      try {
        holder = JSON.parse(await fs.readFile(path, 'utf8')) ?? {}
      } catch {
        // An empty or torn lock file was left by a writer that died while taking it.
      }
      if (holder.host !== undefined && holder.host !== hostname()) {
        throw new SessionPersistenceError(
          'LOCKED',
          id,
          `session ${id} is open for writing on host ${holder.host} (pid ${holder.pid}); remove ${path} if that process is gone`,
        )
      }
      if (typeof holder.pid === 'number' && processAlive(holder.pid)) {
        throw new SessionPersistenceError(
          'LOCKED',
          id,
          `session ${id} is open for writing by process ${holder.pid}${holder.pid === process.pid ? ' (this process)' : ''}`,
        )
      }
      await fs.rm(path, { force: true })
    }
    throw new SessionPersistenceError('LOCKED', id, `session ${id}: could not take ${path}`)
  }
}

/**
 * Whether an index row still describes its session: the log it names (one of the two log names) has
 * the recorded size, `header.json` the recorded size and mtime, and a raw log has no compressed
 * rival (which would win).
 */
function rowValid(dir: string, row: IndexRow): boolean {
  if (row.file !== LOG_ZSTD && row.file !== LOG_RAW) return false
  const log = statSync(join(dir, row.file), { throwIfNoEntry: false })
  if (!log || log.size !== row.size || log.mtimeMs !== row.mtime) return false
  const header = statSync(join(dir, HEADER_FILE), { throwIfNoEntry: false })
  if (!header || stampOf(header) !== row.header) return false
  return row.file === LOG_ZSTD || !existsSync(join(dir, LOG_ZSTD))
}

/** Folds a written batch into the open log's summary (for the index row written at close). */
function track(log: OpenLog, records: StoredRecord[]): void {
  if (!log.tracked) return
  for (const record of records) log.tracked.more.add(record.event as never)
}

async function exists(path: string): Promise<boolean> {
  try {
    await fs.access(path)
    return true
  } catch {
    return false
  }
}

async function anyExists(dir: string, files: string[]): Promise<boolean> {
  return (await Promise.all(files.map((file) => exists(join(dir, file))))).includes(true)
}

/** Size and modification time of a file, as the summary cache records them. */
function stampOf(st: { size: number; mtimeMs: number }): string {
  return `${st.size}:${st.mtimeMs}`
}

/**
 * Records beside a just-created log that it exists. Written after the log's rename is durable, so
 * the marker never precedes the log; losing the marker to a crash only forgoes detecting a later
 * loss of that log.
 */
async function markCreated(logPath: string): Promise<void> {
  await fs.writeFile(join(dirname(logPath), CREATED_FILE), logPath.slice(dirname(logPath).length + 1) + '\n', {
    mode: 0o600,
  })
}

async function writeAtomic(path: string, text: string, durable = true): Promise<void> {
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

async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

export default JsonlPersistence
