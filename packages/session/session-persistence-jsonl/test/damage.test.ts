// Damage of a session directory, seen by the backend itself (the bins' view is in damage*.e2e.test.ts,
// which a mutation run leaves out): a header that is missing, not JSON or of the wrong shape is
// BAD_HEADER naming the file; a log that was written (its `log.created` marker says so) and is gone
// is corrupt, naming the log; a listing keeps such a session as a damaged row, with the cwd recovered
// from what the directory key confirms and the times of its files. Opening one for writing refuses
// and leaves no writer lock. Mutation testing (`pnpm mutation session-persistence-jsonl`) showed
// these paths without a unit test.
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { SessionCorruptError, type SessionPersistenceError } from '@dsh/session-persistence'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence, { cwdKey } from '../src/index.ts'

let root: string
const contexts: Context[] = []
async function open(config: Record<string, unknown> = {}) {
  const ctx = new Context()
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, fsync: false, ...config })
  contexts.push(ctx)
  return ctx.sessionPersistence as JsonlPersistence
}

/** A closed session of one turn; returns its directory and log path. */
async function stored(p: JsonlPersistence, id: string, cwd = '/proj') {
  const log = eventLog(cwd)
  await p.create({ id, cwd })
  completeTurn(log, 0)
  await p.append(id, [...log.session.events])
  await p.close(id)
  const path = (await p.logPath(id))!
  return { dir: dirname(path), log: path }
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (error: unknown) => error as SessionPersistenceError,
  )

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-damage-'))
})
afterEach(async () => {
  for (const ctx of contexts.splice(0))
    await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
  await rm(root, { recursive: true, force: true })
})

describe('a damaged header.json', () => {
  const cases: Array<[string, (dir: string) => Promise<unknown>, (id: string, path: string) => string]> = [
    [
      'not JSON',
      (dir) => writeFile(join(dir, 'header.json'), '{"version": 1, "id": '),
      (id, path) => `session ${id}: ${path} is not valid JSON`,
    ],
    [
      'JSON of the wrong shape',
      (dir) => writeFile(join(dir, 'header.json'), '{"version": 1}\n'),
      (id, path) => `session ${id}: header names id undefined (${path})`,
    ],
    [
      'missing while the log remains',
      (dir) => rm(join(dir, 'header.json')),
      (id, path) => `session ${id}: ${path} is missing while its log remains`,
    ],
  ]
  it.each(cases)(
    '%s: BAD_HEADER naming the file, for load, inspect and list; no lock is left',
    async (_l, damage, message) => {
      const p = await open()
      const { dir } = await stored(p, 'hurt')
      await damage(dir)
      const expected = message('hurt', join(dir, 'header.json'))
      for (const attempt of [() => p.load('hurt'), () => p.inspect('hurt')]) {
        const error = await failure(attempt())
        expect(error.code).toBe('BAD_HEADER')
        expect(error.message).toBe(expected)
      }
      expect(p.isOpen('hurt')).toBe(false)
      expect(existsSync(join(dir, 'writer.lock'))).toBe(false)
      const [row] = await p.list()
      expect(row).toMatchObject({ id: 'hurt', damaged: expected, turns: 0, events: 0 })
    },
  )

  it('a directory with neither header nor log is no session at all', async () => {
    const p = await open()
    const { dir } = await stored(p, 'gone')
    for (const file of ['header.json', 'session.jsonl.zstd', 'log.created', 'summary.json']) await rm(join(dir, file))
    const q = await open()
    expect((await failure(q.load('gone'))).code).toBe('NOT_FOUND')
    expect(await q.sessionDir('gone')).toBeUndefined()
    expect(await q.list()).toEqual([])
  })
})

describe('a log that was written and is gone', () => {
  it.each([
    ['session.jsonl.zstd', 'zstd', 'session.jsonl.zstd'],
    ['session.jsonl', 'none', 'session.jsonl'],
    ['something else', 'zstd', 'session.jsonl.zstd'],
  ] as const)(
    'marker naming %s: corrupt, naming the log and the marker; never reopened empty',
    async (marker, compression, named) => {
      const p = await open({ compression })
      const { dir, log } = await stored(p, 'lost')
      await rm(log)
      await writeFile(join(dir, 'log.created'), `${marker}\n`)
      const reason = `the log ${join(dir, named)} is missing (${join(dir, 'log.created')} records that it was written): its events are lost`
      for (const attempt of [() => p.load('lost'), () => p.inspect('lost')]) {
        const error = await failure(attempt())
        expect(error).toBeInstanceOf(SessionCorruptError)
        expect((error as SessionCorruptError).reason).toBe(reason)
      }
      expect(p.isOpen('lost')).toBe(false)
      expect(existsSync(join(dir, 'writer.lock'))).toBe(false)
      expect(existsSync(join(dir, 'session.jsonl.zstd')) || existsSync(join(dir, 'session.jsonl'))).toBe(false)
      const [row] = await p.list()
      expect(row.id).toBe('lost')
      expect(row.damaged).toContain(reason)
    },
  )

  it('with the header gone too, the marker alone still makes it a damaged session', async () => {
    const p = await open()
    const { dir, log } = await stored(p, 'bare')
    await rm(log)
    await rm(join(dir, 'header.json'))
    const q = await open()
    expect(await q.sessionDir('bare')).toBe(dir)
    expect((await failure(q.inspect('bare'))).code).toBe('BAD_HEADER')
  })
})

