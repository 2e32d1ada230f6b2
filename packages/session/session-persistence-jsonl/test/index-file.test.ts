// The listing index file on its own (list-index.ts): what readIndex trusts and how it names the
// damage it refuses, appends, the compaction under `index.lock` (who may take the lock, and the
// lines appended to the old file while it was rewritten), the summary merge the closing writer uses,
// and when a listing compacts rather than appends. list-index.test.ts covers the index through
// whole listings; mutation testing (`pnpm mutation session-persistence-jsonl`) showed these rules
// unpinned there.
import { spawnSync } from 'node:child_process'
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { asSessionId } from '@dsh/session'
import type { SessionSummary } from '@dsh/session-persistence'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence from '../src/index.ts'
import { appendIndex, INDEX_FILE, type IndexRow, mergeSummary, readIndex, rewriteIndex } from '../src/list-index.ts'

let root: string
const contexts: Context[] = []
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-indexfile-'))
})
afterEach(async () => {
  for (const ctx of contexts.splice(0))
    await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
  await rm(root, { recursive: true, force: true })
})

const summary = (id: string, extra: Partial<SessionSummary> = {}): SessionSummary => ({
  id: asSessionId(id),
  cwd: '/w',
  createdAt: 1,
  updatedAt: 2,
  turns: 1,
  events: 3,
  ...extra,
})
const row = (id: string, extra: Partial<IndexRow> = {}): IndexRow => ({
  id,
  key: 'w-1234abcd',
  file: 'session.jsonl.zstd',
  size: 10,
  mtime: 5,
  header: '100:5',
  summary: summary(id),
  ...extra,
})
const indexPath = () => join(root, INDEX_FILE)
const lines = () => readFileSync(indexPath(), 'utf8').split('\n').filter(Boolean)

describe('readIndex', () => {
  it('absent or empty is an empty, sound index', () => {
    expect(readIndex(root)).toEqual({ rows: new Map(), lines: 0 })
    writeFileSync(indexPath(), '')
    expect(readIndex(root)).toEqual({ rows: new Map(), lines: 0 })
  })

  it('the last line of an id wins, and every line is counted', () => {
    writeFileSync(
      indexPath(),
      [row('a'), row('b'), row('a', { size: 99 })].map((r) => `${JSON.stringify(r)}\n`).join(''),
    )
    const read = readIndex(root)
    expect(read.damage).toBeUndefined()
    expect(read.lines).toBe(3)
    expect([...read.rows.keys()]).toEqual(['a', 'b'])
    expect(read.rows.get('a')?.size).toBe(99)
  })

  it('an unreadable file, a torn last line or a bad line makes it untrusted, saying where', () => {
    mkdirSync(indexPath())
    expect(readIndex(root)).toEqual({ rows: new Map(), lines: 0, damage: `cannot read ${indexPath()}: EISDIR` })
    rmSync(indexPath(), { recursive: true })
    const good = `${JSON.stringify(row('a'))}\n`
    const cases: Array<[string, string]> = [
      [`${good}{"id": "b"`, 'its last line is incomplete'],
      [`${good}{"id": \n`, 'line 2 is not JSON'],
      [`${good}null\n`, 'line 2 is not an index row'],
      [`${good}7\n`, 'line 2 is not an index row'],
    ]
    for (const [text, damage] of cases) {
      writeFileSync(indexPath(), text)
      expect(readIndex(root), text).toEqual({ rows: new Map(), lines: 0, damage })
    }
  })

  it('a row missing or mistyping any field is not a row', () => {
    const bad: Array<[string, unknown]> = [
      ['id not a session id', { ...row('a'), id: '../a', summary: summary('../a') }],
      ['id not a string', { ...row('a'), id: 7 }],
      ['key', { ...row('a'), key: 7 }],
      ['file', { ...row('a'), file: null }],
      ['size', { ...row('a'), size: '10' }],
      ['mtime', { ...row('a'), mtime: '5' }],
      ['header', { ...row('a'), header: 100 }],
      ['summary null', { ...row('a'), summary: null }],
      ['summary not an object', { ...row('a'), summary: 'a' }],
      ['summary of another id', { ...row('a'), summary: summary('b') }],
      ['summary cwd', { ...row('a'), summary: { ...summary('a'), cwd: 1 } }],
      ['summary createdAt', { ...row('a'), summary: { ...summary('a'), createdAt: '1' } }],
      ['summary updatedAt', { ...row('a'), summary: { ...summary('a'), updatedAt: '2' } }],
      ['summary turns', { ...row('a'), summary: { ...summary('a'), turns: '1' } }],
      ['summary events', { ...row('a'), summary: { ...summary('a'), events: '3' } }],
    ]
    for (const [label, value] of bad) {
      writeFileSync(indexPath(), `${JSON.stringify(value)}\n`)
      expect(readIndex(root).damage, label).toBe('line 1 is not an index row')
    }
    writeFileSync(indexPath(), `${JSON.stringify(row('a'))}\n`)
    expect(readIndex(root).damage).toBeUndefined()
  })
})

describe('appendIndex', () => {
  it('appends whole lines after what is there, and nothing for no rows', async () => {
    await appendIndex(root, [])
    expect(existsSync(indexPath())).toBe(false)
    await appendIndex(root, [row('a')])
    await appendIndex(root, [row('b'), row('c')])
    expect(lines().map((line) => JSON.parse(line).id)).toEqual(['a', 'b', 'c'])
  })
})

