// The store as a whole, on real directories, for cases the mutation run of 2026-12-07
// (`pnpm mutation session-persistence-jsonl`) found no test pinned: a create that fails part-way,
// a never-written session reopened by a build of the other format, a stale summary cache under a
// reopened session, what a listing skips or keeps (a directory that is no session id, a torn
// session, the damaged row of a session whose neighbours hold odd files), when a listing compacts
// the index, and the on-disk names that later builds must keep finding.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cp, mkdir, mkdtemp, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence, { cwdKey, INDEX_FILE, readIndex } from '../src/index.ts'
import { takeWriterLock } from '../src/lock.ts'

let root: string
const contexts: Context[] = []
const warnings: string[] = []
async function open(config: Record<string, unknown> = {}) {
  const ctx = new Context()
  ctx.on('session-persistence/warning', (message) => void warnings.push(message))
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, fsync: false, ...config })
  contexts.push(ctx)
  return ctx.sessionPersistence as JsonlPersistence
}
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-survivors-store-'))
  warnings.length = 0
})
afterEach(async () => {
  for (const ctx of contexts.splice(0))
    await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
  await rm(root, { recursive: true, force: true })
})

/** Appends one completed turn to an open session; returns how many events it now holds. */
async function turn(p: JsonlPersistence, id: string, from: number): Promise<number> {
  const log = eventLog('/w')
  completeTurn(log, 0)
  const events = log.session.events.map((e, i) => ({ ...e, seq: from + i }))
  await p.append(id, events)
  return from + events.length
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as Error & { code?: string },
  )

describe('creating and reopening', () => {
  it('a create that fails part-way keeps its own error and leaves no writer lock behind', async () => {
    const p = await open()
    const dir = join(root, cwdKey('/w'), 'half')
    // header.json cannot be written: its temporary file's name is taken by a directory.
    await mkdir(join(dir, `header.json.${process.pid}.tmp`), { recursive: true })
    const error = await failure(p.create({ id: 'half', cwd: '/w' }))
    expect(error?.code).toBe('EISDIR')
    expect(existsSync(join(dir, 'writer.lock'))).toBe(false)
    // With the cause gone the same id is created (nothing of the failed attempt holds it).
    await rm(join(dir, `header.json.${process.pid}.tmp`), { recursive: true })
    await p.create({ id: 'half', cwd: '/w' })
    await p.close('half')
  })

  it.each([
    ['none', 'zstd', 'session.jsonl.zstd', 'session.jsonl'],
    ['zstd', 'none', 'session.jsonl', 'session.jsonl.zstd'],
  ] as const)(
    'a session created under %s and never written takes the format of the build (%s) that first writes it, and its close indexes it',
    async (created, writing, file, other) => {
      await (async () => {
        const p = await open({ compression: created })
        await p.create({ id: 'later', cwd: '/w' })
        await p.close('later')
      })()
      const q = await open({ compression: writing })
      await q.load('later')
      const events = await turn(q, 'later', 0)
      await q.close('later')
      const dir = join(root, cwdKey('/w'), 'later')
      expect(existsSync(join(dir, file))).toBe(true)
      expect(existsSync(join(dir, other))).toBe(false)
      expect((await q.inspect('later')).events).toHaveLength(events)
      // The close wrote the row from what it tracked: the listing needs no per-session read.
      expect(readIndex(root).rows.get('later')?.summary).toMatchObject({ id: 'later', events })
    },
  )

  it('a reopened session whose summary cache went stale is not summed from that cache', async () => {
    const p = await open()
    await p.create({ id: 'grown', cwd: '/w' })
    let events = await turn(p, 'grown', 0)
    await p.close('grown')
    // A writer that keeps no index (listIndex off, or an older build) adds a turn: summary.json
    // now describes a shorter log.
    const noIndex = await open({ listIndex: false })
    await noIndex.load('grown')
    events = await turn(noIndex, 'grown', events)
    await noIndex.close('grown')
    const q = await open()
    await q.load('grown')
    events = await turn(q, 'grown', events)
    await q.close('grown')
    const fresh = await open()
    expect((await fresh.list()).find((r) => r.id === 'grown')).toMatchObject({ events, turns: 3 })
    expect(readIndex(root).rows.get('grown')?.summary.events ?? events).toBe(events)
  })
})

