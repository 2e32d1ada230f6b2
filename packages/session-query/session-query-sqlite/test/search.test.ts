import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Context, type Plugin } from 'cordis'
import SessionStore, { Session } from '@dsh/session'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import SqliteSessionQuery from '@dsh/session-query-sqlite'
import { SessionQueryError } from '@dsh/session-query'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

async function tree() {
  const home = mkdtempSync(join(tmpdir(), 'dsh-query-'))
  dirs.push(home)
  const ctx = new Context()
  const mount = async (p: unknown, c?: unknown) => await ctx.plugin(p as Plugin, c as never)
  await mount(SessionStore)
  await mount(JsonlPersistence, { root: join(home, 'sessions'), fsync: false, batchWindowMs: 1, compression: 'none' })
  await mount(SqliteSessionQuery, { path: join(home, 'index.sqlite') })
  return { ctx, home }
}

function fill(session: Session, prompt: string, toolOutput: string, answer = 'done'): void {
  session.append('turn/start', { turn: 0 })
  session.append('user/message', { content: [{ type: 'text', text: prompt }], source: { kind: 'human' } })
  session.append('assistant/message', {
    message: {
      role: 'assistant',
      content: [{ type: 'tool-call', callId: 'c1', name: 'bash', arguments: '{"command":"make"}' }],
    },
  })
  session.append('tool/call', { callId: 'c1', name: 'bash', arguments: '{"command":"make"}' })
  session.append('tool/result', {
    message: { role: 'tool', callId: 'c1', name: 'bash', content: [{ type: 'text', text: toolOutput }] },
  })
  session.append('assistant/message', { message: { role: 'assistant', content: [{ type: 'text', text: answer }] } })
  session.append('turn/end', { turn: 0, reason: 'completed' })
}

async function stored(ctx: Context, id: string, cwd: string, prompt: string, toolOutput: string, answer?: string) {
  let t = 1_700_000_000_000
  const session = new Session({ cwd, id, clock: () => t++ })
  fill(session, prompt, toolOutput, answer)
  await ctx.sessionPersistence.create({ id, cwd })
  await ctx.sessionPersistence.append(id, session.events)
  await ctx.sessionPersistence.close(id)
}