describe('the row of a session whose header is unreadable', () => {
  it('takes the cwd from its summary cache when the directory key confirms it', async () => {
    const p = await open()
    const { dir } = await stored(p, 'cached', '/proj/a')
    expect(existsSync(join(dir, 'summary.json'))).toBe(true)
    await rm(join(dir, 'header.json'))
    const [row] = await (await open({ listIndex: false })).list()
    expect(row).toMatchObject({ id: 'cached', cwd: '/proj/a', turns: 0, events: 0 })
    expect(row.damaged).toMatch(/is missing while its log remains/)
  })

  it("takes it from an intact sibling's header, never from a directory the key does not confirm", async () => {
    const p = await open({ listIndex: false })
    const { dir } = await stored(p, 'hurt', '/proj/b')
    await stored(p, 'sibling', '/proj/b')
    await writeFile(join(dir, 'header.json'), 'not json')
    // A cache naming another cwd is not believed: the key is the hash of the real one.
    await writeFile(join(dir, 'summary.json'), JSON.stringify({ summary: { id: 'hurt', cwd: '/elsewhere' } }))
    // A stray entry of the key directory that is not a session id is skipped.
    await mkdir(join(dirname(dir), '.not-an-id'))
    const rows = await p.list()
    expect(rows.find((r) => r.id === 'hurt')).toMatchObject({
      cwd: '/proj/b',
      damaged: expect.stringMatching(/not valid JSON/),
    })
    // Without the sibling nothing confirms a cwd: the row says ''.
    await rm(join(dirname(dir), 'sibling'), { recursive: true })
    const [alone] = await p.list()
    expect(alone).toMatchObject({ id: 'hurt', cwd: '' })
  })

  it("takes this process's cwd when its key matches (so --continue from there finds the damage)", async () => {
    const p = await open({ listIndex: false })
    const { dir } = await stored(p, 'here', process.cwd())
    expect(basename(dirname(dir))).toBe(cwdKey(process.cwd()))
    await rm(join(dir, 'header.json'))
    await rm(join(dir, 'summary.json'), { force: true })
    expect((await p.list())[0]).toMatchObject({ id: 'here', cwd: process.cwd() })
    expect((await p.latest(process.cwd()))?.id).toBe('here')
  })

  it('is dated by its files: updated at the newest mtime, created no later than the directory', async () => {
    const p = await open({ listIndex: false })
    const { dir, log } = await stored(p, 'dated', '/proj/c')
    await rm(join(dir, 'header.json'))
    const born = await stat(dir).then((st) => Math.floor(st.birthtimeMs || st.mtimeMs))
    const later = new Date(Date.now() + 3_600_000)
    await utimes(log, later, later)
    const [row] = await p.list()
    expect(row.updatedAt).toBe(Math.floor((await stat(log)).mtimeMs))
    expect(row.createdAt).toBe(Math.min(born, row.updatedAt))
    // A log older than the directory dates the creation.
    const earlier = new Date(born - 3_600_000)
    for (const file of ['session.jsonl.zstd', 'log.created']) await utimes(join(dir, file), earlier, earlier)
    const [old] = await p.list()
    expect(old.createdAt).toBe(Math.floor((await stat(log)).mtimeMs))
    expect(old.updatedAt).toBe(born)
  })
})

describe('the row of a session whose log is damaged but whose header reads', () => {
  it('is the header’s summary, updated at the newest of its files', async () => {
    const p = await open({ listIndex: false })
    const { log } = await stored(p, 'torn', '/proj/d')
    await writeFile(log, Buffer.alloc(64, 0x41))
    const later = new Date(Date.now() + 3_600_000)
    await utimes(log, later, later)
    const [row] = await p.list()
    expect(row).toMatchObject({ id: 'torn', cwd: '/proj/d', turns: 0, events: 0 })
    expect(row.updatedAt).toBe(Math.floor((await stat(log)).mtimeMs))
    expect(row.damaged).toMatch(/bad batch header/)
  })
})
