// The store's listing index (`<root>/index.jsonl`, issue #42): written when a session closes, read
// by list() instead of one summary.json per session, checked row by row against the logs, repaired
// when stale or missing, rebuilt when damaged, and appended to by several processes at once.
// Real files, the real JSONL backend, real writer processes.
import { spawn } from 'node:child_process'
import { appendFileSync, existsSync, readdirSync, writeFileSync } from 'node:fs'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import type { SessionSummary } from '@dsh/session-persistence'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence, { cwdKey, INDEX_FILE, readIndex } from '../src/index.ts'

let root: string
const contexts: Context[] = []
async function open(config: Record<string, unknown> = {}) {
  const ctx = new Context()
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, fsync: false, ...config })
  contexts.push(ctx)
  const warnings: string[] = []
  ctx.on('session-persistence/warning', (message: string) => {
    warnings.push(message)
  })
  return Object.assign(ctx.sessionPersistence as JsonlPersistence, { warnings })
}

/** A session of `turns` turns (the first titled `title` when given), written and closed by `p`. */
async function stored(p: JsonlPersistence, id: string, turns = 1, title?: string) {
  const log = eventLog('/w')
  await p.create({ id, cwd: '/w' })
  for (let turn = 0; turn < turns; turn++) {
    completeTurn(log, turn, `task of ${id}`)
    if (turn === 0 && title) log.add('session/title', { title, source: 'fallback' } as never)
  }
  await p.append(id, [...log.session.events])
  await p.close(id)
  return (await p.logPath(id))!
}

/** One more turn appended to a stored session by `p` (load, append, close). */
async function grow(p: JsonlPersistence, id: string, title?: string) {
  const loaded = await p.load(id)
  const log = eventLog('/w')
  const start = loaded.events.length
  for (const event of loaded.events) log.session.append(event.type as never, event.data as never)
  completeTurn(log, 99, 'a later task')
  if (title) log.add('session/title', { title, source: 'fallback' } as never)
  await p.append(id, log.session.events.slice(start))
  await p.close(id)
}

const summaryFiles = () =>
  readdirSync(root)
    .filter((key) => key !== INDEX_FILE && !key.startsWith('index.'))
    .flatMap((key) => readdirSync(join(root, key)).map((id) => join(root, key, id, 'summary.json')))
    .filter((path) => existsSync(path))

/** The listing computed from the logs alone: no index, no summary caches. */
async function fromLogs(): Promise<SessionSummary[]> {
  const index = existsSync(join(root, INDEX_FILE)) ? await readFile(join(root, INDEX_FILE)) : undefined
  const caches = await Promise.all(summaryFiles().map(async (path) => [path, await readFile(path)] as const))
  for (const [path] of caches) await rm(path)
  await rm(join(root, INDEX_FILE), { force: true })
  const rows = await (await open({ listIndex: false })).list()
  // Put the store back as it was.
  for (const [path, bytes] of caches) await writeFile(path, bytes)
  if (index) await writeFile(join(root, INDEX_FILE), index)
  return rows
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-index-'))
})
afterEach(async () => {
  for (const ctx of contexts.splice(0))
    await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
  await rm(root, { recursive: true, force: true })
})

