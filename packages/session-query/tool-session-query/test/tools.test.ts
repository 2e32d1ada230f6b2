import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import { Session } from '@dsh/session'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import SqliteSessionQuery from '@dsh/session-query-sqlite'
import * as ToolSessionQuery from '@dsh/tool-session-query'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

async function store(ctx: Context, id: string, cwd: string, output: string) {
  let t = 1_700_000_000_000
  const s = new Session({ cwd, id, clock: () => t++ })
  s.append('turn/start', { turn: 0 })
  s.append('session/title', { title: `title of ${id}`, source: 'fallback' })
  s.append('user/message', { content: [{ type: 'text', text: `prompt of ${id}` }], source: { kind: 'human' } })
  s.append('tool/call', { callId: 'c', name: 'bash', arguments: '{}' })
  s.append('tool/result', {
    message: { role: 'tool', callId: 'c', name: 'bash', content: [{ type: 'text', text: output }] },
  })
  s.append('turn/end', { turn: 0, reason: 'completed' })
  await ctx.sessionPersistence.create({ id, cwd })
  await ctx.sessionPersistence.append(id, s.events)
  await ctx.sessionPersistence.close(id)
}

async function run(script: ScriptEntry[], config: Record<string, unknown> = {}) {
  const home = mkdtempSync(join(tmpdir(), 'dsh-tsq-'))
  dirs.push(home)
  const h = await createHarness({
    cwd: '/ws/mine',
    script,
    plugins: [
      [JsonlPersistence, { root: join(home, 'sessions'), fsync: false, batchWindowMs: 1, compression: 'none' }],
      [SqliteSessionQuery, { path: join(home, 'idx.sqlite') }],
      [ToolSessionQuery, config],
    ],
  })
  await store(h.ctx, 'same', '/ws/mine', 'the flux capacitor needs 1.21 gigawatts')
  await store(h.ctx, 'elsewhere', '/ws/other', 'flux capacitor in another repo')
  return h
}

const results = (h: Awaited<ReturnType<typeof run>>) =>
  h.session.events.flatMap((e) =>
    e.type === 'tool/result'
      ? [
          {
            text: e.data.message.content.map((b) => (b.type === 'text' ? b.text : '')).join(''),
            isError: e.data.message.isError === true,
          },
        ]
      : [],
  )

describe('session_search / session_read', () => {
  it('search and read see only sessions of the same workspace by default', async () => {
    const h = await run([
      { toolCalls: [{ name: 'session_search', arguments: { query: 'flux capacitor' } }] },
      {
        toolCalls: [
          { name: 'session_read', arguments: { session_id: 'same' } },
          { name: 'session_read', arguments: { session_id: 'elsewhere' } },
        ],
      },
      { text: 'done' },
    ])
    try {
      await h.prompt('find it')
      const [search, read, hidden] = results(h)
      expect(search.text).toContain('session same: title of same')
      expect(search.text).toContain('[flux capacitor]')
      expect(search.text).not.toContain('elsewhere')
      expect(read.text).toContain('#4 tool/result:\nthe flux capacitor needs 1.21 gigawatts')
      expect(read.text).toContain('#2 user/message:\nprompt of same')
      expect(hidden).toMatchObject({ isError: true })
      expect(hidden.text).toMatch(/NOT_FOUND.*no session "elsewhere" in this workspace/)
    } finally {
      await h.dispose()
    }
  })

  it('scope all sees every workspace; bad queries are model-visible errors', async () => {
    const h = await run(
      [
        {
          toolCalls: [
            { name: 'session_search', arguments: { query: 'flux capacitor' } },
            { name: 'session_search', arguments: { query: 'fl' } },
          ],
        },
        {
          toolCalls: [
            { name: 'session_read', arguments: { session_id: '../../etc' } },
            { name: 'session_search', arguments: { query: '"); DROP TABLE fts; --' } },
          ],
        },
        { text: 'done' },
      ],
      { scope: 'all' },
    )
    try {
      await h.prompt('find it everywhere')
      const [all, short, badId, injection] = results(h)
      expect(all.text).toContain('session same')
      expect(all.text).toContain('session elsewhere')
      expect(short).toMatchObject({ isError: true })
      expect(short.text).toMatch(/BAD_QUERY.*at least 3 characters/)
      expect(badId.text).toMatch(/NOT_FOUND/)
      expect(injection.text).toMatch(/^No session contains/)
    } finally {
      await h.dispose()
    }
  })

  it('a long session is read in pages', () => {
    const s = new Session({ cwd: '/x' })
    for (let i = 0; i < 10; i++)
      s.append('user/message', { content: [{ type: 'text', text: 'y'.repeat(500) }], source: { kind: 'human' } })
    const page = ToolSessionQuery.formatEvents(s.events, 1200, 4000)
    expect(page.next).toBe(2)
    expect(ToolSessionQuery.formatEvents(s.events, 100_000, 100).text).toContain(
      '[... 400 more characters of this event not shown]',
    )
  })

  it('event search, trace, event trace and event read name events by seq within the scope', async () => {
    const h = await run([
      {
        toolCalls: [
          { name: 'session_event_search', arguments: { query: 'flux capacitor' } },
          { name: 'session_trace', arguments: { session_id: 'same' } },
          { name: 'session_event_trace', arguments: { session_id: 'same', seq: 4 } },
          { name: 'session_event_read', arguments: { session_id: 'same', seq: 3 } },
        ],
      },
      {
        toolCalls: [
          { name: 'session_trace', arguments: { session_id: 'elsewhere' } },
          { name: 'session_event_read', arguments: { session_id: 'same', seq: 40 } },
          { name: 'session_event_trace', arguments: { session_id: 'elsewhere', seq: 4 } },
          { name: 'session_event_search', arguments: { query: 'flux capacitor', session_id: 'elsewhere' } },
        ],
      },
      { text: 'done' },
    ])
    try {
      await h.prompt('trace it')
      const [search, trace, eventTrace, read, hiddenTrace, missing, hiddenEventTrace, hiddenSearch] = results(h)
      expect(search.text).toContain('1 event match:')
      expect(search.text).toContain('- session same #4 tool/result (title of same): the [flux capacitor]')
      expect(search.text).not.toContain('elsewhere')
      expect(trace.isError).toBe(false)
      expect(trace.text).toContain('Session same: title of same | cwd /ws/mine')
      expect(trace.text).toContain('turn 0 (#0-#5, completed) prompt #2: "prompt of same"')
      expect(trace.text).toContain('calls: bash #3 -> #4 ok')
      expect(eventTrace.text).toContain('#0 turn/start [turn]: turn 0')
      expect(eventTrace.text).toContain('#2 user/message [prompt]:\nprompt of same')
      expect(eventTrace.text).toContain('#3 tool/call [call]:\nbash {}')
      expect(eventTrace.text).toContain('#4 tool/result [target]:\nthe flux capacitor needs 1.21 gigawatts')
      expect(read.text).toMatch(/^Session same #3 tool\/call at 2023-11-14T22:13:20Z:\nbash \{\}$/)
      for (const hidden of [hiddenTrace, hiddenEventTrace, hiddenSearch]) {
        expect(hidden.isError).toBe(true)
        expect(hidden.text).toMatch(/NOT_FOUND.*no session "elsewhere" in this workspace/)
      }
      expect(missing).toMatchObject({ isError: true })
      expect(missing.text).toMatch(/NOT_FOUND.*session same has no event 40 \(it has 6\)/)
    } finally {
      await h.dispose()
    }
  })
})