describe('SqliteSessionQuery.search', () => {
  it('finds a phrase in a tool result of an old session and in a running, unflushed session', async () => {
    const { ctx } = await tree()
    await stored(ctx, 'old', '/proj', 'build it', 'error: undefined reference to `frobnicate_widget`')
    await stored(ctx, 'other', '/proj', 'unrelated', 'all good')
    const live = ctx.sessions.create({ cwd: '/proj', id: 'running' })
    fill(live, 'investigate', 'warning: frobnicate_widget is deprecated')
    const hits = await ctx.sessionQuery.search({ text: 'frobnicate_widget' })
    expect(hits.map((h) => [h.sessionId, h.type, h.live]).sort()).toEqual([
      ['old', 'tool/result', false],
      ['running', 'tool/result', true],
    ])
    expect(hits.find((h) => h.sessionId === 'old')!.snippet).toContain('[frobnicate_widget]')
    // A later event of the running session is found on the next search.
    live.append('user/message', {
      content: [{ type: 'text', text: 'now look at quuxinator' }],
      source: { kind: 'human' },
    })
    expect((await ctx.sessionQuery.search({ text: 'quuxinator' })).map((h) => h.sessionId)).toEqual(['running'])
  })

  it('treats SQL and FTS syntax as literal text', async () => {
    const { ctx } = await tree()
    await stored(ctx, 'inj', '/p', 'x', 'payload "); DROP TABLE fts; -- end')
    await stored(ctx, 'syn', '/p', 'y', 'literal NEAR(alpha beta) and foo* OR bar and col:text')
    await stored(ctx, 'plain', '/p', 'z', 'alpha beta foo bar text DROP TABLE')
    expect((await ctx.sessionQuery.search({ text: '"); DROP TABLE' })).map((h) => h.sessionId)).toEqual(['inj'])
    expect((await ctx.sessionQuery.search({ text: 'NEAR(alpha beta)' })).map((h) => h.sessionId)).toEqual(['syn'])
    expect((await ctx.sessionQuery.search({ text: 'foo* OR bar' })).map((h) => h.sessionId)).toEqual(['syn'])
    expect((await ctx.sessionQuery.search({ text: 'col:text' })).map((h) => h.sessionId)).toEqual(['syn'])
    expect(await ctx.sessionQuery.search({ text: '"unbalanced ( quote' })).toEqual([])
    expect(await ctx.sessionQuery.search({ text: "'; DELETE FROM indexed; --" })).toEqual([])
    // The index survived every query.
    expect((await ctx.sessionQuery.search({ text: 'alpha beta' })).map((h) => h.sessionId).sort()).toEqual([
      'plain',
      'syn',
    ])
  })

  it('filters by cwd and type, groups by session and counts matches', async () => {
    const { ctx } = await tree()
    await stored(ctx, 'a', '/one', 'zebra task', 'zebra zebra', 'zebra done')
    await stored(ctx, 'b', '/two', 'zebra elsewhere', 'nothing')
    const all = await ctx.sessionQuery.search({ text: 'zebra' })
    expect(all.map((h) => h.sessionId).sort()).toEqual(['a', 'b'])
    expect(all.find((h) => h.sessionId === 'a')!.matches).toBe(3)
    expect((await ctx.sessionQuery.search({ text: 'zebra', cwd: '/two' })).map((h) => h.sessionId)).toEqual(['b'])
    expect((await ctx.sessionQuery.search({ text: 'zebra', types: ['tool/result'] })).map((h) => h.sessionId)).toEqual([
      'a',
    ])
    expect(await ctx.sessionQuery.search({ text: 'zebra', limit: 1 })).toHaveLength(1)
  })

  it('rejects empty and too-short text with BAD_QUERY', async () => {
    const { ctx } = await tree()
    await expect(ctx.sessionQuery.search({ text: '  ' })).rejects.toThrow(SessionQueryError)
    await expect(ctx.sessionQuery.search({ text: 'ab' })).rejects.toThrow(/at least 3 characters/)
  })

  it('catches up with grown logs, drops deleted sessions and survives a fresh index of the same store', async () => {
    const { ctx, home } = await tree()
    await stored(ctx, 's1', '/p', 'first', 'marmalade')
    expect(await ctx.sessionQuery.search({ text: 'marmalade' })).toHaveLength(1)
    const loaded = await ctx.sessionPersistence.load('s1')
    let t = loaded.events.at(-1)!.time + 1
    const s = new Session({ cwd: '/p', id: 's1', clock: () => t++, events: loaded.events })
    s.append('user/message', { content: [{ type: 'text', text: 'add pomegranate' }], source: { kind: 'human' } })
    await ctx.sessionPersistence.append('s1', s.slice(loaded.events.length))
    await ctx.sessionPersistence.close('s1')
    expect((await ctx.sessionQuery.search({ text: 'pomegranate' })).map((h) => h.seq)).toEqual([loaded.events.length])
    rmSync(join(home, 'sessions'), { recursive: true })
    expect(await ctx.sessionQuery.search({ text: 'marmalade' })).toEqual([])
  })
})

describe('exact reads', () => {
  it('reads stored and live events with filters, and names an unknown session', async () => {
    const { ctx } = await tree()
    await stored(ctx, 'st', '/p', 'stored prompt', 'out')
    const live = ctx.sessions.create({ cwd: '/q', id: 'lv' })
    fill(live, 'live prompt', 'out')
    expect((await ctx.sessionQuery.read('st', { types: ['user/message'] })).map((e) => e.seq)).toEqual([1])
    expect((await ctx.sessionQuery.read('lv', { fromSeq: 2, limit: 2 })).map((e) => e.seq)).toEqual([2, 3])
    expect((await ctx.sessionQuery.read('st', { fromSeq: 1, toSeq: 3 })).map((e) => e.seq)).toEqual([1, 2])
    await expect(ctx.sessionQuery.read('missing')).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(ctx.sessionQuery.read('st', { fromSeq: -1 })).rejects.toMatchObject({ code: 'BAD_QUERY' })
    const rows = await ctx.sessionQuery.sessions()
    expect(rows.map((r) => [r.id, r.live]).sort()).toEqual([
      ['lv', true],
      ['st', false],
    ])
    expect((await ctx.sessionQuery.sessions({ cwd: '/q' })).map((r) => r.id)).toEqual(['lv'])
    expect((await ctx.sessionQuery.sessions({ titleContains: 'STORED' })).map((r) => r.id)).toEqual(['st'])
    expect(await ctx.sessionQuery.session('nope')).toBeUndefined()
  })
})
