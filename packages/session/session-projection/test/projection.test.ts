import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Context, type Plugin } from 'cordis'
import SessionStore, { Session, type AnySessionEvent } from '@dsh/session'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import SessionProjections, { type ProjectionUnit, type StoredLogs } from '@dsh/session-projection'
import JsonProjectionCache, { decodeDocument, encodeDocument } from '@dsh/session-projection-cache'

interface Counts {
  events: number
  prompts: string[]
}
const counter: ProjectionUnit<Counts, { events: number; prompts: number; last?: string }> = {
  name: 'counts',
  version: 1,
  init: () => ({ events: 0, prompts: [] }),
  fold(state, event) {
    state.events++
    if (event.type === 'user/message')
      state.prompts.push(event.data.content.map((b) => (b.type === 'text' ? b.text : '')).join(''))
    return state
  },
  value: (s) => ({ events: s.events, prompts: s.prompts.length, last: s.prompts.at(-1) }),
}

/** The cache document as plain JSON (states parsed), and written back in its own format. */
const readDoc = (path: string): any => JSON.parse(JSON.stringify(decodeDocument(readFileSync(path, 'utf8'))))
const writeDoc = (path: string, doc: any) =>
  writeFileSync(path, encodeDocument(doc.generation, Object.values(doc.checkpoints)))

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** `journalRatio: 0` makes every cache update a whole-document rewrite (tests that read or edit the document). */
async function tree(home: string, unit: ProjectionUnit<any, any> = counter, journalRatio?: number) {
  const ctx = new Context()
  const mount = async (p: unknown, c?: unknown) => await ctx.plugin(p as Plugin, c as never)
  await mount(SessionStore)
  await mount(JsonlPersistence, { root: join(home, 'sessions'), fsync: false, batchWindowMs: 1, compression: 'none' })
  await mount(JsonProjectionCache, {
    path: join(home, 'cache.json'),
    ...(journalRatio !== undefined ? { journalRatio } : {}),
  })
  await mount(SessionProjections)
  ctx.sessionProjections.register(unit)
  return ctx
}

function turnEvents(session: Session, turn: number, prompt: string): void {
  session.append('turn/start', { turn })
  session.append('user/message', { content: [{ type: 'text', text: prompt }], source: { kind: 'human' } })
  session.append('assistant/message', { message: { role: 'assistant', content: [{ type: 'text', text: 'ok' }] } })
  session.append('turn/end', { turn, reason: 'completed' })
}

/** Stores `n` sessions of one turn each directly through persistence. */
async function store(ctx: Context, n: number, start = 0): Promise<string[]> {
  const ids: string[] = []
  for (let i = start; i < start + n; i++) {
    let t = 1_700_000_000_000 + i * 1000
    const session = new Session({ cwd: '/proj', id: `s${i}`, clock: () => t++ })
    turnEvents(session, 0, `prompt ${i}`)
    await ctx.sessionPersistence.create({ id: session.id, cwd: '/proj', createdAt: 1_700_000_000_000 + i * 1000 })
    await ctx.sessionPersistence.append(session.id, session.events)
    await ctx.sessionPersistence.close(session.id)
    ids.push(session.id)
  }
  return ids
}

/** Appends one more turn to a stored session. */
async function grow(ctx: Context, id: string, prompt: string) {
  const loaded = await ctx.sessionPersistence.load(id)
  let t = (loaded.events.at(-1)?.time ?? 0) + 1
  const session = new Session({ cwd: '/proj', id, clock: () => t++, events: loaded.events })
  const before = session.length
  turnEvents(session, 1, prompt)
  await ctx.sessionPersistence.append(id, session.slice(before))
  await ctx.sessionPersistence.close(id)
}

function home(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-proj-'))
  dirs.push(dir)
  return dir
}

/** Stored logs that fail any log read: proves a listing came from the cache alone. */
const noLogReads = (ctx: Context): StoredLogs => ({
  list: () => ctx.sessionPersistence.list(),
  readFrom: async (id) => {
    throw new Error(`log of ${id} was read`)
  },
})

