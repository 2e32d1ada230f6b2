// @dsh/storage-sqlite: a `ctx.storage` provider over one SQLite database (better-sqlite3): one row
// per key, each write one transaction, so large domains do not rewrite a whole file.
import { existsSync, mkdirSync, renameSync } from 'node:fs'
import { dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { resolveDshHome } from '@dsh/home-paths'
import { StorageService, type DomainWrite, type LoadedDomain } from '@dsh/storage'

export const name = 'storage-sqlite'

export interface SqliteStorageConfig {
  /** The database file, or `:memory:`. Default: `<home>/storage/storage.sqlite`. */
  path?: string
  /** The dsh home for the default path. Default: `$DSH_HOME`, else `~/.dsh`. */
  home?: string
  /** How long a write waits for another connection's lock (ms). */
  busyTimeoutMs: number
}

export const Config: Schema<Partial<SqliteStorageConfig>, SqliteStorageConfig> = Schema.object({
  path: Schema.string().description('Database file or :memory:. Default: <home>/storage/storage.sqlite.'),
  home: Schema.string().description('The dsh home for the default path. Default: $DSH_HOME, else ~/.dsh.'),
  busyTimeoutMs: Schema.natural().default(5000).description('Wait (ms) for another connection holding the write lock.'),
}) as Schema<Partial<SqliteStorageConfig>, SqliteStorageConfig>

export function resolveDatabasePath(
  config: Pick<SqliteStorageConfig, 'path' | 'home'>,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (config.path === ':memory:') return config.path
  if (config.path) return resolveDshHome({ DSH_HOME: config.path })
  return join(
    config.home ? resolveDshHome({ DSH_HOME: config.home }) : resolveDshHome(env),
    'storage',
    'storage.sqlite',
  )
}

interface Row {
  key: string
  value: string
}

export class SqliteStorage extends StorageService {
  static Config = Config

  readonly path: string
  private readonly config: SqliteStorageConfig
  // Mutable state in one object (methods may run on a Cordis shadow of this instance).
  private readonly conn: { db?: Database.Database; warning?: string } = {}

  constructor(ctx: Context, config: SqliteStorageConfig) {
    super(ctx)
    this.config = config
    this.path = resolveDatabasePath(config)
    ctx.effect(
      () => () => {
        this.conn.db?.close()
        this.conn.db = undefined
      },
      'storage-sqlite: close',
    )
  }

  async [Service.init](): Promise<void> {
    try {
      this.conn.db = this.open()
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_NOTADB' || this.path === ':memory:') throw error
      // Keep the damaged bytes for the user and start a fresh database: one warning.
      const aside = `${this.path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`
      renameSync(this.path, aside)
      for (const suffix of ['-wal', '-shm'])
        if (existsSync(this.path + suffix)) renameSync(this.path + suffix, aside + suffix)
      this.warn(undefined, `${this.path}: not a SQLite database; moved it to ${aside} and started an empty one`)
      this.conn.db = this.open()
    }
  }

  private open(): Database.Database {
    if (this.path !== ':memory:') mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 })
    const db = new Database(this.path, { timeout: this.config.busyTimeoutMs ?? 5000 })
    try {
      db.pragma('journal_mode = WAL')
      db.pragma('synchronous = FULL')
      // rowid order is insertion order; an upsert keeps the row (and its place).
      db.exec(
        'CREATE TABLE IF NOT EXISTS kv (domain TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (domain, key))',
      )
    } catch (error) {
      db.close()
      throw error
    }
    return db
  }

  private get db(): Database.Database {
    if (!this.conn.db) throw new Error('the database is closed')
    return this.conn.db
  }

  location(domain: string): string {
    return `${this.path}#${domain}`
  }

  protected async loadDomain(domain: string): Promise<LoadedDomain> {
    const rows = this.db.prepare('SELECT key, value FROM kv WHERE domain = ? ORDER BY rowid').all(domain) as Row[]
    const entries = new Map<string, unknown>()
    const bad: string[] = []
    for (const row of rows) {
      try {
        entries.set(row.key, JSON.parse(row.value))
      } catch {
        bad.push(row.key)
      }
    }
    if (!bad.length) return { entries }
    // Unparseable rows are left in the table (a write only touches the keys it changes).
    const keys = bad
      .slice(0, 3)
      .map((key) => JSON.stringify(key))
      .join(', ')
    return {
      entries,
      warning: `${this.location(domain)}: ${bad.length} stored ${bad.length === 1 ? 'value is' : 'values are'} not JSON and ignored (${keys}${bad.length > 3 ? ', ...' : ''})`,
    }
  }

  protected async writeDomain(domain: string, write: DomainWrite): Promise<void> {
    const db = this.db
    const upsert = db.prepare(
      'INSERT INTO kv (domain, key, value) VALUES (?, ?, ?) ON CONFLICT (domain, key) DO UPDATE SET value = excluded.value',
    )
    const remove = db.prepare('DELETE FROM kv WHERE domain = ? AND key = ?')
    db.transaction(() => {
      for (const { key, value } of write.changes) {
        if (value === undefined) remove.run(domain, key)
        else upsert.run(domain, key, JSON.stringify(value))
      }
    })()
  }
}

export default SqliteStorage
