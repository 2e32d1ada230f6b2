// rateMessage / currentFeedback on real sessions, the messageFeedback.put/list methods through the
// real ctx.api (param validation included), and the persistence of `feedback/message`.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import SessionStore, { type Session } from '@dsh/session'
import { DurableSessions } from '@dsh/session-persistence'
import ApiGateway from '@dsh/api-gateway'
import { ApiError, checkParams } from '@dsh/web-protocol'
// Not a dependency of this package: reached through the workspace tree (test-only).
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import * as MessageFeedbackPlugin from '../src/index.ts'
import {
  currentFeedback,
  FeedbackError,
  messageFeedbackList,
  messageFeedbackPut,
  rateMessage,
  type MessageFeedback,
} from '../src/index.ts'

let root: string
const trees: Context[] = []
const dispose = async (ctx: Context) => {
  trees.splice(trees.indexOf(ctx), 1)
  await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
}
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-message-feedback-'))
})
afterEach(async () => {
  for (const ctx of [...trees]) await dispose(ctx)
  await rm(root, { recursive: true, force: true })
})

async function tree(options: { feedback?: boolean; api?: boolean; persistence?: boolean } = {}) {
  const ctx = new Context()
  trees.push(ctx)
  await ctx.plugin(SessionStore)
  if (options.persistence) {
    await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, unknownEventTypes: 'refuse' })
    await ctx.plugin(DurableSessions, { origin: 'test' })
  }
  if (options.api) await ctx.plugin(ApiGateway, { sessions: false, heartbeatMs: 0 } as never)
  if (options.feedback !== false) await ctx.plugin(MessageFeedbackPlugin)
  return ctx
}

const text = (t: string) => [{ type: 'text' as const, text: t }]
/** A session with a user message (seq 0), a final answer (seq 1) and an interrupted one (seq 2). */
function conversation(ctx: Context): Session {
  const s = ctx.sessions.create({ cwd: '/w' })
  s.append('user/message', { content: text('question'), source: { kind: 'human' } })
  s.append('assistant/message', { message: { role: 'assistant', content: text('answer') } })
  s.append('assistant/message', { message: { role: 'assistant', content: text('half an ans') }, interrupted: true })
  s.append('assistant/message', { message: { role: 'assistant', content: text('second answer') } })
  return s
}

const failure = (fn: () => unknown) => {
  try {
    fn()
  } catch (error) {
    if (error instanceof FeedbackError) return `${error.code}: ${error.message}`
    throw error
  }
  return 'no error'
}

describe('rateMessage', () => {
  it('logs like, dislike and none for a finalized assistant message, trimming the note and leaving out an empty one', async () => {
    const ctx = await tree()
    const s = conversation(ctx)
    const like = rateMessage(s, 1, 'like', '  clear and short  ')
    expect(like).toMatchObject({
      seq: 4,
      type: 'feedback/message',
      data: { messageSeq: 1, rating: 'like', note: 'clear and short' },
    })
    expect(rateMessage(s, 3, 'dislike', '   ').data).toEqual({ messageSeq: 3, rating: 'dislike' })
    expect(rateMessage(s, 1, 'none').data).toEqual({ messageSeq: 1, rating: 'none' })
    expect(s.events.slice(4).map((e) => e.type)).toEqual(['feedback/message', 'feedback/message', 'feedback/message'])
  })

  it('refuses a seq that is not an assistant message, or an interrupted one, logging nothing', async () => {
    const ctx = await tree()
    const s = conversation(ctx)
    expect(failure(() => rateMessage(s, 0, 'like'))).toBe(
      `NOT_A_MESSAGE: seq 0 of session ${s.id} is not an assistant message`,
    )
    expect(failure(() => rateMessage(s, 99, 'like'))).toBe(
      `NOT_A_MESSAGE: seq 99 of session ${s.id} is not an assistant message`,
    )
    expect(failure(() => rateMessage(s, -1, 'like'))).toMatch(/^NOT_A_MESSAGE: seq -1 /)
    expect(failure(() => rateMessage(s, 2, 'dislike'))).toBe(
      'NOT_FINAL: the assistant message at seq 2 was interrupted and cannot be rated',
    )
    // A feedback event is not itself rateable.
    rateMessage(s, 1, 'like')
    expect(failure(() => rateMessage(s, 4, 'like'))).toMatch(/^NOT_A_MESSAGE: seq 4 /)
    expect(s.events).toHaveLength(5)
  })
})