describe('ctx.sessionProjections over stored sessions', () => {
  it('builds the cache on the first listing; the second reads no log', async () => {
    const dir = home()
    const ctx = await tree(dir)
    await store(ctx, 5)
    const first = await ctx.sessionProjections.list()
    expect(first.map((r) => r.source)).toEqual(Array(5).fill('rebuilt'))
    expect(ctx.sessionProjections.lastReport).toMatchObject({ rows: 5, rebuilt: 5, logsRead: 5 })
    expect(first.find((r) => r.summary.id === 's3')?.values.counts).toEqual({ events: 4, prompts: 1, last: 'prompt 3' })
    const second = await ctx.sessionProjections.list(noLogReads(ctx))
    expect(second.map((r) => r.source)).toEqual(Array(5).fill('cache'))
    expect(second.map((r) => r.values)).toEqual(first.map((r) => r.values))
    // A fresh process (new tree) reads the same document.
    const again = await tree(dir)
    expect((await again.sessionProjections.list(noLogReads(again))).every((r) => r.source === 'cache')).toBe(true)
  })

  it('an entry behind its log is advanced from the tail, not rebuilt', async () => {
    const ctx = await tree(home())
    await store(ctx, 2)
    await ctx.sessionProjections.list()
    await grow(ctx, 's1', 'follow-up')
    let readFrom = -1
    const rows = await ctx.sessionProjections.list({
      list: () => ctx.sessionPersistence.list(),
      readFrom: (id, seq) => ((readFrom = seq), ctx.sessionPersistence.readFrom(id, seq)),
    })
    const row = rows.find((r) => r.summary.id === 's1')!
    expect(row.source).toBe('refreshed')
    expect(readFrom).toBe(3)
    expect(row.values.counts).toEqual({ events: 8, prompts: 2, last: 'follow-up' })
    expect(rows.find((r) => r.summary.id === 's0')!.source).toBe('cache')
    expect((await ctx.sessionProjections.list(noLogReads(ctx))).every((r) => r.source === 'cache')).toBe(true)
  })

  it('a deleted, garbled or foreign cache is rebuilt, never trusted', async () => {
    const dir = home()
    const ctx = await tree(dir)
    await store(ctx, 3)
    await ctx.sessionProjections.list()
    rmSync(join(dir, 'cache.json'))
    expect((await ctx.sessionProjections.list()).map((r) => r.source)).toEqual(Array(3).fill('rebuilt'))
    writeFileSync(join(dir, 'cache.json'), '{not json')
    expect((await ctx.sessionProjections.list()).map((r) => r.source)).toEqual(Array(3).fill('rebuilt'))
    expect(readDoc(join(dir, 'cache.json')).format).toBe(2)
    writeFileSync(join(dir, 'cache.json'), JSON.stringify({ format: 99, checkpoints: {} }))
    expect((await ctx.sessionProjections.list()).map((r) => r.source)).toEqual(Array(3).fill('rebuilt'))
  })

  it('an entry that does not match its log (other last event, more events, other unit version) is rebuilt', async () => {
    const dir = home()
    const ctx = await tree(dir, counter, 0)
    await store(ctx, 3)
    await ctx.sessionProjections.list()
    const doc = readDoc(join(dir, 'cache.json'))
    doc.checkpoints.s0.lastTime += 5 // same count, another log
    doc.checkpoints.s1.events += 2 // claims more than the log holds
    doc.checkpoints.s2.units.counts.state.prompts = ['forged']
    writeDoc(join(dir, 'cache.json'), doc)
    const rows = await ctx.sessionProjections.list()
    expect(Object.fromEntries(rows.map((r) => [r.summary.id, r.source]))).toEqual({
      s0: 'rebuilt',
      s1: 'rebuilt',
      s2: 'cache',
    })
    expect(rows.find((r) => r.summary.id === 's0')!.values.counts).toMatchObject({ last: 'prompt 0' })
    // A new unit version invalidates every entry.
    const bumped = await tree(dir, { ...counter, version: 2 }, 0)
    expect((await bumped.sessionProjections.list()).map((r) => r.source)).toEqual(Array(3).fill('rebuilt'))
    // A refresh whose anchor event changed under it falls back to a rebuild.
    const doc2 = readDoc(join(dir, 'cache.json'))
    doc2.checkpoints.s0.events -= 1
    writeDoc(join(dir, 'cache.json'), doc2)
    const b = await tree(dir, { ...counter, version: 2 }, 0)
    expect((await b.sessionProjections.list()).find((r) => r.summary.id === 's0')!.source).toBe('rebuilt')
  })

  it('an entry without a unit registered since is rebuilt; values of rebuilt and live rows are copies', async () => {
    const dir = home()
    const ctx = await tree(dir)
    await store(ctx, 2)
    await ctx.sessionProjections.list()
    const off = ctx.sessionProjections.register({
      name: 'later',
      version: 1,
      init: () => ({ n: 0 }),
      fold: (s: { n: number }) => ((s.n += 1), s),
    })
    const rows = await ctx.sessionProjections.list()
    expect(rows.map((r) => r.source)).toEqual(['rebuilt', 'rebuilt'])
    expect(rows[0].values.later).toEqual({ n: 4 })
    // A carrier that edits its row does not edit what the next listing returns.
    ;(rows[0].values.later as { n: number }).n = 99
    const cached = await ctx.sessionProjections.list(noLogReads(ctx))
    expect(cached.map((r) => r.source)).toEqual(['cache', 'cache'])
    expect(cached[0].values.later).toEqual({ n: 4 })
    const live = ctx.sessions.create({ cwd: '/proj' })
    turnEvents(live, 0, 'live')
    const first = ctx.sessionProjections.snapshot(live.id)!
    ;(first.later as { n: number }).n = 1000
    expect(ctx.sessionProjections.snapshot(live.id)?.later).toEqual({ n: 4 })
    off()
  })

  it('drops entries of sessions that are gone; live sessions come from memory', async () => {
    const dir = home()
    const ctx = await tree(dir, counter, 0)
    await store(ctx, 2)
    await ctx.sessionProjections.list()
    rmSync(join(dir, 'sessions'), { recursive: true })
    expect(await ctx.sessionProjections.list()).toEqual([])
    expect(readDoc(join(dir, 'cache.json')).checkpoints).toEqual({})
    const live = ctx.sessions.create({ cwd: '/proj' })
    await ctx.sessionPersistence.create({ id: live.id, cwd: '/proj' })
    turnEvents(live, 0, 'live one')
    await ctx.sessionPersistence.append(live.id, live.events)
    await ctx.sessionPersistence.flush(live.id)
    const row = (await ctx.sessionProjections.list(noLogReads(ctx)))[0]
    expect(row).toMatchObject({ source: 'live', values: { counts: { events: 4, last: 'live one' } } })
    live.append('user/message', { content: [{ type: 'text', text: 'more' }], source: { kind: 'human' } })
    expect(ctx.sessionProjections.snapshot(live.id)?.counts).toMatchObject({ events: 5, last: 'more' })
    expect(ctx.sessionProjections.snapshot('nope')).toBeUndefined()
    await ctx.sessionPersistence.close(live.id)
  })
})

