// @dsh/session-query-sqlite: `ctx.sessionQuery` with full-text search over SQLite FTS5
// (better-sqlite3). The index is a rebuildable cache of the logs: before each search it catches up
// with every stored session (reading only the events it has not indexed yet) and with every live
// one from memory, so a running session is searchable before its events are flushed. An index
// entry that no longer matches its log (fewer events, another last event) is dropped and rebuilt.
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
// Type only: the native module is loaded on the first search, so mounting the row costs nothing.
import type Database from 'better-sqlite3'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { AnySessionEvent } from '@dsh/session'
import { resolveDshHome } from '@dsh/home-paths'
import {
  SessionQuery,
  SessionQueryError,
  eventText,
  literalPhrase,
  type EventHit,
  type SearchHit,
  type SearchQuery,
  type SessionInfo,
} from '@dsh/session-query'

export interface SqliteQueryConfig {
  /** Index database. Default: `$DSH_HOME/storage/session_search.sqlite`. */
  path?: string
  /** Characters of one event's text that are indexed, at most. */
  maxEventChars?: number
}

/** Bumped when the schema or the indexed text changes: an index of another version is rebuilt. */
export const INDEX_VERSION = 1

/**
 * better-sqlite3, or a one-line error saying session search is off: the add-on is an optional
 * dependency of the published dsh package (absent where npm could not compile it).
 */
async function loadSqlite(): Promise<typeof Database> {
  try {
    return (await import('better-sqlite3')).default
  } catch (error) {
    const cause = String((error as Error)?.message ?? error).split('\n')[0]
    throw new Error(
      `session search is off: the better-sqlite3 native add-on is not installed or does not load (${cause}); reinstall dsh where a C++ compiler and Node's headers are available`,
    )
  }
}

interface IndexedRow {
  session_id: string
  events: number
  last_time: number | null
}

export class SqliteSessionQuery extends SessionQuery {
  static Config: Schema<SqliteQueryConfig> = Schema.object({
    path: Schema.string().description('Index database. Default: $DSH_HOME/storage/session_search.sqlite.'),
    maxEventChars: Schema.natural().min(100).default(100_000).description('Indexed characters per event, at most.'),
  })

  readonly path: string
  private readonly maxEventChars: number
  private db?: Database.Database
  /** One catch-up at a time (searches arriving meanwhile wait for it). */
  private syncing?: Promise<void>

  constructor(ctx: Context, config: SqliteQueryConfig = {}) {
    super(ctx)
    this.path = config.path ?? join(resolveDshHome(), 'storage', 'session_search.sqlite')
    this.maxEventChars = config.maxEventChars ?? 100_000
    ctx.effect(
      () => () => {
        this.db?.close()
        this.db = undefined
      },
      'session-query-sqlite: close',
    )
  }

  private async open(): Promise<Database.Database> {
    if (this.db) return this.db
    const Sqlite = await loadSqlite()
    if (this.db) return this.db
    if (this.path !== ':memory:') mkdirSync(dirname(this.path), { recursive: true })
    const db = new Sqlite(this.path)
    db.pragma('journal_mode = WAL')
    db.pragma('busy_timeout = 5000')
    const version = db.pragma('user_version', { simple: true }) as number
    if (version !== INDEX_VERSION) {
      db.exec('DROP TABLE IF EXISTS fts; DROP TABLE IF EXISTS indexed;')
      db.pragma(`user_version = ${INDEX_VERSION}`)
    }
    db.exec(`
      CREATE TABLE IF NOT EXISTS indexed (session_id TEXT PRIMARY KEY, cwd TEXT NOT NULL, events INTEGER NOT NULL, last_time INTEGER);
      CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, session_id UNINDEXED, seq UNINDEXED, type UNINDEXED, tokenize = 'trigram');
    `)
    this.db = db
    return db
  }

  /** Brings the index up to date with every stored and live session. */
  async sync(): Promise<void> {
    while (this.syncing !== undefined) await this.syncing
    this.syncing = this.catchUp().finally(() => (this.syncing = undefined))
    await this.syncing
  }

