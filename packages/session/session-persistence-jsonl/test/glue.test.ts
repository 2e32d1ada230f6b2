import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import { DurableSessions } from '@dsh/session-persistence'
import JsonlPersistence from '../src/index.ts'

let root: string
const trees: Context[] = []
async function tree() {
  const ctx = new Context()
  await ctx.plugin(SessionStore)
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5 })
  await ctx.plugin(DurableSessions, { origin: 'test' })
  trees.push(ctx)
  return ctx
}
const dispose = (ctx: Context) => (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-glue-'))
})
afterEach(async () => {
  for (const ctx of trees.splice(0)) await dispose(ctx)
  await rm(root, { recursive: true, force: true })
})

it('persists new sessions and forks, resumes them into the store, and continues seq', async () => {
  const a = await tree()
  const s = a.sessions.create({ cwd: '/w' })
  s.append('turn/start', { turn: 0 })
  s.append('user/message', { content: [{ type: 'text', text: 'hello' }], source: { kind: 'human' } })
  s.append('turn/end', { turn: 0, reason: 'completed' })
  const fork = a.sessions.fork(s)
  await a.durableSessions.checkpoint(s.id)
  await a.durableSessions.checkpoint(fork.id)
  expect(a.durableSessions.isPersisted(s.id)).toBe(true)
  await dispose(a)

  const b = await tree()
  const rows = await b.durableSessions.list()
  expect(rows.find((r) => r.id === s.id)).toMatchObject({ cwd: '/w', firstPrompt: 'hello', turns: 1, origin: 'test' })
  expect(rows.find((r) => r.id === fork.id)).toMatchObject({ parentSession: { sessionId: s.id, boundary: 3 } })
  const { session, loaded } = await b.durableSessions.resume(s.id)
  expect(loaded.repairs).toEqual([])
  expect(b.sessions.get(s.id)).toBe(session)
  expect(session.deriveMessages()).toEqual(s.deriveMessages())
  session.append('turn/start', { turn: 1 })
  await b.durableSessions.checkpoint(s.id)
  await expect(b.durableSessions.resume(s.id)).rejects.toThrow(/already live/)
  b.sessions.delete(s.id)
  await b.sessionPersistence.flush()
  // Deleting from the store closes the writer (in the background); the next resume repairs the
  // open turn. Wait for the close by retrying the resume (LOCKED until the writer is gone).
  const again = await vi.waitFor(() => b.durableSessions.resume(s.id), { timeout: 10_000, interval: 10 })
  expect(again.loaded.repairs).toEqual([{ kind: 'turn-end', turn: 1 }])
  expect(await b.durableSessions.resumeLatest('/elsewhere')).toBeUndefined()
})

it('checkpoint names a failed create (duplicate id on disk)', async () => {
  const a = await tree()
  const s = a.sessions.create({ id: 'dup', cwd: '/w' })
  await a.durableSessions.checkpoint(s.id)
  a.sessions.delete('dup')
  await new Promise((r) => setTimeout(r, 20))
  a.sessions.create({ id: 'dup', cwd: '/w' })
  await new Promise((r) => setTimeout(r, 20))
  await expect(a.durableSessions.checkpoint('dup')).rejects.toThrow(/already exists/)
})

it('resume takes a unique id prefix; an ambiguous one lists the candidates; none is NOT_FOUND', async () => {
  const a = await tree()
  for (const id of ['abc111', 'abc222', 'abd333']) {
    a.sessions.create({ id, cwd: '/w' }).append('turn/start', { turn: 0 })
    await a.durableSessions.checkpoint(id)
  }
  await dispose(a)
  const b = await tree()
  const { session } = await b.durableSessions.resume('abd')
  expect(session.id).toBe('abd333')
  await expect(b.durableSessions.resume('abc')).rejects.toMatchObject({
    code: 'AMBIGUOUS',
    message: expect.stringMatching(
      /^session id prefix abc matches 2 sessions: abc\d{3} \(\/w, [0-9-]+ [0-9:]+\), abc\d{3} \(\/w, .*\); give more of the id$/,
    ),
  })
  await expect(b.durableSessions.resume('zz')).rejects.toMatchObject({
    code: 'NOT_FOUND',
    message: 'no stored session zz',
  })
  // An exact id wins over being the prefix of another.
  expect((await b.durableSessions.resume('abc111')).session.id).toBe('abc111')
})
