// @dsh/session-persistence-sqlite: `ctx.sessionPersistence` over one SQLite database (WAL,
// insert-only event rows) through better-sqlite3. Each batch is one transaction.
import { mkdirSync } from 'node:fs'
import { hostname } from 'node:os'
import { dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { SessionId } from '@dsh/session'
import { resolveDshHome } from '@dsh/home-paths'
import {
  SessionCorruptError,
  SessionPersistence,
  SessionPersistenceError,
  parseHeader,
  recordProblem,
  type BackendReadResult,
  type SessionHeader,
  type SessionSummary,
  type StoredRecord,
  processAlive,
  sessionNotFound,
} from '@dsh/session-persistence'

export const name = '@dsh/session-persistence-sqlite'

export interface SqlitePersistenceConfig {
  /** Database file. Default: `$DSH_HOME/sessions.sqlite`. */
  path?: string
  /** `full` makes each committed batch survive power loss; `normal` only process crashes. */
  synchronous?: 'full' | 'normal'
  /** Milliseconds a write waits for another connection's lock before failing. */
  busyTimeoutMs?: number
  batchWindowMs?: number
  eventTypes?: Array<{ type: string; ignorable?: boolean }>
  unknownEventTypes?: 'warn' | 'refuse'
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  cwd TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  header TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  time INTEGER NOT NULL,
  type TEXT NOT NULL,
  ignorable INTEGER NOT NULL DEFAULT 0,
  data TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_by_type ON events (session_id, type, seq);
CREATE TABLE IF NOT EXISTS writers (
  session_id TEXT PRIMARY KEY,
  pid INTEGER NOT NULL,
  host TEXT NOT NULL,
  since INTEGER NOT NULL
);
`

interface EventRow {
  seq: number
  time: number
  type: string
  ignorable: number
  data: string
}

export class SqlitePersistence extends SessionPersistence {
  static Config: Schema<SqlitePersistenceConfig> = Schema.object({
    path: Schema.string().description('Database file. Default: $DSH_HOME/sessions.sqlite.'),
    synchronous: Schema.union(['full', 'normal']).default('full').description('SQLite synchronous mode in WAL.'),
    busyTimeoutMs: Schema.natural().default(5000).description('Wait for a locked database before a write fails.'),
    batchWindowMs: Schema.natural().default(20).description('Batch window after the first pending event.'),
    eventTypes: Schema.array(Schema.object({ type: Schema.string().required(), ignorable: Schema.boolean() })).default(
      [],
    ),
    unknownEventTypes: Schema.union(['warn', 'refuse'])
      .default('warn')
      .description('Appending an unregistered event type: warn once, or refuse the append.'),
  })

  readonly backend = 'sqlite'
  readonly path: string
  readonly db: Database.Database
  private readonly held = new Set<string>()
  private readonly sql

  constructor(ctx: Context, config: SqlitePersistenceConfig = {}) {
    super(ctx, config)
    this.path = config.path ?? join(resolveDshHome(), 'sessions.sqlite')
    mkdirSync(dirname(this.path), { recursive: true })
    this.db = new Database(this.path, { timeout: config.busyTimeoutMs ?? 5000 })
    this.db.pragma('journal_mode = WAL')
    this.db.pragma(`synchronous = ${(config.synchronous ?? 'full').toUpperCase()}`)
    this.db.exec(SCHEMA)
    const db = this.db
    this.sql = {
      header: db.prepare<[string], { header: string }>('SELECT header FROM sessions WHERE id = ?'),
      insertSession: db.prepare('INSERT INTO sessions (id, cwd, created_at, header) VALUES (?, ?, ?, ?)'),
      insertEvent: db.prepare(
        'INSERT INTO events (session_id, seq, time, type, ignorable, data) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      events: db.prepare<[string, number], EventRow>(
        'SELECT seq, time, type, ignorable, data FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq',
      ),
      lastSeq: db.prepare<[string], { last: number | null }>(
        'SELECT MAX(seq) AS last FROM events WHERE session_id = ?',
      ),
      writer: db.prepare<[string], { pid: number; host: string }>('SELECT pid, host FROM writers WHERE session_id = ?'),
      takeWriter: db.prepare('INSERT INTO writers (session_id, pid, host, since) VALUES (?, ?, ?, ?)'),
      dropWriter: db.prepare('DELETE FROM writers WHERE session_id = ? AND pid = ? AND host = ?'),
      dropStale: db.prepare('DELETE FROM writers WHERE session_id = ?'),
      summaries: db.prepare<[], { id: string; header: string; events: number; turns: number; updated: number | null }>(`
        SELECT s.id, s.header,
          (SELECT COUNT(*) FROM events e WHERE e.session_id = s.id) AS events,
          (SELECT COUNT(*) FROM events e WHERE e.session_id = s.id AND e.type = 'turn/start') AS turns,
          (SELECT MAX(time) FROM events e WHERE e.session_id = s.id) AS updated
        FROM sessions s`),
      title: db.prepare<[string], { data: string }>(
        `SELECT data FROM events WHERE session_id = ? AND type = 'session/title' ORDER BY seq DESC LIMIT 1`,
      ),
      prompts: db.prepare<[string], { data: string }>(
        `SELECT data FROM events WHERE session_id = ? AND type = 'user/message' ORDER BY seq LIMIT 50`,
      ),
    }
  }

  protected async backendCreate(header: SessionHeader): Promise<void> {
    this.db
      .transaction(() => {
        if (this.sql.header.get(header.id))
          throw new SessionPersistenceError('EXISTS', header.id, `session ${header.id} already exists`)
        this.takeLock(header.id)
        this.sql.insertSession.run(header.id, header.cwd, header.createdAt, JSON.stringify(header))
      })
      .immediate()
    this.held.add(header.id)
  }

  protected async backendOpen(id: SessionId): Promise<void> {
    this.db
      .transaction(() => {
        if (!this.sql.header.get(id)) throw sessionNotFound(id)
        this.takeLock(id)
      })
      .immediate()
    this.held.add(id)
  }

  protected async backendRead(id: SessionId, _mode: 'load' | 'inspect'): Promise<BackendReadResult> {
    // One read transaction: a concurrent writer's later commits are not half-seen.
    return this.db.transaction(() => ({ header: this.readHeader(id), records: this.readRows(id, 0) })).deferred()
  }

  protected override async backendReadFrom(id: SessionId, from: number): Promise<StoredRecord[]> {
    return this.db
      .transaction(() => {
        this.readHeader(id)
        return this.readRows(id, from)
      })
      .deferred()
  }

  protected async backendWrite(id: SessionId, records: StoredRecord[]): Promise<void> {
    if (!this.held.has(id)) throw new SessionPersistenceError('NOT_OPEN', id, `session ${id} is not open for writing`)
    this.db
      .transaction(() => {
        for (const { event, ignorable } of records) {
          this.sql.insertEvent.run(id, event.seq, event.time, event.type, ignorable ? 1 : 0, JSON.stringify(event.data))
        }
      })
      .immediate()
  }

  protected async backendClose(id: SessionId): Promise<void> {
    if (!this.held.delete(id)) return
    if (this.db.open) this.sql.dropWriter.run(id, process.pid, hostname())
  }

  protected async backendList(): Promise<SessionSummary[]> {
    return this.db
      .transaction(() =>
        this.sql.summaries.all().map((row): SessionSummary => {
          const header = parseHeader(row.id, JSON.parse(row.header))
          const title = this.sql.title.get(row.id)
          let firstPrompt: string | undefined
          for (const prompt of this.sql.prompts.all(row.id)) {
            const data = JSON.parse(prompt.data) as {
              content?: Array<{ type: string; text?: string }>
              source?: { kind?: string }
            }
            if (data.source?.kind !== 'human') continue
            const text = (data.content ?? [])
              .filter((b) => b.type === 'text')
              .map((b) => b.text ?? '')
              .join(' ')
              .replace(/\s+/g, ' ')
              .trim()
            if (text) {
              firstPrompt = text.length > 200 ? `${text.slice(0, 199)}…` : text
              break
            }
          }
          return {
            id: header.id,
            cwd: header.cwd,
            createdAt: header.createdAt,
            updatedAt: row.updated ?? header.createdAt,
            ...(title ? { title: (JSON.parse(title.data) as { title: string }).title } : {}),
            ...(firstPrompt !== undefined ? { firstPrompt } : {}),
            turns: row.turns,
            events: row.events,
            ...(header.parentSession ? { parentSession: header.parentSession } : {}),
            ...(header.origin !== undefined ? { origin: header.origin } : {}),
          }
        }),
      )
      .deferred()
  }

  protected override async shutdown(): Promise<void> {
    await super.shutdown()
    for (const id of [...this.held]) await this.backendClose(id as SessionId)
    if (this.db.open) this.db.close()
  }

  /** Inside a write transaction: claims the writers row, taking over one left by a dead process. */
  private takeLock(id: string): void {
    const holder = this.sql.writer.get(id)
    if (holder) {
      if (holder.host !== hostname()) {
        throw new SessionPersistenceError(
          'LOCKED',
          id,
          `session ${id} is open for writing on host ${holder.host} (pid ${holder.pid})`,
        )
      }
      if (processAlive(holder.pid)) {
        throw new SessionPersistenceError(
          'LOCKED',
          id,
          `session ${id} is open for writing by process ${holder.pid}${holder.pid === process.pid ? ' (this process)' : ''}`,
        )
      }
      this.sql.dropStale.run(id)
    }
    this.sql.takeWriter.run(id, process.pid, hostname(), Date.now())
  }

  private readHeader(id: string): SessionHeader {
    const row = this.sql.header.get(id)
    if (!row) throw sessionNotFound(id)
    let value: unknown
    try {
      value = JSON.parse(row.header)
    } catch {
      throw new SessionPersistenceError('BAD_HEADER', id, `session ${id}: stored header is not valid JSON`)
    }
    return parseHeader(id, value)
  }

  private readRows(id: string, from: number): StoredRecord[] {
    const records: StoredRecord[] = []
    let expected = from
    for (const row of this.sql.events.iterate(id, from)) {
      if (row.seq !== expected)
        throw new SessionCorruptError(id, expected, `event ${expected} is missing (next stored seq is ${row.seq})`)
      let data: unknown
      try {
        data = JSON.parse(row.data)
      } catch {
        throw new SessionCorruptError(id, row.seq, `event ${row.seq} holds invalid JSON`)
      }
      const value = { seq: row.seq, time: row.time, type: row.type, data }
      const problem = recordProblem(value, expected)
      if (problem) throw new SessionCorruptError(id, row.seq, problem)
      records.push(
        row.ignorable
          ? { event: value as StoredRecord['event'], ignorable: true }
          : { event: value as StoredRecord['event'] },
      )
      expected++
    }
    return records
  }
}

export default SqlitePersistence