describe('the store index', () => {
  it('closing a session writes its row: the summary the log gives, at the log size, also after a resume', async () => {
    const p = await open()
    const a = await stored(p, 'alpha', 2, 'Alpha title')
    await stored(p, 'beta', 1)
    await grow(p, 'beta', 'Beta renamed')
    const { rows, damage } = readIndex(root)
    expect(damage).toBeUndefined()
    expect([...rows.keys()].sort()).toEqual(['alpha', 'beta'])
    expect(rows.get('alpha')).toMatchObject({ file: 'session.jsonl.zstd', size: (await stat(a)).size })
    const truth = await fromLogs()
    expect(truth.find((r) => r.id === 'beta')).toMatchObject({ turns: 2, title: 'Beta renamed' })
    for (const row of truth) expect(rows.get(row.id)?.summary).toEqual(row)
  })

  it('a listing with the index reads no summary.json: rows come from the index', async () => {
    const p = await open()
    for (const id of ['s1', 's2', 's3']) await stored(p, id, 1, `real ${id}`)
    // Plant another title in every summary.json, with its stamps intact: the per-session path
    // would trust it (positive control), the index does not read it.
    for (const path of summaryFiles()) {
      const cached = JSON.parse(await readFile(path, 'utf8'))
      await writeFile(path, JSON.stringify({ ...cached, summary: { ...cached.summary, title: 'from summary.json' } }))
    }
    const old = await open({ listIndex: false })
    expect((await old.list()).map((r) => r.title)).toEqual([
      'from summary.json',
      'from summary.json',
      'from summary.json',
    ])
    const rows = await p.list()
    expect(rows.map((r) => r.title).sort()).toEqual(['real s1', 'real s2', 'real s3'])
  })

  it('a stale row (the log grew through a writer without the index) is recomputed and the index repaired', async () => {
    const p = await open()
    await stored(p, 'grown', 1)
    await stored(p, 'still', 1)
    expect((await p.list()).find((r) => r.id === 'grown')?.turns).toBe(1)
    const linesBefore = (await readFile(join(root, INDEX_FILE), 'utf8')).split('\n').length
    // An older build (no index) appends a turn: the index row names the old size.
    await grow(await open({ listIndex: false }), 'grown', 'Grown later')
    const rows = await p.list()
    expect(rows.find((r) => r.id === 'grown')).toMatchObject({ turns: 2, title: 'Grown later' })
    const repaired = readIndex(root).rows.get('grown')
    expect(repaired?.summary).toMatchObject({ turns: 2, title: 'Grown later' })
    expect(repaired?.size).toBe((await stat((await p.logPath('grown'))!)).size)
    // One line appended for the one stale row, nothing for the valid one.
    expect((await readFile(join(root, INDEX_FILE), 'utf8')).split('\n').length).toBe(linesBefore + 1)
    expect(rows).toEqual(await fromLogs())
  })

  it('a damaged index is rebuilt from the sessions with one warning and loses no row', async () => {
    const p = await open()
    for (const id of ['d1', 'd2', 'd3']) await stored(p, id, 1, `title ${id}`)
    const before = await p.list()
    appendFileSync(join(root, INDEX_FILE), '{"id": "d1", "key": \n')
    const rows = await p.list()
    expect(rows).toEqual(before)
    expect(p.warnings).toHaveLength(1)
    expect(p.warnings[0]).toMatch(/index\.jsonl is damaged \(line 4 is not JSON\): rebuilt/)
    const rebuilt = readIndex(root)
    expect(rebuilt.damage).toBeUndefined()
    expect([...rebuilt.rows.keys()].sort()).toEqual(['d1', 'd2', 'd3'])
    // Sound again: the next listing warns no more and lists the same.
    expect(await p.list()).toEqual(before)
    expect(p.warnings).toHaveLength(1)
  })

  it('a row of another shape, or naming a file that is not a log, is never trusted', async () => {
    const p = await open()
    await stored(p, 'shape', 1, 'right')
    const { rows } = readIndex(root)
    const row = rows.get('shape')!
    writeFileSync(
      join(root, INDEX_FILE),
      `${JSON.stringify({ ...row, file: 'header.json', summary: { ...row.summary, title: 'wrong' } })}\n`,
    )
    expect((await p.list())[0].title).toBe('right')
    expect(p.warnings).toHaveLength(0)
    // A row naming a copy of a raw log, with the copy's stamp: still not a log name.
    const raw = await open({ compression: 'none' })
    const rawLog = await stored(raw, 'rawcopy', 1, 'raw right')
    const copy = join(rawLog, '..', 'copy.jsonl')
    await writeFile(copy, await readFile(rawLog))
    const rawRow = readIndex(root).rows.get('rawcopy')!
    appendFileSync(
      join(root, INDEX_FILE),
      `${JSON.stringify({ ...rawRow, file: 'copy.jsonl', mtime: (await stat(copy)).mtimeMs, summary: { ...rawRow.summary, title: 'wrong' } })}\n`,
    )
    expect((await p.list()).find((r) => r.id === 'rawcopy')?.title).toBe('raw right')
    writeFileSync(join(root, INDEX_FILE), `${JSON.stringify({ ...row, summary: { id: 'shape' } })}\n`)
    expect((await p.list()).find((r) => r.id === 'shape')?.title).toBe('right')
    expect(p.warnings[0]).toMatch(/line 1 is not an index row/)
  })

  it('a store written before the index (no index.jsonl) lists the same rows and gets its index', async () => {
    const old = await open({ listIndex: false })
    for (const id of ['m1', 'm2', 'm3']) await stored(old, id, 2, `old ${id}`)
    await stored(old, 'm4', 1)
    expect(await old.list()).toHaveLength(4)
    expect(existsSync(join(root, INDEX_FILE))).toBe(false)
    const p = await open()
    const rows = await p.list()
    expect(rows).toEqual(await old.list())
    expect(p.warnings).toHaveLength(0)
    expect([...readIndex(root).rows.keys()].sort()).toEqual(['m1', 'm2', 'm3', 'm4'])
  })

  it('a header damaged after indexing is still reported by the listing', async () => {
    const p = await open()
    await stored(p, 'hurt', 1)
    await p.list()
    const dir = join((await p.logPath('hurt'))!, '..')
    await writeFile(join(dir, 'header.json'), '{"version": 1, "id": ')
    const [row] = await p.list()
    expect(row.damaged).toMatch(/not valid JSON/)
  })

  it('a log overwritten in place at the same size is not trusted (its mtime changed)', async () => {
    const p = await open()
    const log = await stored(p, 'overwritten', 1)
    await stored(p, 'intact', 1)
    expect((await p.list()).every((r) => r.damaged === undefined)).toBe(true)
    const bytes = await readFile(log)
    await writeFile(log, Buffer.concat([Buffer.alloc(48, 0x41), bytes.subarray(48)]))
    const rows = await p.list()
    expect(rows.find((r) => r.id === 'overwritten')?.damaged).toMatch(/corrupt/)
    expect(rows.find((r) => r.id === 'intact')?.damaged).toBeUndefined()
  })

  it('two writer processes appending at once: every session of both has its row', async () => {
    const child = fileURLToPath(new URL('./index-writer-child.ts', import.meta.url))
    const run = (prefix: string) =>
      new Promise<void>((resolve, reject) => {
        const proc = spawn(process.execPath, ['--import', 'tsx', child, root, prefix, '15'], {
          stdio: ['ignore', 'ignore', 'pipe'],
        })
        let stderr = ''
        proc.stderr.on('data', (chunk) => {
          stderr += chunk
        })
        proc.on('error', reject)
        proc.on('exit', (code) =>
          code === 0 ? resolve() : reject(new Error(`writer ${prefix} exited ${code}: ${stderr}`)),
        )
      })
    await Promise.all([run('left'), run('right')])
    const { rows, damage } = readIndex(root)
    expect(damage).toBeUndefined()
    const ids = [...rows.keys()].sort()
    expect(ids).toHaveLength(30)
    expect(ids.filter((id) => id.startsWith('left-'))).toHaveLength(15)
    expect(ids.filter((id) => id.startsWith('right-'))).toHaveLength(15)
    // And a listing trusts every one of them: planted summary.json titles stay unseen.
    for (const path of summaryFiles()) {
      const cached = JSON.parse(await readFile(path, 'utf8'))
      await writeFile(path, JSON.stringify({ ...cached, summary: { ...cached.summary, title: 'from summary.json' } }))
    }
    const listed = await (await open()).list()
    expect(listed).toHaveLength(30)
    expect(listed.filter((r) => r.title !== undefined)).toEqual([])
  }, 60_000)
})