describe('a narrowed listing (`only`)', () => {
  it('projects only the rows asked for, reads only their logs and keeps every other checkpoint', async () => {
    const dir = home()
    const ctx = await tree(dir, counter, 0)
    await store(ctx, 4)
    const reads: string[] = []
    const logs: StoredLogs = {
      list: () => ctx.sessionPersistence.list(),
      readFrom: (id, seq) => (reads.push(id), ctx.sessionPersistence.readFrom(id, seq)),
    }
    // Cold cache: only the two rows asked for are folded from their logs.
    const some = await ctx.sessionProjections.list(logs, { only: (s) => s.id === 's1' || s.id === 's3' })
    expect(some.map((r) => [r.summary.id, r.source])).toEqual([
      ['s3', 'rebuilt'],
      ['s1', 'rebuilt'],
    ])
    expect(reads.sort()).toEqual(['s1', 's3'])
    expect(ctx.sessionProjections.lastReport).toMatchObject({ rows: 2, rebuilt: 2, logsRead: 2 })
    expect(Object.keys(readDoc(join(dir, 'cache.json')).checkpoints).sort()).toEqual(['s1', 's3'])
    // A full listing fills the rest; a narrowed one after it drops nothing it did not list.
    await ctx.sessionProjections.list()
    reads.length = 0
    const one = await ctx.sessionProjections.list(logs, { only: (s) => s.id === 's0' })
    expect(one.map((r) => [r.summary.id, r.source, r.values.counts])).toEqual([
      ['s0', 'cache', { events: 4, prompts: 1, last: 'prompt 0' }],
    ])
    expect(reads).toEqual([])
    expect(Object.keys(readDoc(join(dir, 'cache.json')).checkpoints).sort()).toEqual(['s0', 's1', 's2', 's3'])
    // show() is a narrowed listing of one session.
    expect((await ctx.sessionProjections.show('s2', noLogReads(ctx)))?.values.counts).toMatchObject({
      last: 'prompt 2',
    })
    expect(ctx.sessionProjections.lastReport.rows).toBe(1)
    expect(await ctx.sessionProjections.show('nope')).toBeUndefined()
  })
})

describe('the registry', () => {
  it('folds whole logs, refuses duplicate names and unregisters with the disposer', async () => {
    const ctx = await tree(home())
    expect(() => ctx.sessionProjections.register(counter)).toThrow(/"counts" is already registered/)
    const session = new Session({ cwd: '/x' })
    turnEvents(session, 0, 'hi')
    expect(ctx.sessionProjections.foldEvents(session.events as AnySessionEvent[])).toEqual({
      counts: { events: 4, prompts: 1, last: 'hi' },
    })
    const off = ctx.sessionProjections.register({ name: 'n', version: 1, init: () => 0, fold: (s: number) => s + 1 })
    expect(ctx.sessionProjections.units()).toEqual(['counts', 'n'])
    off()
    expect(ctx.sessionProjections.units()).toEqual(['counts'])
  })

  it('a unit registered by a plugin goes away when that plugin unloads', async () => {
    const ctx = await tree(home())
    const fiber = ctx.plugin({
      name: 'unit-owner',
      inject: ['sessionProjections'],
      apply: (c: Context) =>
        void c.sessionProjections.register({ name: 'owned', version: 1, init: () => 0, fold: (s: number) => s }),
    })
    await fiber
    expect(ctx.sessionProjections.units()).toContain('owned')
    await fiber.dispose()
    expect(ctx.sessionProjections.units()).not.toContain('owned')
  })

  it('without persistence, listing says what is missing', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionStore)
    await ctx.plugin(SessionProjections)
    await expect(ctx.sessionProjections.list()).rejects.toThrow(/needs a session-persistence row/)
    expect(existsSync('/nonexistent')).toBe(false)
  })
})
