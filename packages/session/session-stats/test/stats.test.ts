import { describe, expect, it } from 'vitest'
import { createHarness } from '@dsh/agent-loop-testkit'
import { Session } from '@dsh/session'
import SessionProjections from '@dsh/session-projection'
import * as SessionStats from '@dsh/session-stats'
import SessionTitleService from '@dsh/session-title'
import { costOf, priceOf, statsOf, type SessionStats as Stats } from '@dsh/session-stats'

const usage = [
  { input: 100, output: 20, cacheRead: 30, cacheWrite: 5, reasoning: 3 },
  { input: 7, output: 11, cacheRead: 130, cacheWrite: 0, reasoning: 0 },
  { input: 9, output: 40, cacheRead: 141, cacheWrite: 2, reasoning: 1 },
]

async function threeStepTurn(prices: SessionStats.ModelPrice[] = []) {
  const h = await createHarness({
    script: [
      { toolCalls: [{ name: 'echo', arguments: { text: 'a' } }], usage: usage[0] },
      {
        toolCalls: [
          { name: 'echo', arguments: { text: 'b' } },
          { name: 'fail', arguments: {} },
        ],
        usage: usage[1],
      },
      { text: 'done', usage: usage[2] },
    ],
    plugins: [[SessionProjections], [SessionStats, { prices }]],
  })
  h.ctx.tools.register<{ text: string }>({
    name: 'echo',
    description: 'echo',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    execute: (a) => ({ content: a.text }),
  })
  h.ctx.tools.register({
    name: 'fail',
    description: 'fails',
    parameters: { type: 'object', properties: {} },
    execute: () => ({ content: 'no', isError: true, error: { code: 'X', message: 'no' } }),
  })
  const result = await h.prompt('go')
  expect(result.reason).toBe('completed')
  return h
}