describe('rewriteIndex', () => {
  const lock = () => join(root, 'index.lock')

  it('replaces the file with the rows and leaves no lock', async () => {
    await appendIndex(root, [row('a'), row('a', { size: 11 }), row('b')])
    expect(await rewriteIndex(root, [row('a', { size: 11 }), row('b')])).toBe(true)
    expect(lines().map((line) => JSON.parse(line))).toEqual([row('a', { size: 11 }), row('b')])
    expect(existsSync(lock())).toBe(false)
  })

  it('carries over whole lines appended to the old file while it was rewritten, not a torn one', async () => {
    await appendIndex(root, [row('a')])
    function* rows() {
      // Another process appends while the compactor encodes: one whole line and a torn one.
      appendFileSync(indexPath(), `${JSON.stringify(row('late'))}\n{"id": "torn`)
      yield row('a')
    }
    expect(await rewriteIndex(root, rows())).toBe(true)
    expect(lines().map((line) => JSON.parse(line).id)).toEqual(['a', 'late'])
  })

  it('writes a fresh index where there was none', async () => {
    expect(await rewriteIndex(root, [row('a')])).toBe(true)
    expect(lines()).toHaveLength(1)
  })

  it('is skipped while a live process of this host or a process of another host holds the lock', async () => {
    await appendIndex(root, [row('a')])
    const before = readFileSync(indexPath(), 'utf8')
    for (const holder of [
      { pid: 1, host: hostname() },
      { pid: 4242, host: 'build-server' },
    ]) {
      writeFileSync(lock(), JSON.stringify(holder))
      expect(await rewriteIndex(root, [row('b')]), JSON.stringify(holder)).toBe(false)
      expect(readFileSync(indexPath(), 'utf8')).toBe(before)
      expect(JSON.parse(readFileSync(lock(), 'utf8'))).toEqual(holder)
    }
  })

  it('takes over a lock left by a process that is gone, or torn while it was taken', async () => {
    const gone = spawnSync(process.execPath, ['-e', '0']).pid
    // Empty: the writer died between creating the lock and writing it. `null`: not a holder at all.
    for (const text of [
      JSON.stringify({ pid: gone, host: hostname() }),
      '',
      '{"pid": 12',
      'null',
      JSON.stringify({ host: hostname() }),
    ]) {
      writeFileSync(lock(), text)
      expect(await rewriteIndex(root, [row('a')]), text).toBe(true)
      expect(existsSync(lock())).toBe(false)
    }
  })

  it('is skipped when the lock cannot be written at all', async () => {
    expect(await rewriteIndex(join(root, 'no-such-dir'), [row('a')])).toBe(false)
  })
})

describe('mergeSummary', () => {
  it('adds counts, keeps the base’s identity and first prompt, and takes the newer title and time', () => {
    const base = summary('s', {
      createdAt: 10,
      updatedAt: 20,
      title: 'old',
      firstPrompt: 'first',
      turns: 2,
      events: 5,
      parentSession: { sessionId: asSessionId('p'), boundary: 4 },
      origin: 'fork',
    })
    const more = summary('s', {
      cwd: '/x',
      createdAt: 99,
      updatedAt: 30,
      title: 'new',
      firstPrompt: 'later',
      turns: 1,
      events: 4,
    })
    const merged = mergeSummary(base, more)
    expect(merged).toEqual({
      id: 's',
      cwd: '/w',
      createdAt: 10,
      updatedAt: 30,
      title: 'new',
      firstPrompt: 'first',
      turns: 3,
      events: 9,
      parentSession: { sessionId: 'p', boundary: 4 },
      origin: 'fork',
    })
    expect(Object.keys(merged)).toEqual([
      'id',
      'cwd',
      'createdAt',
      'updatedAt',
      'title',
      'firstPrompt',
      'turns',
      'events',
      'parentSession',
      'origin',
    ])
  })

  it('without new events the time stays; absent titles, prompts and parents stay absent', () => {
    const base = summary('s', { updatedAt: 20 })
    const merged = mergeSummary(base, summary('s', { updatedAt: 50, turns: 0, events: 0 }))
    expect(merged).toEqual({ ...base, turns: 1, events: 3 })
    expect(Object.keys(merged)).toEqual(['id', 'cwd', 'createdAt', 'updatedAt', 'turns', 'events'])
    // The title and prompt of the later events fill what the base lacked.
    expect(mergeSummary(base, summary('s', { title: 't', firstPrompt: 'q' }))).toMatchObject({
      title: 't',
      firstPrompt: 'q',
    })
  })
})

describe('compaction by a listing', () => {
  async function oneSession() {
    const ctx = new Context()
    await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, fsync: false })
    contexts.push(ctx)
    const p = ctx.sessionPersistence as JsonlPersistence
    const log = eventLog('/w')
    await p.create({ id: 'only', cwd: '/w' })
    completeTurn(log, 0)
    await p.append('only', [...log.session.events])
    await p.close('only')
    return p
  }

  it('appends while superseded lines are at most twice the rows plus 64, rewrites beyond', async () => {
    const p = await oneSession()
    const valid = readFileSync(indexPath(), 'utf8')
    expect(valid.split('\n').filter(Boolean)).toHaveLength(1)
    // 66 lines for one session: 2 * 1 + 64, left as they are.
    writeFileSync(indexPath(), valid.repeat(66))
    await p.list()
    expect(lines()).toHaveLength(66)
    // One more: the listing rewrites the index to its one row.
    writeFileSync(indexPath(), valid.repeat(67))
    await p.list()
    expect(lines()).toEqual([valid.trim()])
  })

  it('a damaged index is rebuilt even when a compactor died holding an empty index.lock', async () => {
    const p = await oneSession()
    const valid = readFileSync(indexPath(), 'utf8')
    writeFileSync(join(root, 'index.lock'), '')
    appendFileSync(indexPath(), '{"id": \n')
    await p.list()
    expect(readIndex(root).damage).toBeUndefined()
    expect(lines()).toEqual([valid.trim()])
    expect(existsSync(join(root, 'index.lock'))).toBe(false)
  })
})