/** A one-turn session of `cwd`, written and closed by `p`. */
async function storedIn(p: JsonlPersistence, id: string, cwd: string) {
  const log = eventLog(cwd)
  await p.create({ id, cwd })
  completeTurn(log, 0, `task of ${id}`)
  await p.append(id, [...log.session.events])
  await p.close(id)
}

describe('list({cwd}): one directory of the store', () => {
  it('reads only that directory: the other directories are neither checked nor recomputed', async () => {
    const p = await open()
    await storedIn(p, 'a1', '/a')
    await storedIn(p, 'a2', '/a')
    await storedIn(p, 'b1', '/b')
    // Every row must be recomputed from its log: no index, no summary.json.
    for (const path of summaryFiles()) await rm(path)
    await rm(join(root, INDEX_FILE))
    const q = await open()
    const here = await q.list({ cwd: '/a' })
    expect(here.map((r) => r.id).sort()).toEqual(['a1', 'a2'])
    // Only /a's sessions were recomputed (and appended to the index); /b's was not touched.
    expect([...readIndex(root).rows.keys()].sort()).toEqual(['a1', 'a2'])
    expect(summaryFiles().some((path) => path.includes(`${join(cwdKey('/b'), 'b1')}`))).toBe(false)
    // The same rows, in the same order, as the whole listing filtered by directory.
    const all = await q.list()
    expect(here).toEqual(all.filter((r) => r.cwd === '/a'))
    expect(all).toEqual(await fromLogs())
    expect(await q.latest('/b')).toEqual(all.find((r) => r.id === 'b1'))
    expect(await q.list({ cwd: '/nowhere' })).toEqual([])
  })

  it("never rewrites the index: the other directories' rows stay, damaged or superseded lines too", async () => {
    const p = await open()
    await storedIn(p, 'a1', '/a')
    await storedIn(p, 'b1', '/b')
    const path = join(root, INDEX_FILE)
    const text = await readFile(path, 'utf8')
    const bLine = text.split('\n').find((line) => line.includes('"id":"b1"'))!
    // Mostly superseded lines (a whole listing would compact them away) and a line of /b that is
    // not a row (a whole listing would find the index damaged and rebuild it).
    appendFileSync(path, `${`${bLine}\n`.repeat(70)}{"id":"b2","key":"${cwdKey('/b')}", torn\n`)
    const before = await readFile(path, 'utf8')
    const q = await open()
    expect((await q.list({ cwd: '/a' })).map((r) => r.id)).toEqual(['a1'])
    expect(q.warnings).toEqual([])
    expect(await readFile(path, 'utf8')).toBe(before)
    // A damaged line of this directory: listed from the sessions, reported, the index left as it is.
    appendFileSync(path, `{"id":"a9","key":"${cwdKey('/a')}", torn\n`)
    const damaged = await readFile(path, 'utf8')
    expect((await q.list({ cwd: '/a' })).map((r) => r.id)).toEqual(['a1'])
    expect(q.warnings).toHaveLength(1)
    expect(q.warnings[0]).toMatch(/is damaged \(a line of a-[0-9a-f]{8} is not JSON\): listed from the sessions/)
    expect(await readFile(path, 'utf8')).toBe(damaged)
    // The next whole listing rebuilds it with every row.
    expect((await q.list()).map((r) => r.id).sort()).toEqual(['a1', 'b1'])
    expect([...readIndex(root).rows.keys()].sort()).toEqual(['a1', 'b1'])
  })
})