describe('sessionStats', () => {
  it('a scripted 3-step turn: steps, calls and tokens match the script exactly, per session and per turn', async () => {
    const h = await threeStepTurn()
    try {
      const stats = h.ctx.sessionProjections.snapshot(h.session.id)!.sessionStats as Stats
      const sum = (k: keyof (typeof usage)[0]) => usage.reduce((a, u) => a + u[k], 0)
      expect(stats).toMatchObject({
        turns: 1,
        steps: 3,
        modelCalls: 3,
        usageReported: 3,
        unpricedCalls: 3,
        model: { provider: 'scripted', model: 'scripted-1' },
      })
      expect(stats.tokens).toEqual({
        input: sum('input'),
        output: sum('output'),
        cacheRead: sum('cacheRead'),
        cacheWrite: sum('cacheWrite'),
        reasoning: sum('reasoning'),
      })
      expect(stats.cost).toBeUndefined()
      expect(stats.tools.echo).toMatchObject({ calls: 2, errors: 0 })
      expect(stats.tools.fail).toMatchObject({ calls: 1, errors: 1 })
      expect(stats.firstTokenCalls).toBe(3)
      for (const k of ['firstTokenMs', 'decodeMs', 'modelMs', 'toolMs'] as const)
        expect(stats[k]).toBeGreaterThanOrEqual(0)
      expect(stats.modelMs).toBeGreaterThanOrEqual(stats.firstTokenMs + stats.decodeMs)
      expect(stats.perTurn).toHaveLength(1)
      expect(stats.perTurn[0]).toMatchObject({
        turn: stats.perTurn[0].turn,
        steps: 3,
        modelCalls: 3,
        tokens: stats.tokens,
        reason: 'completed',
      })
      // The same figures from the log alone.
      expect(statsOf(h.session.events)).toEqual(stats)
    } finally {
      await h.dispose()
    }
  })

  it('prices give a cost; a model without a price is counted as unpriced', async () => {
    const price = { model: 'scripted-1', input: 1, output: 2, cacheRead: 0.5, currency: 'USD' }
    const h = await threeStepTurn([price])
    try {
      const stats = h.ctx.sessionProjections.snapshot(h.session.id)!.sessionStats as Stats
      const expected = usage.reduce((a, u) => a + costOf(u, price), 0)
      expect(stats.cost).toBeCloseTo(expected, 12)
      expect(stats.currency).toBe('USD')
      expect(stats.unpricedCalls).toBe(0)
    } finally {
      await h.dispose()
    }
    expect(
      priceOf(
        [
          { model: 'm', input: 1, output: 1 },
          { provider: 'p', model: 'm', input: 9, output: 9 },
        ],
        'p',
        'm',
      )?.input,
    ).toBe(9)
    expect(priceOf([{ model: 'm', input: 1, output: 1 }], 'q', 'm')?.input).toBe(1)
    expect(priceOf([{ model: 'm', input: 1, output: 1 }], 'q', 'other')).toBeUndefined()
    expect(
      costOf(
        { input: 1_000_000, output: 0, cacheRead: 1_000_000, cacheWrite: 0, reasoning: 0 },
        { model: 'm', input: 2, output: 0 },
      ),
    ).toBe(4)
  })

  it('times come from event stamps: first token, decode and tool time', () => {
    let t = 0
    const s = new Session({ cwd: '/', clock: () => t })
    const at = (time: number, f: () => void) => {
      t = time
      f()
    }
    at(0, () => s.append('turn/start', { turn: 0 }))
    at(10, () => s.append('step/start', { turn: 0, step: 0 }))
    at(40, () => s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: 'x' } }))
    at(100, () =>
      s.append('assistant/message', {
        message: { role: 'assistant', content: [{ type: 'tool-call', callId: 'c', name: 'bash', arguments: '{}' }] },
        usage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
      }),
    )
    at(101, () => s.append('tool/call', { callId: 'c', name: 'bash', arguments: '{}' }))
    at(150, () => s.append('tool/started', { callId: 'c' }))
    at(400, () =>
      s.append('tool/result', {
        message: { role: 'tool', callId: 'c', name: 'bash', content: [{ type: 'text', text: 'ok' }] },
      }),
    )
    at(401, () => s.append('step/end', { turn: 0, step: 0 }))
    at(402, () => s.append('turn/end', { turn: 0, reason: 'completed' }))
    const stats = statsOf(s.events)
    expect(stats).toMatchObject({
      firstTokenMs: 30,
      decodeMs: 60,
      modelMs: 90,
      toolMs: 250,
      tools: { bash: { calls: 1, ms: 250, errors: 0 } },
    })
    expect(stats.perTurn[0]).toMatchObject({ startedAt: 0, endedAt: 402, reason: 'completed', toolMs: 250 })
  })

  it('a title request is counted apart from the turns and in the session totals, priced by its own model', async () => {
    const turnUsage = { input: 400, output: 30, cacheRead: 100, cacheWrite: 0, reasoning: 2 }
    const titleUsage = { input: 61, output: 6, cacheRead: 12, cacheWrite: 0, reasoning: 0 }
    const prices = [
      { model: 'scripted-1', input: 1, output: 2, currency: 'USD' },
      { provider: 'titles', model: 'title-m', input: 10, output: 20, currency: 'USD' },
    ]
    const h = await createHarness({
      script: [{ text: 'done', usage: turnUsage }],
      plugins: [[SessionTitleService], [SessionProjections], [SessionStats, { prices }]],
    })
    try {
      // Answers at once, so its usage lands while the turn is still open.
      h.ctx.sessionTitle.registerProvider({
        name: 'llm',
        cadence: 'first-prompt',
        generate: async () => ({ title: 'Short title', usage: titleUsage, provider: 'titles', model: 'title-m' }),
      })
      expect((await h.prompt('name this session')).reason).toBe('completed')
      await h.ctx.sessionTitle.settled(h.session.id)
      const types = h.session.events.map((e) => e.type)
      expect(types.indexOf('title/usage')).toBeLessThan(types.indexOf('turn/end'))
      const stats = h.ctx.sessionProjections.snapshot(h.session.id)!.sessionStats as Stats
      const both = Object.fromEntries(
        Object.keys(turnUsage).map((k) => [
          k,
          turnUsage[k as keyof typeof turnUsage] + titleUsage[k as keyof typeof titleUsage],
        ]),
      )
      expect(stats.titleCalls).toEqual({
        calls: 1,
        usageReported: 1,
        tokens: titleUsage,
        unpricedCalls: 0,
        cost: costOf(titleUsage, prices[1]),
        currency: 'USD',
      })
      expect(stats).toMatchObject({
        turns: 1,
        steps: 1,
        modelCalls: 2,
        usageReported: 2,
        tokens: both,
        unpricedCalls: 0,
      })
      expect(stats.cost).toBeCloseTo(costOf(turnUsage, prices[0]) + costOf(titleUsage, prices[1]), 12)
      expect(stats.perTurn[0]).toMatchObject({ modelCalls: 1, tokens: turnUsage })
      expect(stats.perTurn[0].cost).toBeCloseTo(costOf(turnUsage, prices[0]), 12)
      expect(statsOf(h.session.events, prices)).toEqual(stats)
      // Without a price for the title model the call is unpriced.
      expect(statsOf(h.session.events, [prices[0]])).toMatchObject({
        unpricedCalls: 1,
        titleCalls: { unpricedCalls: 1 },
      })
    } finally {
      await h.dispose()
    }
  })

  it('changing prices changes the unit version (cached figures are rebuilt); the state carries no price table', () => {
    expect(SessionStats.statsUnit([]).version).not.toBe(
      SessionStats.statsUnit([{ model: 'm', input: 1, output: 1 }]).version,
    )
    const unit = SessionStats.statsUnit([{ model: 'm', input: 1, output: 1 }])
    expect(JSON.stringify(unit.init())).not.toContain('"input":1')
  })
})
