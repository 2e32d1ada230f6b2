// prune() remembers, per surface, which results it has already looked at and which of them are
// prunable, and checks only the nodes that left the recent budget since (issue 42). These tests
// compare it with a fresh scan (a fork: another surface) after appends, a larger recent budget, a
// rewrite in the middle and its own pruning, and count the nodes a step reads.
import { afterAll, beforeAll, expect, it } from 'vitest'
import TokenMeter from '@dsh/token-meter'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { Session, deriveMessagesFromEvents } from '@dsh/session'
import ToolResultPruner from '../src/index.ts'

let h: Harness
let pruner: ToolResultPruner
beforeAll(async () => {
  h = await createHarness({
    plugins: [
      [TokenMeter],
      [ToolResultPruner, { maxResultTokens: 100, headChars: 40, tailChars: 40, keepRecentTokens: 300 }],
    ],
  })
  pruner = h.ctx.toolResultPruner as ToolResultPruner
})
afterAll(async () => {
  await h?.dispose()
})

const NEVER = Number.MAX_SAFE_INTEGER

/** One step: a call and its result; every third result is large (prunable), the rest small. */
function step(session: Session, i: number): void {
  const callId = `c${i}`
  session.append('assistant/message', {
    message: { role: 'assistant', content: [{ type: 'tool-call', callId, name: 'read', arguments: '{}' }] },
  })
  session.append('tool/call', { callId, name: 'read', arguments: '{}' })
  const text = i % 3 === 0 ? `big ${i} ${'x'.repeat(1_000)}` : `small ${i}`
  session.append('tool/result', { message: { role: 'tool', callId, name: 'read', content: [{ type: 'text', text }] } })
}

const fork = (session: Session) => new Session({ cwd: '/', events: session.slice() })
const history = (session: Session) => JSON.stringify(deriveMessagesFromEvents(session.events))

it('finds what a fresh scan finds after appends, a larger recent budget, a rewrite and its own pruning', () => {
  const s = new Session({ cwd: '/' })
  s.append('user/message', { content: [{ type: 'text', text: 'task' }], source: { kind: 'human' } })
  for (let i = 0; i < 30; i++) {
    step(s, i)
    // Below the batch minimum: nothing is rewritten, but the scan is kept.
    expect(pruner.prune(s, { minSavedTokens: NEVER })).toEqual({ pruned: 0, savedTokens: 0 })
  }
  // A larger recent budget than the kept scan: its recent targets are left out.
  const wide = fork(s)
  expect(pruner.prune(s, { keepRecentTokens: 3_000, minSavedTokens: 0 })).toEqual(
    pruner.prune(wide, { keepRecentTokens: 3_000, minSavedTokens: 0 }),
  )
  expect(history(s)).toBe(history(wide))
  // A rewrite in the middle (a compaction-like summary), then more steps.
  const nodes = s.surface.nodes
  s.surface.replaceRange(nodes[1].seq, nodes[20].seq, [{ role: 'user', content: [{ type: 'text', text: 'summary' }] }])
  for (let i = 30; i < 60; i++) {
    step(s, i)
    pruner.prune(s, { minSavedTokens: NEVER })
  }
  const reference = fork(s)
  const fresh = pruner.prune(reference, { minSavedTokens: 0 })
  expect(fresh.pruned).toBeGreaterThan(5)
  expect(pruner.prune(s, { minSavedTokens: 0 })).toEqual(fresh)
  expect(history(s)).toBe(history(reference))
  // After its own pruning nothing is left to prune, on either.
  step(s, 60)
  step(reference, 60)
  expect(pruner.prune(s, { minSavedTokens: 0 })).toEqual(pruner.prune(reference, { minSavedTokens: 0 }))
  expect(history(s)).toBe(history(reference))
})

it('reads only the recent nodes and the ones that left the recent budget since the last scan', () => {
  const s = new Session({ cwd: '/' })
  s.append('user/message', { content: [{ type: 'text', text: 'task' }], source: { kind: 'human' } })
  for (let i = 0; i < 500; i++) step(s, i)
  pruner.prune(s, { minSavedTokens: NEVER })
  const live = s.surface.nodes
  const read = new Set<number>()
  const counting = new Proxy(live, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) read.add(Number(key))
      return Reflect.get(target, key, receiver)
    },
  })
  Object.defineProperty(s.surface, 'nodes', { get: () => counting, configurable: true })
  step(s, 500)
  expect(pruner.prune(s, { minSavedTokens: NEVER })).toEqual({ pruned: 0, savedTokens: 0 })
  // 1,003 nodes; the recent budget (300 tokens) holds a handful of them.
  expect(live.length).toBe(1_003)
  expect(read.size).toBeLessThan(30)
  expect(Math.min(...read)).toBeGreaterThan(970)
})
