// measureNextRequest keeps the surface's token total per (estimator, surface) and extends it by the
// nodes appended since the last call (issue 42: the pruner and compaction measure before every
// step). These tests check the total against a fresh sum after appends, same-length and shrinking
// rewrites, a fork and a mutable message, and that a step reads only the new nodes.
import { expect, it } from 'vitest'
import { Session, type SurfaceNode } from '@dsh/session'
import { measureNextRequest, nodesTokens, surfaceTokens } from '../src/index.ts'

const text = (t: string) => [{ type: 'text' as const, text: t }]
const fresh = (session: Session, estimate: (t: string) => number) => nodesTokens(session.surface.nodes, estimate)

function step(session: Session, i: number): void {
  session.append('assistant/message', {
    message: { role: 'assistant', content: [{ type: 'tool-call', callId: `c${i}`, name: 'read', arguments: '{}' }] },
  })
  session.append('tool/call', { callId: `c${i}`, name: 'read', arguments: '{}' })
  session.append('tool/result', {
    message: { role: 'tool', callId: `c${i}`, name: 'read', content: text(`result ${i} `.repeat(1 + (i % 7))) },
  })
}

it('equals a fresh sum after appends, rewrites of the same length, shrinking rewrites and forks', () => {
  const estimate = (t: string) => Math.ceil(t.length / 4)
  const s = new Session({ cwd: '/' })
  s.append('request/header', { provider: 'p', model: 'm', system: 'S'.repeat(40), tools: [] })
  s.append('user/message', { content: text('the task'), source: { kind: 'human' } })
  for (let i = 0; i < 20; i++) {
    step(s, i)
    expect(surfaceTokens(s, estimate)).toBe(fresh(s, estimate))
  }
  // A rewrite that keeps the node count (a pruned result): the total must not be the old one.
  const result = s.surface.nodes.find((n: SurfaceNode) => n.kind === 'tool/result')!
  s.surface.replaceRange(result.seq, result.seq + 1, [
    { role: 'tool', callId: 'c0', name: 'read', content: text('x'.repeat(400)) },
  ])
  expect(s.surface.nodes.length).toBe(41)
  expect(surfaceTokens(s, estimate)).toBe(fresh(s, estimate))
  // A compaction: the surface shrinks, then grows past its old length again.
  s.surface.replaceRange(2, s.length, [{ role: 'user', content: text('summary') }])
  expect(surfaceTokens(s, estimate)).toBe(fresh(s, estimate))
  for (let i = 20; i < 60; i++) step(s, i)
  expect(surfaceTokens(s, estimate)).toBe(fresh(s, estimate))
  // A fork shares the frozen events but has its own surface; it is measured on its own.
  const fork = new Session({ cwd: '/', events: s.slice(0, 30) })
  expect(surfaceTokens(fork, estimate)).toBe(fresh(fork, estimate))
  expect(surfaceTokens(s, estimate)).toBe(fresh(s, estimate))
  // Another estimator has its own totals.
  const double = (t: string) => t.length
  expect(surfaceTokens(s, double)).toBe(fresh(s, double))
  // The whole measure agrees with the header + a fresh sum.
  expect(measureNextRequest(s, { estimate })).toBe(10 + fresh(s, estimate))
})

it('reads only the nodes appended since the last measure', () => {
  const estimate = (t: string) => Math.ceil(t.length / 4)
  const s = new Session({ cwd: '/' })
  s.append('user/message', { content: text('the task'), source: { kind: 'human' } })
  for (let i = 0; i < 500; i++) step(s, i)
  surfaceTokens(s, estimate)
  // Count the surface nodes read by index from here on.
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
  expect(measureNextRequest(s, { estimate })).toBe(nodesTokens(live, estimate))
  expect([...read].sort((a, b) => a - b)).toEqual([1001, 1002])
  // A rewrite invalidates the total: the next measure reads every node once.
  s.surface.replaceRange(1, 4, [{ role: 'user', content: text('summary') }])
  read.clear()
  expect(measureNextRequest(s, { estimate })).toBe(nodesTokens(live, estimate))
  expect(read.size).toBe(live.length)
})

it('does not keep a total over a message that can still change', () => {
  const estimate = (t: string) => Math.ceil(t.length / 4)
  const s = new Session({ cwd: '/' })
  s.append('user/message', { content: text('hello'), source: { kind: 'human' } })
  const mutable = { role: 'user' as const, content: text('a'.repeat(40)) }
  const nodes = [...s.surface.nodes, { seq: 1, kind: 'user/message' as const, message: mutable }]
  Object.defineProperty(s.surface, 'nodes', { get: () => nodes, configurable: true })
  expect(surfaceTokens(s, estimate)).toBe(fresh(s, estimate))
  mutable.content = text('a'.repeat(400))
  expect(surfaceTokens(s, estimate)).toBe(fresh(s, estimate))
})
