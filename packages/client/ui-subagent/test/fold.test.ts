// The log fold and the host answer, over logs shaped like the subagent seam writes them.
import { describe, expect, it } from 'vitest'
import {
  durationOf,
  foldSubagents,
  formatDuration,
  formatTokens,
  openIds,
  resolveOpen,
  SubagentFold,
  tokensOf,
} from '../src/fold.ts'
import { en, zh } from '../src/client/strings.ts'
import type { WireSubagent } from '../src/contract.ts'

const usage = { input: 100, output: 20, cacheRead: 1000, cacheWrite: 0, reasoning: 5 }
let seq = 0
const ev = (type: string, time: number, data: unknown) => ({ seq: seq++, type, time, data })
const LOG = [
  ev('turn/start', 1, { turn: 0 }),
  ev('subagent/started', 10, {
    id: 'sub-1',
    provider: 'spawn',
    description: 'one',
    depth: 1,
    background: false,
    callId: 'c1',
    sessionId: 's-1',
  }),
  ev('subagent/started', 20, {
    id: 'sub-2',
    provider: 'acp',
    description: 'two',
    depth: 1,
    background: true,
    callId: 'c2',
  }),
  ev('subagent/report', 25, { id: 'sub-2', message: 'halfway' }),
  ev('subagent/finished', 1510, { id: 'sub-1', status: 'completed', text: 'answer', usage }),
  ev('subagent/started', 30, { id: 'sub-3', provider: 'spawn', description: 'three', depth: 1, background: false }),
  ev('subagent/finished', 40, {
    id: 'sub-3',
    status: 'failed',
    text: '',
    error: { code: 'CHILD_ERROR', message: 'boom' },
  }),
  // Noise: a report of an unknown child, an event without an id, a bogus status.
  ev('subagent/report', 50, { id: 'sub-9', message: 'nobody' }),
  ev('subagent/finished', 50, {}),
  ev('subagent/started', 60, { id: 'sub-4', provider: 'fork', description: 'four', depth: 1, background: true }),
  ev('subagent/finished', 70, { id: 'sub-4', status: 'exploded', text: '' }),
]

describe('foldSubagents', () => {
  it('folds started, report and finished into one node per child, in start order', () => {
    const nodes = foldSubagents(LOG)
    expect(nodes.map((n) => [n.id, n.status, n.provider, n.background])).toEqual([
      ['sub-1', 'completed', 'spawn', false],
      ['sub-2', 'running', 'acp', true],
      ['sub-3', 'failed', 'spawn', false],
      ['sub-4', 'failed', 'fork', true],
    ])
    expect(nodes[0]).toMatchObject({
      callId: 'c1',
      sessionId: 's-1',
      startedAt: 10,
      finishedAt: 1510,
      text: 'answer',
      usage,
    })
    expect(nodes[1].reports).toEqual(['halfway'])
    expect(nodes[2].error).toEqual({ code: 'CHILD_ERROR', message: 'boom' })
    expect(openIds(nodes)).toEqual(['sub-2'])
  })

  it('is incremental: the same array while nothing changed, a new one when something did, a refold on a shorter log', () => {
    const fold = new SubagentFold()
    const events = LOG.slice(0, 3)
    const first = fold.update(events)
    expect(first.map((n) => n.id)).toEqual(['sub-1', 'sub-2'])
    events.push(ev('turn/end', 99, {}))
    expect(fold.update(events)).toBe(first)
    events.push(LOG[3])
    const second = fold.update(events)
    expect(second).not.toBe(first)
    expect(second[1].reports).toEqual(['halfway'])
    expect(first[1].reports).toEqual([])
    expect(fold.update(LOG.slice(0, 2)).map((n) => n.id)).toEqual(['sub-1'])
  })
})

describe('resolveOpen', () => {
  const nodes = foldSubagents(LOG)
  const wire = (id: string, status: WireSubagent['status'], extra: Partial<WireSubagent> = {}): WireSubagent => ({
    id,
    provider: 'acp',
    description: '',
    depth: 1,
    background: true,
    status,
    startedAt: 20,
    ...extra,
  })

  it('a child open in the log that the host does not run is interrupted; one it runs stays running', () => {
    expect(resolveOpen(nodes, [])[1].status).toBe('interrupted')
    expect(resolveOpen(nodes, [wire('sub-2', 'interrupted')])[1].status).toBe('interrupted')
    expect(resolveOpen(nodes, [wire('sub-2', 'running')])).toBe(nodes)
    expect(resolveOpen(nodes, [wire('sub-2', 'cancelled', { finishedAt: 90 })])[1]).toMatchObject({
      status: 'cancelled',
      finishedAt: 90,
    })
  })

  it('finished children keep the log; no answer changes nothing; a child started after the question is not judged', () => {
    expect(resolveOpen(nodes, [wire('sub-1', 'interrupted')])[0].status).toBe('completed')
    expect(resolveOpen(nodes, undefined)).toBe(nodes)
    expect(resolveOpen(nodes, [], new Set(['sub-1']))).toBe(nodes)
    expect(resolveOpen(nodes, [], new Set(['sub-2']))[1].status).toBe('interrupted')
  })
})

describe('figures', () => {
  it('duration, tokens and their formats', () => {
    const [done, running, failed] = foldSubagents(LOG)
    expect(durationOf(done, 99_999)).toBe(1500)
    expect(durationOf(running, 2020)).toBe(2000)
    expect(durationOf(failed, 99_999)).toBe(10)
    expect(durationOf({ ...running, startedAt: undefined }, 5)).toBeUndefined()
    expect(tokensOf(done)).toBe(1125)
    expect(tokensOf(running)).toBeUndefined()
    expect(formatDuration(1500)).toBe('1.5 s')
    expect(formatDuration(340)).toBe('340 ms')
    expect(formatDuration(125_000)).toBe('2 min 5 s')
    expect(formatTokens(1125)).toBe('1.1k')
    expect(formatTokens(999)).toBe('999')
    expect(formatTokens(2_500_000)).toBe('2.5M')
  })

  it('Chinese covers every English key', () => {
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort())
  })
})
