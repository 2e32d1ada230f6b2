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
