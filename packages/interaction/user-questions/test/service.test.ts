import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import UserQuestionsService, { checkQuestions, type Question, type QuestionsOutcome } from '../src/index.ts'

const pick: Question[] = [{ id: 'color', question: 'Which colour?', options: [{ label: 'red' }, { label: 'blue' }] }]

async function boot(config?: unknown) {
  const ctx = new Context()
  await ctx.plugin(UserQuestionsService, config as never)
  return ctx
}

describe('ctx.userQuestions', () => {
  it('routes to the newest accepting answerer and normalises its answers', async () => {
    const ctx = await boot()
    ctx.userQuestions.registerAnswerer({ name: 'web', answer: () => ({ color: { selected: ['blue'] } }) })
    ctx.userQuestions.registerAnswerer({
      name: 'acp',
      accepts: (r) => r.sessionId === 'a',
      answer: () => ({ color: { selected: ['red', 'red'], text: '  ' } }),
    })
    expect(await ctx.userQuestions.ask(pick, { sessionId: 'a' })).toEqual({
      status: 'answered',
      answeredBy: 'acp',
      answers: { color: { selected: ['red'] } },
    })
    expect(await ctx.userQuestions.ask(pick, { sessionId: 'b' })).toEqual({
      status: 'answered',
      answeredBy: 'web',
      answers: { color: { selected: ['blue'] } },
    })
    expect(ctx.userQuestions.available('a')).toBe(true)
  })

  it('is unavailable without an answerer, with a failing one, with invalid answers, or when the answerer goes away', async () => {
    const ctx = await boot()
    expect(ctx.userQuestions.available()).toBe(false)
    expect(await ctx.userQuestions.ask(pick)).toEqual({
      status: 'unavailable',
      reason: 'no human is connected who can answer questions',
    })
    const off = ctx.userQuestions.registerAnswerer({ name: 'x', answer: () => Promise.reject(new Error('EPIPE')) })
    expect(await ctx.userQuestions.ask(pick)).toMatchObject({
      status: 'unavailable',
      reason: expect.stringContaining('EPIPE'),
    })
    off()
    const bad = ctx.userQuestions.registerAnswerer({
      name: 'y',
      answer: () => ({ color: { selected: ['red', 'blue'] } }),
    })
    expect(await ctx.userQuestions.ask(pick)).toMatchObject({
      status: 'unavailable',
      reason: expect.stringContaining('only one option'),
    })
    bad()
    const fiber = ctx.plugin({
      name: 'ch',
      inject: ['userQuestions'],
      apply: (c: Context) => void c.userQuestions.registerAnswerer({ name: 'ch', answer: () => new Promise(() => {}) }),
    })
    await fiber
    const pending = ctx.userQuestions.ask(pick, { sessionId: 's' })
    await new Promise((r) => setTimeout(r, 0))
    expect(ctx.userQuestions.pending({ sessionId: 's' })).toHaveLength(1)
    await fiber.dispose()
    expect(await pending).toMatchObject({ status: 'unavailable', reason: expect.stringContaining('went away') })
  })

  it('cancels on abort and times out when configured', async () => {
    const ctx = await boot({ timeoutMs: 20 })
    let seen: AbortSignal | undefined
    ctx.userQuestions.registerAnswerer({
      name: 'slow',
      answer: (_r, { signal }) => ((seen = signal), new Promise(() => {})),
    })
    const controller = new AbortController()
    const pending = ctx.userQuestions.ask(pick, { signal: controller.signal })
    controller.abort('turn cancelled')
    expect(await pending).toMatchObject({ status: 'cancelled' })
    expect(seen?.aborted).toBe(true)
    expect(await ctx.userQuestions.ask(pick)).toEqual({ status: 'unavailable', reason: 'no answer within 20 ms' })
  })

  it('emits asked/resolved and rejects malformed questions', async () => {
    const ctx = await boot()
    const events: string[] = []
    ctx.on('questions/asked', (r) => void events.push(`asked ${r.questions.length}`))
    ctx.on('questions/resolved', (_r, o: QuestionsOutcome) => void events.push(`resolved ${o.status}`))
    await ctx.userQuestions.ask(pick)
    expect(events).toEqual(['asked 1', 'resolved unavailable'])
    await expect(ctx.userQuestions.ask([])).rejects.toThrow(/non-empty array/)
    expect(checkQuestions([{ id: 'a', question: 'q', options: [{ label: 'x' }, { label: 'x' }] }])).toMatch(
      /used twice/,
    )
    expect(checkQuestions([{ id: 'a', question: ' ' }])).toMatch(/question must be a non-empty string/)
    expect(checkQuestions([{ id: 'a', question: 'q', multiSelect: 'yes' }])).toMatch(/multiSelect/)
  })
})
