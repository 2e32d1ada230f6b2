// Open-or-resume against the real session store, JSONL persistence and durable sessions: the
// codes every face maps onto its own errors, and the session `--continue` picks.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import LlmService from '@dsh/llm'
import { DurableSessions, type SessionSummary } from '@dsh/session-persistence'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import {
  continuable,
  latestContinuable,
  openSession,
  resumeStored,
  SessionOpenError,
  sessionOpenError,
} from '../src/index.ts'

let root: string
const trees: Context[] = []
async function tree(): Promise<Context> {
  const ctx = new Context()
  await ctx.plugin(SessionStore)
  await ctx.plugin(LlmService)
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5 })
  await ctx.plugin(DurableSessions, { origin: 'test' })
  trees.push(ctx)
  return ctx
}
const dispose = (ctx: Context) => (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()

async function failure(work: Promise<unknown>): Promise<SessionOpenError> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(SessionOpenError)
  return error as SessionOpenError
}

let writer: Context
let storedId: string
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-surface-kit-'))
  writer = await tree()
  const s = writer.sessions.create({ cwd: '/w' })
  s.append('turn/start', { turn: 0 })
  s.append('turn/end', { turn: 0, reason: 'completed' })
  await writer.durableSessions.checkpoint(s.id)
  storedId = s.id
})
afterAll(async () => {
  for (const ctx of trees.splice(0)) await dispose(ctx)
  await rm(root, { recursive: true, force: true })
})

describe('resumeStored / openSession', () => {
  it('resumes a stored session in another tree', async () => {
    const reader = await tree()
    // The writer still holds the log: the reader is refused with LOCKED, in the store's words.
    const locked = await failure(resumeStored(reader.durableSessions, storedId))
    expect(locked.code).toBe('LOCKED')
    expect(locked.sessionId).toBe(storedId)
    expect(locked.detail).toMatch(storedId)
    await writer.sessionPersistence.close(storedId)
    writer.sessions.delete(storedId)
    const opened = await resumeStored(reader.durableSessions, storedId)
    expect(opened.session.id).toBe(storedId)
    expect(opened.session.events.map((e) => e.type)).toEqual(['turn/start', 'turn/end'])
    // In memory now: openSession answers the same object without resuming again.
    expect(await openSession(reader.sessions, reader.durableSessions, storedId)).toBe(opened.session)
  })

  it('names a missing session NOT_FOUND and a malformed id BAD_ID', async () => {
    const ctx = writer
    const missing = await failure(openSession(ctx.sessions, ctx.durableSessions, '01JZZZZZZZZZZZZZZZZZZZZZZZ'))
    expect(missing.code).toBe('NOT_FOUND')
    const bad = await failure(openSession(ctx.sessions, ctx.durableSessions, '../etc'))
    expect(bad.code).toBe('BAD_ID')
    expect(bad.storeCode).toBe('BAD_ID')
  })

  it('says NO_PERSISTENCE without a durable-sessions row, and finds an in-memory session anyway', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionStore)
    trees.push(ctx)
    expect((await failure(resumeStored(undefined, 'x'))).code).toBe('NO_PERSISTENCE')
    expect((await failure(openSession(ctx.sessions, undefined, 'x'))).code).toBe('NO_PERSISTENCE')
    const s = ctx.sessions.create({ cwd: '/m' })
    expect(await openSession(ctx.sessions, undefined, s.id)).toBe(s)
  })

  it('maps any other failure to FAILED with the sentence kept', () => {
    const plain = sessionOpenError('s1', new Error('disk on fire'))
    expect([plain.code, plain.detail, plain.storeCode]).toEqual(['FAILED', 'disk on fire', undefined])
    const odd = sessionOpenError('s1', Object.assign(new Error('ambiguous'), { code: 'AMBIGUOUS' }))
    expect([odd.code, odd.storeCode]).toEqual(['FAILED', 'AMBIGUOUS'])
  })
})

describe('continuable / latestContinuable', () => {
  const row = (over: Partial<Omit<SessionSummary, 'id'>> & { id?: string }): SessionSummary =>
    ({ id: 'x', cwd: '/a', createdAt: 1, updatedAt: 1, turns: 1, events: 2, ...over }) as SessionSummary
  it('offers sessions that ran a turn or are damaged, never a derived one', () => {
    expect(continuable(row({}))).toBe(true)
    expect(continuable(row({ turns: 0 }))).toBe(false)
    expect(continuable(row({ turns: 0, damaged: 'torn' }))).toBe(true)
    expect(continuable(row({ parentSession: { sessionId: 'p' } as SessionSummary['parentSession'] }))).toBe(false)
  })
  it('picks the newest continuable row of the directory', () => {
    const rows = [
      row({ id: 'other-dir', cwd: '/b' }),
      row({ id: 'help-only', turns: 0 }),
      row({ id: 'child', parentSession: { sessionId: 'p' } as SessionSummary['parentSession'] }),
      row({ id: 'newest' }),
      row({ id: 'older' }),
    ]
    expect(latestContinuable(rows, '/a')?.id).toBe('newest')
    expect(latestContinuable(rows, '/c')).toBeUndefined()
  })
})
