import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, SCRIPTED_MODEL, type Harness } from '@dsh/agent-loop-testkit'
import * as Reminder from '../src/index.ts'
import { canonicalJson, reminderLevel } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const Probe = {
  name: 'probe',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register<{ q: string; opts?: object }>({
      name: 'probe',
      description: 'probe',
      parameters: { type: 'object', properties: { q: { type: 'string' }, opts: { type: 'object' } }, required: ['q'] },
      execute: (args) => ({ content: `answer to ${args.q}` }),
    })
    ctx.tools.register({
      name: 'other',
      description: 'other',
      parameters: { type: 'object', properties: {} },
      execute: () => ({ content: 'other' }),
    })
  },
}

type Result = { message: { content: { text: string }[] }; meta?: Record<string, unknown> }

async function run(steps: { name: string; arguments: object | string }[][], config: object = {}) {
  harness = await createHarness({
    script: [...steps.map((toolCalls) => ({ toolCalls })), { text: 'done' }],
    plugins: [[Probe], [Reminder, config]],
  })
  await harness.prompt('go')
  return harness.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data as Result)
}

const same = (n: number, args: object = { q: 'x' }) =>
  Array.from({ length: n }, () => [{ name: 'probe', arguments: args }])

describe('@dsh/repeat-tool-reminder', () => {
  it('attaches an escalating reminder at the configured run lengths, and nothing else changes', async () => {
    const results = await run(same(8))
    const texts = results.map((r) => r.message.content[0].text)
    expect(texts[0]).toBe('answer to x')
    expect(texts[1]).toBe('answer to x')
    expect(texts[2]).toMatch(
      /^answer to x\n\n\[Reminder from the harness: this is your 3rd consecutive call to probe with exactly the same arguments\. Its result is unlikely to change/,
    )
    expect(texts[3]).toBe('answer to x')
    expect(texts[4]).toMatch(/5th consecutive call.*Repeating it again will not help/)
    expect(texts[7]).toMatch(/8th consecutive call.*stuck in a loop/)
    expect(results[2].meta).toEqual({ repeatReminder: { run: 3, level: 1 } })
    // every call ran: the model saw 8 answers
    expect(harness!.model.requests).toHaveLength(9)
    const seen = JSON.stringify(harness!.model.requests[3].messages.at(-1))
    expect(seen).toContain('3rd consecutive call')
  })

  it('treats reordered keys as the same call and different arguments as a new run', async () => {
    const results = await run(
      [
        [{ name: 'probe', arguments: { q: 'x', opts: { a: 1, b: 2 } } }],
        [{ name: 'probe', arguments: { opts: { b: 2, a: 1 }, q: 'x' } }],
        [{ name: 'probe', arguments: { q: 'y' } }],
        [{ name: 'probe', arguments: { q: 'y' } }],
        [{ name: 'other', arguments: {} }],
        [{ name: 'probe', arguments: { q: 'y' } }],
        [{ name: 'probe', arguments: { q: 'y' } }],
      ],
      { thresholds: [2], repeatEvery: 0 },
    )
    const reminded = results.map((r) => r.message.content[0].text.includes('Reminder'))
    expect(reminded).toEqual([false, true, false, true, false, false, true])
  })

  it('counts each session on its own: two sessions repeating the same call do not share a run', async () => {
    // Turns alternate between two sessions, each calling probe {q:x} once per turn. Per session that
    // is a run of 1, then 2: only each session's own second call is reminded.
    const oneCall = [{ toolCalls: [{ name: 'probe', arguments: { q: 'x' } }] }, { text: 'done' }]
    harness = await createHarness({
      script: [...oneCall, ...oneCall, ...oneCall, ...oneCall],
      plugins: [[Probe], [Reminder, { thresholds: [2], repeatEvery: 0 }]],
    })
    const other = harness.ctx.agents.create({
      cwd: process.cwd(),
      model: { provider: harness.model.provider, model: SCRIPTED_MODEL },
    })
    try {
      expect(other.session.id).not.toBe(harness.session.id)
      const reminded = (agent: { session: Harness['session'] }) =>
        agent.session.events
          .filter((e) => e.type === 'tool/result')
          .map((e) => (e.data as Result).message.content[0].text.includes('Reminder'))
      await harness.prompt('first')
      await other.send('first')
      await harness.prompt('second')
      await other.send('second')
      expect(reminded(harness)).toEqual([false, true])
      expect(reminded(other)).toEqual([false, true])
    } finally {
      await other.dispose()
    }
  })

  it('counts calls of one step in call order', async () => {
    const results = await run([[0, 1, 2].map(() => ({ name: 'probe', arguments: { q: 'z' } }))], { thresholds: [3] })
    expect(results.map((r) => r.message.content[0].text.includes('3rd consecutive'))).toEqual([false, false, true])
  })

  it('keeps reminding every repeatEvery calls after the last threshold', async () => {
    expect(
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => reminderLevel(n, { thresholds: [3, 5], repeatEvery: 2 })),
    ).toEqual([0, 0, 1, 0, 2, 0, 2, 0, 2, 0])
    expect(reminderLevel(9, { thresholds: [3, 5], repeatEvery: 0 })).toBe(0)
  })

  it('canonicalJson sorts keys at every level and keeps array order', () => {
    expect(canonicalJson({ b: [2, { d: 1, c: 0 }], a: null })).toBe('{"a":null,"b":[2,{"c":0,"d":1}]}')
  })

  it('rejects a malformed config at load', async () => {
    await expect(createHarness({ plugins: [[Reminder, { thresholds: [1] }]] })).rejects.toThrow()
  })

  it('unloading stops the reminders', async () => {
    harness = await createHarness({
      script: [...same(3).map((toolCalls) => ({ toolCalls })), { text: 'done' }],
      plugins: [[Probe]],
    })
    const fiber = await harness.mount(Reminder, {})
    await fiber.dispose()
    await harness.prompt('go')
    const texts = harness.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => (e.data as Result).message.content[0].text)
    expect(texts.every((t) => t === 'answer to x')).toBe(true)
  })
})
