// Issue 42: the cache document (format 2, one line per session) keeps states as text until read, so
// a listing narrowed to a few rows (`dsh sessions --output-format json` without --all) parses the
// states of those rows only. Real JSONL store and real cache document, with a small unit and a
// heavy one (like the stats).
import { readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { Context, type Plugin } from 'cordis'
import SessionStore, { Session } from '@dsh/session'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import SessionProjections, { type ProjectionCheckpoint, type ProjectionUnit } from '@dsh/session-projection'
import JsonProjectionCache, { decodeDocument, encodeDocument } from '@dsh/session-projection-cache'

const small: ProjectionUnit<{ prompts: number }> = {
  name: 'small',
  version: 1,
  init: () => ({ prompts: 0 }),
  fold: (state, event) => (event.type === 'user/message' ? { prompts: state.prompts + 1 } : state),
}
/** Keeps a copy of every prompt, padded: a few KB of state per session. */
const heavy: ProjectionUnit<{ texts: string[] }, { bytes: number; last?: string }> = {
  name: 'heavy',
  version: 1,
  init: () => ({ texts: [] }),
  fold(state, event) {
    if (event.type === 'user/message')
      for (const block of event.data.content) if (block.type === 'text') state.texts.push(block.text.padEnd(3000, '.'))
    return state
  },
  value: (state) => ({ bytes: state.texts.join('').length, last: state.texts.at(-1)?.replace(/\.+$/, '') }),
}

const N = 12
let dir: string
let ctx: Context
let cachePath: string

async function tree(): Promise<Context> {
  const c = new Context()
  const mount = async (p: unknown, config?: unknown) => await c.plugin(p as Plugin, config as never)
  await mount(SessionStore)
  await mount(JsonlPersistence, { root: join(dir, 'sessions'), fsync: false, batchWindowMs: 1, compression: 'none' })
  await mount(JsonProjectionCache, { path: cachePath, journalRatio: 0 })
  await mount(SessionProjections)
  c.sessionProjections.register(small)
  c.sessionProjections.register(heavy)
  return c
}

async function addTurn(id: string, prompt: string, fresh: boolean): Promise<void> {
  const loaded = fresh ? undefined : await ctx.sessionPersistence.load(id)
  let t = loaded ? loaded.events.at(-1)!.time : 1_700_000_000_000 + Number(id.slice(1)) * 1000
  const session = new Session({ cwd: '/proj', id, clock: () => ++t, ...(loaded ? { events: loaded.events } : {}) })
  const before = session.length
  session.append('turn/start', { turn: 0 })
  session.append('user/message', { content: [{ type: 'text', text: prompt }], source: { kind: 'human' } })
  session.append('turn/end', { turn: 0, reason: 'completed' })
  if (fresh) await ctx.sessionPersistence.create({ id, cwd: '/proj', createdAt: t })
  await ctx.sessionPersistence.append(id, session.slice(before))
  await ctx.sessionPersistence.close(id)
}

/** Characters handed to JSON.parse while `fn` runs. */
async function parsedChars<T>(fn: () => Promise<T>): Promise<{ result: T; chars: number }> {
  const original = JSON.parse
  let chars = 0
  const spy = vi.spyOn(JSON, 'parse').mockImplementation((text, reviver) => {
    chars += String(text).length
    return original(text, reviver)
  })
  try {
    return { result: await fn(), chars }
  } finally {
    spy.mockRestore()
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-lazy-cache-'))
  cachePath = join(dir, 'cache.json')
  ctx = await tree()
  for (let i = 0; i < N; i++) await addTurn(`s${i}`, `prompt ${i}`, true)
  expect((await ctx.sessionProjections.list()).map((r) => r.source)).toEqual(Array(N).fill('rebuilt'))
})
afterAll(async () => {
  await ctx.fiber.dispose?.()
  rmSync(dir, { recursive: true, force: true })
})

describe('a cache whose states are parsed on use', () => {
  it('a narrowed listing parses the states of its rows only (not the whole document)', async () => {
    const bytes = readFileSync(cachePath, 'utf8').length
    expect(bytes).toBeGreaterThan(N * 3000)
    const { result: rows, chars } = await parsedChars(() =>
      ctx.sessionProjections.list(undefined, { only: (summary) => summary.id === 's3' }),
    )
    expect(rows.map((r) => [r.summary.id, r.source])).toEqual([['s3', 'cache']])
    expect(rows[0].values).toEqual({ small: { prompts: 1 }, heavy: { bytes: 3000, last: 'prompt 3' } })
    // One row's states (3 KB) were parsed, not the other rows' (the persistence index lines were).
    expect(chars).toBeLessThan(bytes / 4)
    // Every row: each state parsed to its own copy.
    const full = await ctx.sessionProjections.list()
    expect(full.map((r) => r.source)).toEqual(Array(N).fill('cache'))
    const s4 = full.find((r) => r.summary.id === 's4')!.values
    expect(s4).toEqual({ small: { prompts: 1 }, heavy: { bytes: 3000, last: 'prompt 4' } })
    ;(s4.heavy as { bytes: number }).bytes = -1
    expect((await ctx.sessionProjections.list()).find((r) => r.summary.id === 's4')!.values.heavy).toMatchObject({
      bytes: 3000,
    })
  })

  it('a session grown since is refreshed from its tail with every unit, and its checkpoint stays whole', async () => {
    await addTurn('s5', 'second prompt', false)
    const rows = await ctx.sessionProjections.list()
    expect(ctx.sessionProjections.lastReport).toMatchObject({ refreshed: 1, cache: N - 1, logsRead: 1 })
    expect(rows.find((r) => r.summary.id === 's5')!.values).toMatchObject({
      small: { prompts: 2 },
      heavy: { bytes: 6000, last: 'second prompt' },
    })
    const again = await ctx.sessionProjections.list()
    expect(ctx.sessionProjections.lastReport).toMatchObject({ cache: N, logsRead: 0 })
    expect(again.find((r) => r.summary.id === 's5')!.values.heavy).toEqual({ bytes: 6000, last: 'second prompt' })
  })

  it('a state whose text does not parse is folded again from its log, not served nor thrown', async () => {
    const lines = readFileSync(cachePath, 'utf8').split('\n')
    const at = lines.findIndex((line) => line.startsWith('"s7"\t'))
    const fields = lines[at].split('\t')
    fields[fields.indexOf('"small"') + 2] = '{"prompts":'
    fields[fields.indexOf('"heavy"') + 2] = '{broken'
    lines[at] = fields.join('\t')
    writeFileSync(cachePath, lines.join('\n'))
    const rows = await ctx.sessionProjections.list()
    const s7 = rows.find((r) => r.summary.id === 's7')!
    expect(s7.source).toBe('rebuilt')
    expect(s7.values).toMatchObject({ small: { prompts: 1 }, heavy: { bytes: 3000, last: 'prompt 7' } })
    expect(ctx.sessionProjections.lastReport).toMatchObject({ rebuilt: 1, cache: N - 1 })
    // The rebuilt checkpoint replaced the broken one.
    expect((await ctx.sessionProjections.list()).every((r) => r.source === 'cache')).toBe(true)
  })

  it('a format-1 document (one JSON object, earlier builds) is served as is and upgraded to format 2', async () => {
    const doc = decodeDocument(readFileSync(cachePath, 'utf8'))!
    const checkpoints: { [id: string]: ProjectionCheckpoint } = JSON.parse(JSON.stringify(doc.checkpoints))
    writeFileSync(cachePath, JSON.stringify({ format: 1, generation: 'old', checkpoints }))
    const rows = await ctx.sessionProjections.list()
    expect(rows.map((r) => r.source)).toEqual(Array(N).fill('cache'))
    expect(ctx.sessionProjections.lastReport.logsRead).toBe(0)
    const text = readFileSync(cachePath, 'utf8')
    expect(text.startsWith('{"format":2,')).toBe(true)
    expect(text.split('\n').filter(Boolean)).toHaveLength(N + 1)
    expect(JSON.parse(JSON.stringify(decodeDocument(text)!.checkpoints))).toEqual(checkpoints)
    // And written back byte for byte by the encoder from what it decoded (unparsed states included).
    const again = decodeDocument(text)!
    expect(encodeDocument(again.generation!, Object.values(again.checkpoints))).toBe(text)
  })
})
