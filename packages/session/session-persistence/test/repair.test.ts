import { describe, expect, it } from 'vitest'
import { Session } from '@dsh/session'
import { REPAIR_TEXT, planRepair, summarize } from '../src/index.ts'
import { completeTurn, eventLog } from '../src/fixtures.ts'

const openCall = () => {
  const log = eventLog()
  completeTurn(log, 0)
  log.add('turn/start', { turn: 1 })
  log.add('step/start', { turn: 1, step: 0 })
  log.add('assistant/message', {
    message: { role: 'assistant', content: [{ type: 'tool-call', callId: 'a', name: 'bash', arguments: '{}' }] },
  })
  log.add('tool/call', { callId: 'a', name: 'bash', arguments: '{}' })
  return log
}

describe('planRepair', () => {
  it('leaves a finished log alone', () => {
    const log = eventLog()
    completeTurn(log, 0)
    expect(planRepair(log.session.events, 5)).toEqual({ append: [], repairs: [] })
  })

  it('closes an open turn as interrupted, after closing its open step', () => {
    const log = eventLog()
    log.add('turn/start', { turn: 0 })
    log.add('step/start', { turn: 0, step: 0 })
    const plan = planRepair(log.session.events, 42)
    expect(plan.append.map((e) => [e.seq, e.type, e.time])).toEqual([
      [2, 'step/end', 42],
      [3, 'turn/end', 42],
    ])
    expect(plan.append[1].data).toMatchObject({ reason: 'interrupted', turn: 0 })
    // The repaired log restores and is well-formed.
    const session = new Session({ cwd: '/w', events: [...log.session.events, ...plan.append] })
    expect(session.isTurnBoundary(session.length)).toBe(true)
  })

  it('answers a started orphaned call as outcome unknown', () => {
    const log = openCall()
    log.add('tool/started', { callId: 'a' })
    const plan = planRepair(log.session.events, 1)
    expect(plan.repairs[0]).toEqual({ kind: 'tool-result', callId: 'a', name: 'bash', outcome: 'unknown' })
    expect(plan.append[0].data).toMatchObject({
      message: { role: 'tool', callId: 'a', isError: true, content: [{ text: REPAIR_TEXT.unknown }] },
      error: { code: 'INTERRUPTED_UNKNOWN' },
    })
  })

  it('answers an unstarted call as never started when the log carries start markers', () => {
    const log = openCall()
    log.add('tool/call', { callId: 'b', name: 'read', arguments: '{}' })
    log.add('tool/started', { callId: 'a' })
    const plan = planRepair(log.session.events, 1)
    expect(plan.repairs.slice(0, 2)).toEqual([
      { kind: 'tool-result', callId: 'a', name: 'bash', outcome: 'unknown' },
      { kind: 'tool-result', callId: 'b', name: 'read', outcome: 'not-started' },
    ])
    expect(plan.append[1].data).toMatchObject({ error: { code: 'INTERRUPTED_NOT_STARTED' } })
  })

  it('cannot tell without markers and says so', () => {
    const plan = planRepair(openCall().session.events, 1)
    expect(plan.repairs[0]).toMatchObject({ outcome: 'unknown' })
    expect(plan.append[0].data).toMatchObject({ message: { content: [{ text: REPAIR_TEXT.unmarked }] } })
  })

  it('answers tool-call blocks of an assistant message that never got a tool/call event', () => {
    const log = eventLog()
    log.add('turn/start', { turn: 0 })
    log.add('assistant/message', {
      message: { role: 'assistant', content: [{ type: 'tool-call', callId: 'x', name: 'edit', arguments: '{}' }] },
    })
    const plan = planRepair(log.session.events, 1)
    expect(plan.repairs.map((r) => r.kind)).toEqual(['tool-result', 'turn-end'])
    const session = new Session({ cwd: '/w', events: [...log.session.events, ...plan.append] })
    expect(session.deriveMessages().map((m) => m.role)).toEqual(['assistant', 'tool'])
  })

  it('is pure: the same input gives the same plan and the input is untouched', () => {
    const events = openCall().session.events
    const before = JSON.stringify(events)
    expect(planRepair(events, 7)).toEqual(planRepair(events, 7))
    expect(JSON.stringify(events)).toBe(before)
  })
})

