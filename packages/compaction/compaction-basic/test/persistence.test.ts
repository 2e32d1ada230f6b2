import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import LlmService from '@dsh/llm'
import TokenMeter from '@dsh/token-meter'
import { DurableSessions } from '@dsh/session-persistence'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import BasicCompactionEngine from '../src/index.ts'

let root: string
const trees: Context[] = []
async function tree(withCompaction: boolean) {
  const ctx = new Context()
  await ctx.plugin(SessionStore)
  await ctx.plugin(LlmService)
  await ctx.plugin(TokenMeter)
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5 })
  await ctx.plugin(DurableSessions, { origin: 'test' })
  if (withCompaction) await ctx.plugin(BasicCompactionEngine, {})
  trees.push(ctx)
  return ctx
}
const dispose = (ctx: Context) => (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-compaction-'))
})
afterEach(async () => {
  for (const ctx of trees.splice(0)) await dispose(ctx)
  await rm(root, { recursive: true, force: true })
})

it('registers the compaction event types so a compacted session resumes from disk', async () => {
  const a = await tree(true)
  const s = a.sessions.create({ cwd: '/w' })
  const text = (t: string) => [{ type: 'text' as const, text: t }]
  s.append('turn/start', { turn: 0 })
  s.append('user/message', { content: text('task'), source: { kind: 'human' } })
  s.append('assistant/message', { message: { role: 'assistant', content: text('long answer') } })
  s.append('turn/end', { turn: 0, reason: 'completed' })
  s.append('compaction/start', {
    id: 'c1',
    reason: 'manual',
    engine: '@dsh/compaction-basic',
    provider: 'p',
    model: 'm',
    fromSeq: 2,
    toSeq: 3,
    tokensBefore: 10,
    instruction: 'summarize',
  })
  s.append('compaction/summary', { id: 'c1', text: 'the answer was long' })
  const replace = s.surface.replaceRange(2, 3, [{ role: 'user', content: text('summary') }], {
    by: '@dsh/compaction-basic',
    compaction: 'c1',
  })
  s.append('compaction/end', { id: 'c1', status: 'compacted', replaceSeq: replace.seq, tokensAfter: 5 })
  await a.durableSessions.checkpoint(s.id)
  const derived = JSON.stringify(s.deriveMessages())
  await dispose(a)

  // A build without the compaction backend refuses the unknown event types...
  const bare = await tree(false)
  await expect(bare.durableSessions.resume(s.id)).rejects.toMatchObject({ code: 'UNKNOWN_EVENT_TYPE' })
  await dispose(bare)
  // ...one with it loads the log and derives the compacted surface.
  const b = await tree(true)
  const { session } = await b.durableSessions.resume(s.id)
  expect(session.events.map((e) => e.type)).toEqual(s.events.map((e) => e.type))
  expect(JSON.stringify(session.deriveMessages())).toBe(derived)
})
