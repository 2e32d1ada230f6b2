import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { Context, type Message as LogMessage } from 'cordis'
import Schema from 'schemastery'
import SqliteStorage, { resolveDatabasePath, type SqliteStorageConfig } from '../src/index.ts'

const Workspace = Schema.object({ name: Schema.string().required(), path: Schema.string().required() })

let home: string
let db: string
const fibers: { dispose(): unknown }[] = []

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-storage-sqlite-'))
  db = join(home, 'storage', 'storage.sqlite')
})

afterEach(async () => {
  for (const fiber of fibers.splice(0)) await fiber.dispose()
  rmSync(home, { recursive: true, force: true })
})

async function boot(config: Partial<SqliteStorageConfig> = {}) {
  const ctx = new Context()
  const logs: LogMessage[] = []
  ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void logs.push(m) })
  const fiber = await ctx.plugin(SqliteStorage, { home, ...config })
  fibers.push(fiber)
  const warnings = () =>
    logs.filter((m) => m.type === 'warn' || m.type === 'error').map((m) => m.args.map(String).join(' '))
  return { ctx, fiber, warnings }
}

describe('storage-sqlite', () => {
  it('resolves the default database path', () => {
    expect(resolveDatabasePath({}, { DSH_HOME: '/h' })).toBe('/h/storage/storage.sqlite')
    expect(resolveDatabasePath({ path: ':memory:' })).toBe(':memory:')
  })

  it('stores domains as rows, keeps insertion order across updates, and reads them back after a restart', async () => {
    const first = await boot()
    const ws = first.ctx.storage.domain('workspace', Workspace)
    await ws.set('w2', { name: 'two', path: '/2' })
    await ws.set('w1', { name: 'one', path: '/1' })
    await ws.update([
      { key: 'w2', value: { name: 'TWO', path: '/2' } },
      { key: 'w3', value: { name: 'three', path: '/3' } },
    ])
    expect(await ws.delete('w1')).toBe(true)
    await first.ctx.storage.domain('prefs', Schema.any()).set('ui', { theme: 'dark' })
    await first.fiber.dispose()

    const second = await boot()
    expect(await second.ctx.storage.domain('workspace', Workspace).entries()).toEqual([
      ['w2', { name: 'TWO', path: '/2' }],
      ['w3', { name: 'three', path: '/3' }],
    ])
    expect(await second.ctx.storage.domain('prefs', Schema.any()).get('ui')).toEqual({ theme: 'dark' })
  })

  it('a row that is not JSON is one warning, the rest loads, and the row is kept', async () => {
    const first = await boot()
    await first.ctx.storage.domain('workspace', Workspace).set('good', { name: 'g', path: '/g' })
    await first.fiber.dispose()
    const raw = new Database(db)
    raw.prepare("INSERT INTO kv (domain, key, value) VALUES ('workspace', 'bad', '{not json')").run()
    raw.close()

    const { ctx, warnings } = await boot()
    const ws = ctx.storage.domain('workspace', Workspace)
    expect((await ws.entries()).map(([key]) => key)).toEqual(['good'])
    expect(warnings()).toEqual([
      expect.stringMatching(/storage\.sqlite#workspace: 1 stored value is not JSON and ignored \("bad"\)/),
    ])
    await ws.set('new', { name: 'n', path: '/n' })
    const check = new Database(db, { readonly: true })
    expect(
      (
        check.prepare("SELECT key FROM kv WHERE domain = 'workspace' ORDER BY rowid").all() as Array<{ key: string }>
      ).map((r) => r.key),
    ).toEqual(['good', 'bad', 'new'])
    check.close()
  })

  it('a file that is not a SQLite database is one warning, moved aside, and a fresh database works', async () => {
    const { mkdirSync } = await import('node:fs')
    mkdirSync(join(home, 'storage'), { recursive: true })
    writeFileSync(db, 'definitely not sqlite '.repeat(100))
    const { ctx, warnings } = await boot()
    expect(warnings()).toEqual([
      expect.stringMatching(/storage\.sqlite: not a SQLite database; moved it to .*storage\.sqlite\.corrupt-/),
    ])
    const aside = readdirSync(join(home, 'storage')).find((name) => name.includes('.corrupt-'))!
    expect(readFileSync(join(home, 'storage', aside), 'utf8')).toMatch(/^definitely not sqlite/)
    await ctx.storage.domain('workspace', Workspace).set('w', { name: 'w', path: '/w' })
    expect(await ctx.storage.domain('workspace', Workspace).get('w')).toEqual({ name: 'w', path: '/w' })
  })

  it('a writer killed mid-loop leaves a database whose last transaction is whole and acknowledged writes present', async () => {
    const writer = fileURLToPath(new URL('./fixtures/writer.mjs', import.meta.url))
    const child = spawn(process.execPath, [writer, db], { stdio: ['ignore', 'pipe', 'pipe'] })
    let acknowledged = -1
    let stderr = ''
    child.stderr.on('data', (chunk) => (stderr += chunk))
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        const lines = chunk.toString().trim().split('\n')
        acknowledged = Number(lines[lines.length - 1])
        if (acknowledged >= 20) {
          child.kill('SIGKILL')
          resolve()
        }
      })
      child.on('exit', (code) => (code !== null ? reject(new Error(`writer exited ${code}: ${stderr}`)) : undefined))
    })
    await new Promise((resolve) => child.once('close', resolve))
    const { ctx, warnings } = await boot({ path: db })
    const crash = ctx.storage.domain('crash', Schema.object({ n: Schema.natural(), pad: Schema.string() }))
    const a = await crash.get('a')
    const b = await crash.get('b')
    expect(a!.n).toBeGreaterThanOrEqual(acknowledged)
    expect(b!.n).toBe(a!.n)
    expect(warnings()).toEqual([])
  })
})