// Logs written before call identities (issue 43) may repeat a provider's call id; the repair pairs
// calls and results by log identity, so an earlier call's result never answers a later call.
describe('planRepair with repeated provider ids (a log from before call identities)', () => {
  type Log = ReturnType<typeof eventLog>
  const step = (log: Log, turn: number, n: number, calls: Array<[string, string]>, answered: boolean) => {
    log.add('step/start', { turn, step: n })
    log.add('assistant/message', {
      message: {
        role: 'assistant',
        content: calls.map(([callId, name]) => ({ type: 'tool-call' as const, callId, name, arguments: '{}' })),
      },
    })
    for (const [callId, name] of calls) log.add('tool/call', { callId, name, arguments: '{}' })
    for (const [callId] of calls) log.add('tool/started', { callId })
    if (!answered) return
    for (const [callId, name] of calls)
      log.add('tool/result', { message: { role: 'tool', callId, name, content: [{ type: 'text', text: 'ok' }] } })
    log.add('step/end', { turn, step: n })
  }
  const wellFormed = (log: Log, append: readonly unknown[]) => {
    const session = new Session({ cwd: '/w', events: [...log.session.events, ...(append as never[])] })
    const messages = session.deriveMessages()
    // Every assistant call is followed by exactly one result of its own.
    const calls = messages.flatMap((m) =>
      m.role === 'assistant' ? m.content.filter((b) => b.type === 'tool-call').map((b) => b.callId) : [],
    )
    const results = messages.flatMap((m) => (m.role === 'tool' ? [m.callId] : []))
    expect(results).toEqual(calls)
    expect(session.isTurnBoundary(session.length)).toBe(true)
  }

  it("answers the second turn's call_0_0 although the first turn's call_0_0 was answered", () => {
    const log = eventLog()
    log.add('turn/start', { turn: 0 })
    step(log, 0, 0, [['call_0_0', 'bash']], true)
    log.add('turn/end', { turn: 0, reason: 'completed' })
    log.add('turn/start', { turn: 1 })
    step(log, 1, 0, [['call_0_0', 'edit']], false)
    const plan = planRepair(log.session.events, 9)
    expect(plan.repairs).toEqual([
      { kind: 'tool-result', callId: 'call_0_0', name: 'edit', outcome: 'unknown' },
      { kind: 'step-end', turn: 1, step: 0 },
      { kind: 'turn-end', turn: 1 },
    ])
    wellFormed(log, plan.append)
  })

  it("a provider that sends no ids: every step's first call is call_0", () => {
    const log = eventLog()
    log.add('turn/start', { turn: 0 })
    step(
      log,
      0,
      0,
      [
        ['call_0', 'bash'],
        ['call_1', 'read'],
      ],
      true,
    )
    // The second step: call_0 again; it started, call_1 did not get to start.
    log.add('step/start', { turn: 0, step: 1 })
    log.add('assistant/message', {
      message: {
        role: 'assistant',
        content: [
          { type: 'tool-call', callId: 'call_0', name: 'grep', arguments: '{}' },
          { type: 'tool-call', callId: 'call_1', name: 'glob', arguments: '{}' },
        ],
      },
    })
    log.add('tool/call', { callId: 'call_0', name: 'grep', arguments: '{}' })
    log.add('tool/call', { callId: 'call_1', name: 'glob', arguments: '{}' })
    log.add('tool/started', { callId: 'call_0' })
    const plan = planRepair(log.session.events, 9)
    expect(plan.repairs.filter((r) => r.kind === 'tool-result')).toEqual([
      { kind: 'tool-result', callId: 'call_0', name: 'grep', outcome: 'unknown' },
      { kind: 'tool-result', callId: 'call_1', name: 'glob', outcome: 'not-started' },
    ])
    wellFormed(log, plan.append)
  })

  it('parallel calls with one empty id are answered one by one, in call order', () => {
    const log = eventLog()
    log.add('turn/start', { turn: 0 })
    step(
      log,
      0,
      0,
      [
        ['', 'bash'],
        ['', 'read'],
        ['', 'grep'],
      ],
      false,
    )
    // Only the first of the three got its result before the crash.
    log.add('tool/result', {
      message: { role: 'tool', callId: '', name: 'bash', content: [{ type: 'text', text: 'ok' }] },
    })
    const plan = planRepair(log.session.events, 9)
    expect(plan.repairs.filter((r) => r.kind === 'tool-result').map((r) => r.kind === 'tool-result' && r.name)).toEqual(
      ['read', 'grep'],
    )
    wellFormed(log, plan.append)
  })

  it('a log with unique identities (written by the current loop) needs nothing more', () => {
    const log = eventLog()
    log.add('turn/start', { turn: 0 })
    step(log, 0, 0, [['call_0_0', 'bash']], true)
    log.add('turn/end', { turn: 0, reason: 'completed' })
    log.add('turn/start', { turn: 1 })
    step(log, 1, 0, [['call_0_0-2', 'bash']], true)
    log.add('turn/end', { turn: 1, reason: 'completed' })
    expect(planRepair(log.session.events, 9)).toEqual({ append: [], repairs: [] })
  })
})

describe('summarize', () => {
  it('takes the latest title, the first human prompt and counts turns', () => {
    const log = eventLog('/w')
    log.add('user/message', { content: [{ type: 'text', text: 'context' }], source: { kind: 'plugin', plugin: 'x' } })
    completeTurn(log, 0, 'x'.repeat(300))
    log.add('session/title', { title: 'One', source: 't' })
    log.add('session/title', { title: 'Two', source: 't' })
    const row = summarize({ version: 1, id: log.session.id, cwd: '/w', createdAt: 1 }, log.session.events)
    expect(row).toMatchObject({ title: 'Two', turns: 1, events: log.session.length })
    expect(row.firstPrompt?.length).toBe(200)
  })
})