  private async catchUp(): Promise<void> {
    const db = await this.open()
    const rows = new Map(
      (db.prepare('SELECT session_id, events, last_time FROM indexed').all() as IndexedRow[]).map((r) => [
        r.session_id,
        r,
      ]),
    )
    const infos = await this.sessions()
    const drop = db.prepare('DELETE FROM fts WHERE session_id = ?')
    const forget = db.prepare('DELETE FROM indexed WHERE session_id = ?')
    const insert = db.prepare('INSERT INTO fts (text, session_id, seq, type) VALUES (?, ?, ?, ?)')
    const mark = db.prepare(
      'INSERT INTO indexed (session_id, cwd, events, last_time) VALUES (?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET cwd = excluded.cwd, events = excluded.events, last_time = excluded.last_time',
    )
    const write = db.transaction(
      (info: SessionInfo, reset: boolean, events: AnySessionEvent[], count: number, lastTime: number | null) => {
        if (reset) drop.run(info.id)
        for (const event of events) {
          const text = eventText(event)
          if (text)
            insert.run(
              text.length > this.maxEventChars ? text.slice(0, this.maxEventChars) : text,
              info.id,
              event.seq,
              event.type,
            )
        }
        mark.run(info.id, info.cwd, count, lastTime)
      },
    )
    for (const info of infos) {
      rows.delete(info.id)
      if (info.damaged !== undefined) continue
      const have = db.prepare('SELECT session_id, events, last_time FROM indexed WHERE session_id = ?').get(info.id) as
        | IndexedRow
        | undefined
      const live = this.liveSession(info.id)
      const total = live ? live.length : info.events
      if (have && have.events === total && (live || have.last_time === (total ? info.updatedAt : null))) continue
      let from = have && have.events <= total ? have.events : 0
      let events: AnySessionEvent[]
      if (live) events = live.slice(Math.max(0, from - 1))
      else events = from > 0 ? await this.read(info.id, { fromSeq: from - 1 }) : await this.read(info.id)
      // The anchor (last indexed event) must be unchanged, or the whole session is reindexed.
      if (from > 0) {
        if (events[0]?.seq !== from - 1 || events[0].time !== have!.last_time) {
          from = 0
          events = live ? live.slice(0) : await this.read(info.id)
        } else events = events.slice(1)
      }
      const last = events.at(-1)
      write(info, from === 0, events, from + events.length, last?.time ?? have?.last_time ?? null)
    }
    // Sessions that are gone.
    for (const id of rows.keys()) {
      drop.run(id)
      forget.run(id)
    }
  }

  async search(query: SearchQuery): Promise<SearchHit[]> {
    const { matches, infos } = await this.match(query)
    const best = new Map<string, SearchHit>()
    for (const m of matches) {
      const info = infos.get(m.sessionId)
      if (!info) continue
      const hit = best.get(m.sessionId)
      if (hit) {
        hit.matches++
        continue
      }
      best.set(m.sessionId, {
        sessionId: m.sessionId,
        cwd: info.cwd,
        ...(info.title !== undefined ? { title: info.title } : {}),
        updatedAt: info.updatedAt,
        live: info.live,
        seq: m.seq,
        type: m.type,
        snippet: m.snippet.replace(/\s+/g, ' ').trim(),
        matches: 1,
      })
    }
    return [...best.values()].slice(0, query.limit ?? 20)
  }

  async searchEvents(query: SearchQuery): Promise<EventHit[]> {
    const { matches, infos } = await this.match(query)
    const out: EventHit[] = []
    for (const m of matches) {
      const info = infos.get(m.sessionId)
      if (!info) continue
      out.push({
        sessionId: m.sessionId,
        cwd: info.cwd,
        ...(info.title !== undefined ? { title: info.title } : {}),
        live: info.live,
        seq: m.seq,
        type: m.type,
        snippet: m.snippet.replace(/\s+/g, ' ').trim(),
      })
      if (out.length >= (query.limit ?? 20)) break
    }
    return out
  }

  /** Every matching event, best first, with the infos of the sessions the filter lets through. */
  private async match(query: SearchQuery): Promise<{
    matches: Array<{ sessionId: string; seq: number; type: string; snippet: string; score: number }>
    infos: Map<string, SessionInfo>
  }> {
    const text = typeof query.text === 'string' ? query.text.trim() : ''
    if (!text) throw new SessionQueryError('BAD_QUERY', 'search text is empty')
    // The trigram tokenizer matches substrings of 3 or more characters.
    if ([...text].length < 3) throw new SessionQueryError('BAD_QUERY', 'search text needs at least 3 characters')
    if (query.sessionIds?.length === 0) return { matches: [], infos: new Map() }
    await this.sync()
    const db = await this.open()
    const conditions = ['fts MATCH ?']
    const params: unknown[] = [literalPhrase(text)]
    if (query.cwd !== undefined) {
      conditions.push('i.cwd = ?')
      params.push(query.cwd)
    }
    if (query.types?.length) {
      conditions.push(`fts.type IN (${query.types.map(() => '?').join(', ')})`)
      params.push(...query.types)
    }
    if (query.sessionIds) {
      conditions.push(`fts.session_id IN (${query.sessionIds.map(() => '?').join(', ')})`)
      params.push(...query.sessionIds)
    }
    const matches = db
      .prepare(
        `SELECT fts.session_id AS sessionId, fts.seq AS seq, fts.type AS type, snippet(fts, 0, '[', ']', '…', 48) AS snippet, bm25(fts) AS score
         FROM fts JOIN indexed i ON i.session_id = fts.session_id WHERE ${conditions.join(' AND ')} ORDER BY score, fts.session_id, fts.seq`,
      )
      .all(...params) as Array<{ sessionId: string; seq: number; type: string; snippet: string; score: number }>
    const { limit: _limit, text: _text, types: _types, ...filter } = query
    const infos = new Map<string, SessionInfo>((await this.sessions(filter)).map((info) => [info.id, info]))
    return { matches, infos }
  }
}

export const name = '@dsh/session-query-sqlite'
export default SqliteSessionQuery
