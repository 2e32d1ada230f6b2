import { afterEach, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { Session, type SessionEvent } from '@dsh/session'
import {
  CompactionEngine,
  measureNextRequest,
  messageTokens,
  pinnedHeadLength,
  type CompactOptions,
  type CompactionResult,
} from '../src/index.ts'

const harnesses: Harness[] = []
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.dispose()
})

const estimate = (text: string) => Math.ceil(text.length / 4)
const text = (t: string) => [{ type: 'text' as const, text: t }]

/** A backend that records the order runs start and end in. */
class RecordingEngine extends CompactionEngine {
  static inject = ['sessions']
  readonly order: string[] = []
  private release: Array<() => void> = []
  constructor(ctx: Context) {
    super(ctx, 'recording')
  }
  protected async run(_session: Session, options: CompactOptions): Promise<CompactionResult> {
    this.order.push(`start ${options.focus}`)
    await new Promise<void>((r) => this.release.push(r))
    this.order.push(`end ${options.focus}`)
    return { status: 'skipped', reason: options.focus ?? '' }
  }
  next() {
    this.release.shift()?.()
  }
}

it('runs compactions of one session one at a time, in call order', async () => {
  const h = await createHarness({ plugins: [[RecordingEngine]] })
  harnesses.push(h)
  const engine = h.ctx.compaction as RecordingEngine
  const finished: string[] = []
  h.ctx.on('compaction/finished', (_s, r) => void finished.push(r.status === 'skipped' ? r.reason : r.status))
  const a = engine.compact(h.session, { reason: 'manual', focus: 'a' })
  const b = engine.compact(h.session, { reason: 'auto', focus: 'b' })
  await new Promise((r) => setImmediate(r))
  expect(engine.isCompacting(h.session)).toBe(true)
  expect(engine.order).toEqual(['start a'])
  engine.next()
  await a
  await new Promise((r) => setImmediate(r))
  expect(engine.order).toEqual(['start a', 'end a', 'start b'])
  const settled = engine.settled(h.session)
  engine.next()
  await Promise.all([b, settled])
  expect(engine.isCompacting(h.session)).toBe(false)
  expect(finished).toEqual(['a', 'b'])
})

it('pins the leading user messages up to the first human one', () => {
  const s = new Session({ cwd: '/' })
  s.append('user/message', { content: text('AGENTS.md says hi'), source: { kind: 'plugin', plugin: 'agents-md' } })
  s.append('user/message', { content: text('the task'), source: { kind: 'human' } })
  s.append('assistant/message', { message: { role: 'assistant', content: text('ok') } })
  expect(pinnedHeadLength(s)).toBe(2)
  const other = new Session({ cwd: '/' })
  other.append('assistant/message', { message: { role: 'assistant', content: text('hello first') } })
  other.append('user/message', { content: text('task'), source: { kind: 'human' } })
  expect(pinnedHeadLength(other)).toBe(0)
})

it('measures the next request from the header, surface and pending input, calibrated by reported usage', () => {
  const s = new Session({ cwd: '/' })
  s.append('request/header', { provider: 'p', model: 'm', system: 'S'.repeat(400), tools: [] })
  s.append('user/message', { content: text('u'.repeat(400)), source: { kind: 'human' } })
  const plain = measureNextRequest(s, { estimate })
  expect(plain).toBe(100 + 100 + 4)
  const pending = [{ role: 'user' as const, content: text('p'.repeat(40)) }]
  expect(measureNextRequest(s, { estimate, pending })).toBe(plain + 14)
  // The provider counted more than the heuristic: its figure plus the new tail wins.
  const answer = s.append('assistant/message', {
    message: { role: 'assistant', content: text('a'.repeat(40)) },
    usage: { input: 900, output: 10, cacheRead: 100, cacheWrite: 0, reasoning: 0 },
  })
  const answerTokens = messageTokens((answer as SessionEvent<'assistant/message'>).data.message, estimate)
  expect(measureNextRequest(s, { estimate, lastRequestInput: 1000 })).toBe(1000 + answerTokens)
  // After a surface rewrite the old figure no longer describes the history.
  s.surface.replaceRange(1, 2, [{ role: 'user', content: text('short') }])
  expect(measureNextRequest(s, { estimate, lastRequestInput: 1000 })).toBeLessThan(200)
})

it('measures a logged request header once per estimator; a header that can change is measured each time', async () => {
  const { headerTokens } = await import('../src/index.ts')
  const session = new Session({ cwd: '/' })
  const tools = [
    {
      name: 'bash',
      description: 'runs a command',
      parameters: { type: 'object', properties: { command: { type: 'string' } } },
    },
  ]
  session.append('request/header', { provider: 'p', model: 'm', system: 'You are a test.', tools })
  const logged = session.last('request/header')!.data
  let calls = 0
  const counting = (t: string) => (calls++, estimate(t))
  const first = headerTokens(logged, counting)
  expect(first).toBe(estimate('You are a test.') + estimate(JSON.stringify(logged.tools)))
  expect(headerTokens(logged, counting)).toBe(first)
  expect(calls).toBe(2) // system + tools, once
  // The same figure under another estimator is its own entry.
  expect(headerTokens(logged, estimate)).toBe(first)
  // A mutable header (not from the log) is never cached: a change shows at once.
  const open: {
    system: string
    tools: Array<{ name: string; description: string; parameters: Record<string, unknown> }>
  } = { system: 'short', tools: [...tools] }
  const before = headerTokens(open, estimate)
  open.tools.push({
    name: 'grep',
    description: 'searches files for a pattern',
    parameters: { type: 'object', properties: {} },
  })
  expect(headerTokens(open, estimate)).toBeGreaterThan(before)
})