describe('what a listing keeps and skips', () => {
  it('a directory whose name is no session id is not listed, whatever it holds', async () => {
    const p = await open()
    await p.create({ id: 'real', cwd: '/w' })
    await turn(p, 'real', 0)
    await p.close('real')
    const keyDir = join(root, cwdKey('/w'))
    await cp(join(keyDir, 'real'), join(keyDir, 'copy of real'), { recursive: true })
    await cp(join(keyDir, 'real'), join(keyDir, '.real'), { recursive: true })
    expect((await (await open({ listIndex: false })).list()).map((r) => r.id)).toEqual(['real'])
  })

  it('a session with a torn tail is listed but gets no index row or cache (its stamp would be wrong)', async () => {
    const p = await open()
    await p.create({ id: 'torn', cwd: '/w' })
    const first = await turn(p, 'torn', 0)
    await p.flush('torn')
    const path = (await p.logPath('torn'))!
    const size = (await stat(path)).size
    await turn(p, 'torn', first)
    await p.close('torn')
    await truncate(path, size + 10)
    await rm(join(dirname(path), 'summary.json'))
    for (let listing = 0; listing < 2; listing++) {
      const [row] = await (await open()).list()
      expect(row).toMatchObject({ id: 'torn', events: first })
      expect(row.damaged).toBeUndefined()
    }
    // The index holds only the row the close wrote (now stale), nothing for the torn log.
    const index = readIndex(root)
    expect(index.damage).toBeUndefined()
    expect(index.lines).toBe(1)
    expect(index.rows.get('torn')?.size).not.toBe(size + 10)
    expect(existsSync(join(dirname(path), 'summary.json'))).toBe(false)
    expect(warnings).toEqual([])
  })

  it('the damaged row survives odd neighbours: a summary cache of null or {}, sibling headers of null or of another cwd', async () => {
    const p = await open({ listIndex: false })
    const cwd = '/proj/odd'
    const keyDir = join(root, cwdKey(cwd))
    for (const id of ['hurt', 'moved', 'blank']) {
      await p.create({ id, cwd })
      await turn(p, id, 0)
      await p.close(id)
    }
    await writeFile(join(keyDir, 'hurt', 'header.json'), 'not json')
    // A sibling moved here by hand from another project, and one whose header is `null`.
    await writeFile(
      join(keyDir, 'moved', 'header.json'),
      JSON.stringify({ version: 1, id: 'moved', cwd: '/else', createdAt: 1 }),
    )
    await writeFile(join(keyDir, 'blank', 'header.json'), 'null')
    for (const cache of ['null', '{}', '{"summary":null}']) {
      await writeFile(join(keyDir, 'hurt', 'summary.json'), cache)
      const row = (await p.list()).find((r) => r.id === 'hurt')
      expect(row, cache).toMatchObject({ cwd: '', damaged: expect.stringMatching(/not valid JSON/) })
    }
  })
})

describe('bug: one unreadable file failed the whole listing', () => {
  // recoverCwd parsed the summary cache and each sibling's header inside the success callback of
  // `.then(ok, failed)`, whose failure callback does not see what the success callback throws: a
  // cache or a sibling header that was not JSON made list() reject (`dsh sessions` and
  // `--continue` failed outright) instead of listing the damaged rows.
  it('two sessions of one project with headers that are not JSON are both listed as damaged', async () => {
    const p = await open({ listIndex: false })
    const keyDir = join(root, cwdKey('/proj/two'))
    for (const id of ['first', 'second']) {
      await p.create({ id, cwd: '/proj/two' })
      await turn(p, id, 0)
      await p.close(id)
      await writeFile(join(keyDir, id, 'header.json'), '{"version": 1, "id": ')
      await rm(join(keyDir, id, 'summary.json'), { force: true })
    }
    const rows = await p.list()
    expect(rows.map((r) => r.id).sort()).toEqual(['first', 'second'])
    for (const row of rows) expect(row).toMatchObject({ cwd: '', damaged: expect.stringMatching(/not valid JSON/) })
  })

  it('a damaged session whose summary cache is torn is listed as damaged', async () => {
    const p = await open({ listIndex: false })
    await p.create({ id: 'cache', cwd: '/proj/cache' })
    await turn(p, 'cache', 0)
    await p.close('cache')
    const dir = join(root, cwdKey('/proj/cache'), 'cache')
    await rm(join(dir, 'header.json'))
    await writeFile(join(dir, 'summary.json'), '{"size": 12, "summ')
    const [row] = await p.list()
    expect(row).toMatchObject({
      id: 'cache',
      cwd: '',
      damaged: expect.stringMatching(/is missing while its log remains/),
    })
  })
})

describe('compaction thresholds', () => {
  it('counts the recomputed rows with the old lines, and twice the live rows (not one) plus 64', async () => {
    const p = await open()
    for (const id of ['one', 'two']) {
      await p.create({ id, cwd: '/w' })
      await turn(p, id, 0)
      await p.close(id)
    }
    const valid = readFileSync(join(root, INDEX_FILE), 'utf8')
    expect(valid.split('\n').filter(Boolean)).toHaveLength(2)
    // Two live rows: up to 2 * 2 + 64 = 68 lines are kept.
    writeFileSync(join(root, INDEX_FILE), valid.repeat(33) + valid.split('\n')[0] + '\n')
    await p.list()
    expect(readIndex(root).lines).toBe(67)
    // One session whose 66 lines are all stale: its recomputed row makes 67 > 2 * 1 + 64.
    await rm(join(root, cwdKey('/w'), 'two'), { recursive: true })
    const stale = JSON.stringify({ ...JSON.parse(valid.split('\n')[0]), size: 1 })
    writeFileSync(join(root, INDEX_FILE), `${stale}\n`.repeat(66))
    await p.list()
    expect(readIndex(root).lines).toBe(1)
  })
})

describe('names on disk', () => {
  it('cwd keys are stable: runs of other characters become one dash, dashes at the ends go', () => {
    const hash = (cwd: string) => cwdKey(cwd).slice(-8)
    expect(cwdKey('/home/me/my  project')).toBe(`home-me-my-project-${hash('/home/me/my  project')}`)
    expect(cwdKey('--/x/--')).toBe(`x-${hash('--/x/--')}`)
    expect(cwdKey('/a b/')).toBe(`a-b-${hash('/a b/')}`)
  })

  it('the log marker is private, and taking a lock in a directory that is gone is that error, not LOCKED', async () => {
    const p = await open()
    await p.create({ id: 'marked', cwd: '/w' })
    await turn(p, 'marked', 0)
    await p.close('marked')
    expect((await stat(join(root, cwdKey('/w'), 'marked', 'log.created'))).mode & 0o777).toBe(0o600)
    expect((await failure(takeWriterLock('s', join(root, 'no such dir'))))?.code).toBe('ENOENT')
  })
})
