// @dsh/session-persistence-jsonl: the default `ctx.sessionPersistence` backend. One directory per
// session under `<root>/<cwd-key>/<id>/`: `header.json`, the log (`session.jsonl.zstd` or
// `session.jsonl`), `log.created` (written with the first batch: the log must exist from then
// on), a writer lock and a rebuildable `summary.json` cache for `list()`; the store root holds the
// listing index (`index.jsonl`, see list-index.ts) that lets `list()` read one file.
//
// This file is the service: where sessions live, and the five backend steps (create, open, read,
// write, close) plus the listing. The parts it is made of: framing.ts (batch frames and their
// scan), zstd.ts (the codec), layout.ts (file names and file helpers), lock.ts (the writer lock),
// header.ts (header and lost-log damage), writer.ts (the open log: first batch, appends),
// summary-cache.ts (per-session summary cache and index row checks), list-index.ts (the store
// index), damage.ts (the listing row of an unreadable session).
import { promises as fs, readdirSync } from 'node:fs'
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
  type BackendReadResult,
  type ListOptions,
  type SessionHeader,
  type SessionSummary,
  type StoredRecord,
  isValidSessionId,
  parseSessionId,
  sessionNotFound,
} from '@dsh/session-persistence'
import { damagedSummary } from './damage.ts'
import { CodecNeeded, FramingError, encodeBatch, encodeLines, type ScanResult, scanRaw, scanZstd } from './framing.ts'
import { missingLog, readHeader } from './header.ts'
import {
  CREATED_FILE,
  HEADER_FILE,
  LOG_RAW,
  LOG_ZSTD,
  type Stamp,
  anyExists,
  cwdKey,
  exists,
  stampOf,
  syncDir,
  writeAtomic,
} from './layout.ts'
import { appendIndex, INDEX_FILE, type IndexRow, mergeSummary, readIndex, rewriteIndex } from './list-index.ts'
import { takeWriterLock } from './lock.ts'
import { cachedSummary, rowValid, writeSummaryCache } from './summary-cache.ts'
import { type OpenLog, appendBatch, appendFlags, createLog, track, useDsync } from './writer.ts'
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
export { LOG_RAW, LOG_ZSTD, cwdKey } from './layout.ts'

export const name = '@dsh/session-persistence-jsonl'

/**
 * Where the WebAssembly codec is concerned (Node without zlib zstd), a log below this size is
 * written in stored frames without loading it; the batch that finds the log this large starts
 * the load, and batches after it are compressed once it is ready.
 */
export const STORE_BELOW = 64 * 1024
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
    const lockPath = await takeWriterLock(header.id, dir)
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
    const lockPath = await takeWriterLock(id, dir)
    const path = await this.existingLog(id)
    if (!path) {
      // A log that was created and is gone: writing would start a fresh log over lost history.
      const missing = await missingLog(id, dir)
      if (missing) {
        await fs.rm(lockPath, { force: true })
        throw missing
      }
      // Created, never written: the first batch creates the log in this build's format.
      const compressed = this.options.compression === 'zstd'
      const header = await readHeader(id, dir).catch(() => undefined)
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
      const handle = await fs.open(path, appendFlags(useDsync(this.options.fsync)))
      const compressed = path.endsWith('.zstd')
      const size = (await handle.stat()).size
      // The summary of the log as it is now, when its cache matches: batches written from here on
      // extend it, so closing can write the index row without reading the log back.
      const cached = this.options.listIndex ? await cachedSummary(id, dir) : undefined
      const tracked =
        cached && cached.stamp.size === size && join(dir, cached.stamp.file) === path
          ? { base: cached.summary, more: new SummaryBuilder(cached.summary as unknown as SessionHeader) }
          : undefined
      this.open.set(id, { handle, dsync: useDsync(this.options.fsync), path, compressed, size, lockPath, tracked })
    } catch (error) {
      await fs.rm(lockPath, { force: true })
      throw error
    }
  }

  protected async backendRead(id: SessionId, mode: 'load' | 'inspect'): Promise<BackendReadResult> {
    const dir = await this.sessionDir(id)
    if (!dir) throw sessionNotFound(id)
    const header = await readHeader(id, dir)
    const path = await this.existingLog(id)
    if (!path) {
      const missing = await missingLog(id, dir)
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
      await createLog(log, bytes, this.options.fsync)
      track(log, records)
      return
    }
    await appendBatch(log, log.handle, bytes, this.options.fsync)
    track(log, records)
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
    await writeSummaryCache(dir, stamp, summary)
    await appendIndex(this.root, [{ id, key: basename(dirname(dir)), ...stamp, summary }])
  }

  protected async backendList(options?: ListOptions): Promise<SessionSummary[]> {
    // Plain locals: inside a service method `this` is a proxy, too slow for a loop per session.
    const root = this.root
    const dirs = this.dirs
    const useIndex = this.options.listIndex
    // One directory's sessions (`list({cwd})`): they all live under `<root>/<cwdKey(cwd)>/`, so the
    // listing reads that directory and that directory's lines of the index only, and checks no
    // other session. Such a listing never rewrites the index (it holds the other rows unchecked).
    const only = options?.cwd === undefined ? undefined : cwdKey(options.cwd)
    // The directories first (one readdir per project), synchronously: a few hundred microseconds.
    const found: Array<[SessionId, string, string]> = []
    let keys: string[]
    try {
      keys = only === undefined ? readdirSync(root) : [only]
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    }
    for (const key of keys) {
      if (key === INDEX_FILE) continue
      const keyDir = join(root, key)
      let ids: string[]
      try {
        ids = readdirSync(keyDir)
      } catch {
        continue
      }
      // A valid id has no separator or dot segment: concatenation gives what join() would.
      for (const id of ids) if (isValidSessionId(id)) found.push([id, key, `${keyDir}/${id}`])
    }
    const rows: SessionSummary[] = []
    const index = useIndex ? readIndex(root, only) : undefined
    if (index?.damage)
      this.ctx.emit(
        'session-persistence/warning',
        `the session index ${join(root, INDEX_FILE)} is damaged (${index.damage}): ${only === undefined ? 'rebuilt from the sessions' : 'listed from the sessions (the next full listing rebuilds it)'}`,
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
          summary: await damagedSummary(root, id, dir, error),
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
      // One directory's listing only appends: `current` holds that directory's rows, not the store's.
      const lines = index.lines + fresh.length
      if (only !== undefined) {
        if (!index.damage) await appendIndex(root, fresh).catch(() => {})
      } else if (index.damage || lines > 2 * current.size + 64)
        await rewriteIndex(root, current.values()).catch(() => {})
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
    const cached = await cachedSummary(id, dir)
    if (cached) {
      this.dirs.set(id, dir)
      return cached
    }
    // A header, or else a log or its marker (a session whose header is gone: damage, reported).
    if (!(await exists(join(dir, HEADER_FILE))) && !(await anyExists(dir, [LOG_ZSTD, LOG_RAW, CREATED_FILE])))
      return undefined
    this.dirs.set(id, dir)
    const header = await readHeader(id, dir)
    const path = await this.existingLog(id)
    if (!path) {
      const missing = await missingLog(id, dir)
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
    await writeSummaryCache(dir, stamp, summary).catch(() => {})
    return { summary, stamp }
  }
}

export default JsonlPersistence
