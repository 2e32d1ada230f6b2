// The trajectory fold over a hand-written log: rows per request, TTFT, latency, tool durations,
// totals, cost only where a price is known, and odd logs (no turn, no result, no usage).
import { describe, expect, it } from 'vitest'
import { buildTrajectory, costOf, formatMs, priceOf, turnRange, type LogEvent } from '../src/model.ts'

let seq = 0
const ev = (time: number, type: string, data: unknown): LogEvent => ({ seq: seq++, type, time, data })
const usage = (input: number, output: number, cacheRead = 0, reasoning = 0) => ({
  input,
  output,
  cacheRead,
  cacheWrite: 0,
  reasoning,
})

const LOG: LogEvent[] = [
  ev(1000, 'turn/start', { turn: 1 }),
  ev(1000, 'step/start', { turn: 1, step: 1 }),
  ev(1001, 'request/header', { provider: 'deepseek-official', model: 'deepseek-v4-flash', system: '', tools: [] }),
  ev(1300, 'assistant/chunk', { chunk: { kind: 'text-delta', text: 'a' } }),
  ev(1400, 'assistant/chunk', { chunk: { kind: 'text-delta', text: 'b' } }),
  ev(1500, 'assistant/message', { message: { role: 'assistant', content: [] }, usage: usage(100, 20, 1000, 5) }),
  ev(1510, 'tool/call', { callId: 'c1', name: 'bash', arguments: '{}' }),
  ev(1810, 'tool/result', { message: { role: 'tool', callId: 'c1', name: 'bash', content: [], isError: true } }),
  ev(1811, 'step/end', { turn: 1, step: 1, finish: 'tool-calls' }),
  ev(1820, 'step/start', { turn: 1, step: 2 }),
  ev(1900, 'assistant/chunk', { chunk: { kind: 'text-delta', text: 'c' } }),
  ev(2000, 'assistant/message', { message: { role: 'assistant', content: [] }, usage: usage(50, 10) }),
  ev(2001, 'step/end', { turn: 1, step: 2, finish: 'stop' }),
  ev(2002, 'turn/end', { turn: 1, reason: 'completed' }),
]

describe('buildTrajectory', () => {
  it('one row per request with tokens, TTFT, latency and tool durations', () => {
    const { turns, totals } = buildTrajectory(LOG)
    expect(turns).toHaveLength(1)
    expect(turns[0]).toMatchObject({ turn: 1, start: 1000, end: 2002, reason: 'completed' })
    const [a, b] = turns[0].requests
    expect(a).toMatchObject({
      step: 1,
      provider: 'deepseek-official',
      model: 'deepseek-v4-flash',
      ttftMs: 300,
      latencyMs: 500,
      usage: usage(100, 20, 1000, 5),
      finish: 'tool-calls',
    })
    expect(a.tools).toEqual([{ callId: 'c1', name: 'bash', start: 1510, end: 1810, durationMs: 300, isError: true }])
    expect(b).toMatchObject({ step: 2, model: 'deepseek-v4-flash', ttftMs: 80, latencyMs: 180, tools: [] })
    expect(totals).toMatchObject({
      requests: 2,
      toolCalls: 1,
      input: 150,
      output: 30,
      cacheRead: 1000,
      reasoning: 5,
      latencyMs: 680,
      toolMs: 300,
      cost: 0,
      unpriced: 2,
    })
    expect(turnRange(turns[0])).toEqual({ start: 1000, end: 2002 })
  })

  it('costs only requests whose model has a price (provider/model first, then the bare model)', () => {
    const price = { input: 2, output: 8, cacheRead: 0.5 }
    const { turns, totals } = buildTrajectory(LOG, { 'deepseek-v4-flash': price })
    expect(turns[0].requests[0].cost).toBeCloseTo((100 * 2 + 1000 * 0.5 + 25 * 8) / 1e6, 12)
    expect(totals.unpriced).toBe(0)
    expect(totals.cost).toBeCloseTo(costOf(usage(100, 20, 1000, 5), price) + costOf(usage(50, 10), price), 12)
    expect(priceOf({ 'p/m': { input: 1, output: 1 }, m: { input: 9, output: 9 } }, 'p', 'm')?.input).toBe(1)
    expect(priceOf({ m: { input: 9, output: 9 } }, 'other', 'm')?.input).toBe(9)
    expect(buildTrajectory(LOG, { 'other-model': price }).totals.unpriced).toBe(2)
  })

  it('a running turn, a call without a result and a step outside a turn are kept, not invented', () => {
    const { turns, totals } = buildTrajectory([
      ev(10, 'step/start', { turn: 3, step: 1 }),
      ev(20, 'assistant/message', { message: { role: 'assistant', content: [] }, interrupted: true }),
      ev(30, 'tool/call', { callId: 'x', name: 'read', arguments: '{}' }),
      ev(40, 'tool/result', { message: { role: 'tool', callId: 'unknown', name: 'read', content: [] } }),
      ev(50, 'turn/start', { turn: 4 }),
      ev(60, 'step/start', { turn: 4, step: 1 }),
      ev(70, 'assistant/chunk', { chunk: { kind: 'text-delta', text: 'x' } }),
    ])
    expect(turns.map((t) => t.turn)).toEqual([3, 4])
    expect(turns[0].requests[0]).toMatchObject({
      interrupted: true,
      latencyMs: 10,
      tools: [{ callId: 'x', name: 'read', start: 30 }],
    })
    expect(turns[0].requests[0].tools[0].durationMs).toBeUndefined()
    expect(turns[0].requests[0].ttftMs).toBeUndefined()
    expect(turns[1].end).toBeUndefined()
    expect(turns[1].requests[0].latencyMs).toBeUndefined()
    expect(turnRange(turns[1])).toEqual({ start: 50, end: 70 })
    expect(totals).toMatchObject({ requests: 2, toolCalls: 1, toolMs: 0, unpriced: 0 })
    expect(buildTrajectory([]).turns).toEqual([])
  })

  it('formats durations', () => {
    expect([formatMs(undefined), formatMs(12.4), formatMs(1500), formatMs(12_500), formatMs(125_000)]).toEqual([
      '–',
      '12 ms',
      '1.50 s',
      '12.5 s',
      '2 m 5 s',
    ])
  })
})