describe('currentFeedback', () => {
  it('keeps the latest rating per message, drops withdrawn ones, sorts by message and ignores other events', async () => {
    const ctx = await tree()
    const s = conversation(ctx)
    expect(currentFeedback(s.events)).toEqual([])
    rateMessage(s, 3, 'like', 'good')
    rateMessage(s, 1, 'like')
    rateMessage(s, 1, 'dislike', 'wrong file')
    const last = rateMessage(s, 3, 'dislike')
    expect(currentFeedback(s.events)).toEqual([
      { messageSeq: 1, rating: 'dislike', note: 'wrong file', time: s.events[6].time },
      { messageSeq: 3, rating: 'dislike', time: last.time },
    ])
    rateMessage(s, 1, 'none')
    expect(currentFeedback(s.events).map((f) => f.messageSeq)).toEqual([3])
    rateMessage(s, 1, 'like')
    expect(currentFeedback(s.events).map((f) => [f.messageSeq, f.rating])).toEqual([
      [1, 'like'],
      [3, 'dislike'],
    ])
  })
})

describe('messageFeedback.put / messageFeedback.list', () => {
  const call = { loopback: true, signal: new AbortController().signal }

  it('rates a loaded session and lists the current ratings', async () => {
    const ctx = await tree({ api: true })
    expect(ctx.api.list()).toEqual(expect.arrayContaining(['messageFeedback.list', 'messageFeedback.put']))
    const s = conversation(ctx)
    const put = (await ctx.api.call(
      'messageFeedback.put',
      { sessionId: s.id, messageSeq: 1, rating: 'like', note: ' nice ' },
      call,
    )) as { feedback: MessageFeedback; seq: number }
    expect(put).toEqual({ feedback: { messageSeq: 1, rating: 'like', note: 'nice', time: s.events[4].time }, seq: 4 })
    expect(() => messageFeedbackPut.result(put)).not.toThrow()
    await ctx.api.call('messageFeedback.put', { sessionId: s.id, messageSeq: 3, rating: 'dislike' }, call)
    const list = await ctx.api.call('messageFeedback.list', { sessionId: s.id }, call)
    expect(list).toEqual({
      feedback: [
        { messageSeq: 1, rating: 'like', note: 'nice', time: s.events[4].time },
        { messageSeq: 3, rating: 'dislike', time: s.events[5].time },
      ],
    })
    expect(() => messageFeedbackList.result(list as never)).not.toThrow()
  })

  it('refuses bad params, an unknown session and a bad messageSeq with ApiErrors naming the field', async () => {
    const ctx = await tree({ api: true })
    const s = conversation(ctx)
    const put = (params: unknown) => ctx.api.call('messageFeedback.put', params, call)
    for (const bad of [
      {},
      { sessionId: s.id, rating: 'like' },
      { sessionId: '', messageSeq: 1, rating: 'like' },
      { sessionId: s.id, messageSeq: -1, rating: 'like' },
      { sessionId: s.id, messageSeq: 1.5, rating: 'like' },
      { sessionId: s.id, messageSeq: '1', rating: 'like' },
      { sessionId: s.id, messageSeq: 1, rating: 'love' },
      { sessionId: s.id, messageSeq: 1 },
      { sessionId: s.id, messageSeq: 1, rating: 'like', note: 'x'.repeat(4001) },
      { sessionId: s.id, messageSeq: 1, rating: 'like', note: 7 },
    ]) {
      await expect(put(bad), JSON.stringify(bad).slice(0, 80)).rejects.toMatchObject({
        code: 'INVALID_PARAMS',
        message: expect.stringMatching(/^messageFeedback\.put: /),
      })
    }
    await expect(put({ sessionId: s.id, messageSeq: 1, rating: 'love' })).rejects.toMatchObject({ field: 'rating' })
    // A negative or fractional seq is refused by the schema, before any session lookup.
    for (const messageSeq of [-1, 1.5]) {
      await expect(put({ sessionId: 'nope', messageSeq, rating: 'like' })).rejects.toMatchObject({
        code: 'INVALID_PARAMS',
        field: 'messageSeq',
      })
    }
    await expect(put({ sessionId: s.id, messageSeq: 1, rating: 'like', note: 'x'.repeat(4001) })).rejects.toMatchObject(
      { field: 'note' },
    )
    await expect(ctx.api.call('messageFeedback.list', {}, call)).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      field: 'sessionId',
    })
    await expect(put({ sessionId: 'nope', messageSeq: 1, rating: 'like' })).rejects.toMatchObject({
      code: 'SESSION_NOT_FOUND',
      message: 'no loaded session "nope" (open it first)',
      field: 'sessionId',
    })
    await expect(ctx.api.call('messageFeedback.list', { sessionId: 'nope' }, call)).rejects.toMatchObject({
      code: 'SESSION_NOT_FOUND',
    })
    const notFinal = put({ sessionId: s.id, messageSeq: 2, rating: 'like' })
    await expect(notFinal).rejects.toBeInstanceOf(ApiError)
    await expect(notFinal).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      field: 'messageSeq',
      message: 'messageFeedback.put: messageSeq: the assistant message at seq 2 was interrupted and cannot be rated',
    })
    await expect(put({ sessionId: s.id, messageSeq: 0, rating: 'like' })).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      field: 'messageSeq',
    })
    // Nothing was logged by any refused call.
    expect(s.events).toHaveLength(4)
  })

  it('the contracts validate on their own (browser side) and unloading withdraws the methods', async () => {
    expect(checkParams(messageFeedbackPut, { sessionId: 's', messageSeq: 0, rating: 'none' })).toEqual({
      sessionId: 's',
      messageSeq: 0,
      rating: 'none',
    })
    expect(() => checkParams(messageFeedbackPut, { sessionId: 's', messageSeq: 0, rating: 'meh' })).toThrow(
      /^messageFeedback\.put: rating: /,
    )
    expect(() => messageFeedbackList.result({ feedback: [{ messageSeq: 1, rating: 'like' }] } as never)).toThrow()
    const ctx = new Context()
    trees.push(ctx)
    await ctx.plugin(SessionStore)
    await ctx.plugin(ApiGateway, { sessions: false, heartbeatMs: 0 } as never)
    const fiber = await ctx.plugin(MessageFeedbackPlugin)
    expect(ctx.api.list()).toContain('messageFeedback.put')
    await fiber.dispose()
    expect(ctx.api.list()).not.toContain('messageFeedback.put')
    expect(ctx.api.list()).not.toContain('messageFeedback.list')
  })
})

describe('persistence', () => {
  it('registers feedback/message, so a strict store accepts it and a log holding it reloads with its ratings', async () => {
    const a = await tree({ persistence: true })
    const s = conversation(a)
    rateMessage(s, 1, 'like', 'kept')
    rateMessage(s, 3, 'dislike')
    await a.durableSessions.checkpoint(s.id)
    const ratings = currentFeedback(s.events)
    await dispose(a)

    const bare = await tree({ persistence: true, feedback: false })
    await expect(bare.durableSessions.resume(s.id)).rejects.toMatchObject({ code: 'UNKNOWN_EVENT_TYPE' })
    await dispose(bare)

    const b = await tree({ persistence: true })
    const { session } = await b.durableSessions.resume(s.id)
    expect(session.events.map((e) => e.type)).toEqual(s.events.map((e) => e.type))
    expect(currentFeedback(session.events)).toEqual(ratings)
  })
})
