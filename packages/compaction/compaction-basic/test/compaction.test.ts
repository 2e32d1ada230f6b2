import { afterEach, describe, expect, it } from 'vitest'
import TokenMeter from '@dsh/token-meter'
import { createHarness, SCRIPTED_MODEL, type Harness } from '@dsh/agent-loop-testkit'
import { deriveMessagesFromEvents, type AnySessionEvent } from '@dsh/session'
import type { LlmRequest } from '@dsh/llm'
import BasicCompactionEngine, { SUMMARY_HEADER, type Config } from '../src/index.ts'
import { isCompactionRequest, readTool, readingScript, requestTokens } from './helpers.ts'

const harnesses: Harness[] = []
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.dispose()
})

async function harness(script: ReturnType<typeof readingScript>, config: Partial<Config> = {}, size = 4_000) {
  const h = await createHarness({
    script,
    maxSteps: 200,
    plugins: [
      [TokenMeter],
      [readTool(size)],
      [BasicCompactionEngine, { contextWindow: 8_000, keepRecentTokens: 2_000, ...config }],
    ],
  })
  harnesses.push(h)
  return h
}

const ofType = <T extends AnySessionEvent['type']>(events: readonly AnySessionEvent[], type: T) =>
  events.filter((e): e is Extract<AnySessionEvent, { type: T }> => e.type === type)
const json = (value: unknown) => JSON.stringify(value)

describe('automatic compaction', () => {
  it('compacts a session pushed past a small window and continues to the end of the task', async () => {
    const h = await harness(readingScript({ reads: 12, final: 'read all twelve' }))
    const result = await h.prompt('read the twelve source files')
    expect(result).toMatchObject({ reason: 'completed', text: 'read all twelve' })
    const events = h.session.events
    const starts = ofType(events, 'compaction/start')
    const ends = ofType(events, 'compaction/end')
    expect(starts.length).toBeGreaterThanOrEqual(1)
    expect(starts.every((s) => s.data.reason === 'auto' && s.data.engine === '@dsh/compaction-basic')).toBe(true)
    expect(ends.every((e) => e.data.status === 'compacted')).toBe(true)
    expect(ofType(events, 'compaction/summary')).toHaveLength(starts.length)
    // Every agent request (compaction calls included) stayed within the 8,000-token window.
    const agentRequests = h.model.requests.filter((r) => !isCompactionRequest(r))
    expect(agentRequests).toHaveLength(13)
    for (const request of h.model.requests) expect(requestTokens(request)).toBeLessThan(8_000)
    // Without compaction the last request would have carried twelve 4,000-character results.
    const uncompacted = deriveMessagesFromEvents(events.filter((e) => e.type !== 'surface/replace'))
    expect(Math.ceil(json(uncompacted).length / 4)).toBeGreaterThan(12_000)
  })

  it('replays the prefix byte for byte in the summary request and keeps the prefix before the summary', async () => {
    const h = await harness(readingScript({ reads: 8 }))
    await h.prompt('read the files')
    const requests = h.model.requests
    const at = requests.findIndex(isCompactionRequest)
    expect(at).toBeGreaterThan(0)
    const summaryRequest = requests[at]
    const before = requests[at - 1]
    const after = requests[at + 1]
    // Same provider, model, system prompt and tools as the request before it.
    expect([summaryRequest.provider, summaryRequest.model]).toEqual([before.provider, SCRIPTED_MODEL])
    expect(summaryRequest.system).toBe(before.system)
    expect(json(summaryRequest.tools)).toBe(json(before.tools))
    // Its messages are the earlier request's messages (a prefix), then one instruction.
    const replayed = summaryRequest.messages.slice(0, -1)
    const shared = Math.min(replayed.length, before.messages.length)
    expect(shared).toBeGreaterThan(2)
    expect(json(replayed.slice(0, shared))).toBe(json(before.messages.slice(0, shared)))
    expect(summaryRequest.messages.at(-1)).toMatchObject({ role: 'user' })
    const start = ofType(h.session.events, 'compaction/start')[0]
    expect(summaryRequest.messages.at(-1)!.content).toEqual([{ type: 'text', text: start.data.instruction }])
    // The next agent request keeps system, tools and the pinned head byte for byte, then the summary.
    expect(after.system).toBe(before.system)
    expect(json(after.tools)).toBe(json(before.tools))
    const summaryIndex = after.messages.findIndex(
      (m) => m.role === 'user' && m.content.some((b) => b.type === 'text' && b.text.startsWith(SUMMARY_HEADER)),
    )
    expect(summaryIndex).toBe(1)
    expect(json(after.messages.slice(0, summaryIndex))).toBe(json(before.messages.slice(0, summaryIndex)))
    expect(after.messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'read the files' }] })
    // The kept recent messages follow the summary unchanged, starting at a non-tool message.
    const kept = after.messages.slice(summaryIndex + 1)
    expect(kept[0].role).not.toBe('tool')
    expect(kept.length).toBeGreaterThan(0)
  })

  it('keeps every original event in the raw log and derives the compacted surface on resume', async () => {
    const h = await harness(readingScript({ reads: 8 }))
    await h.prompt('read the files')
    const { session } = h
    const events = session.events
    // Nothing was removed: every call still has its full result in the log.
    const calls = ofType(events, 'tool/call')
    const results = ofType(events, 'tool/result')
    expect(calls).toHaveLength(8)
    expect(results).toHaveLength(8)
    for (const r of results) expect((r.data.message.content[0] as { text: string }).text.length).toBe(4_000)
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    // The surface is reproducible from the log alone.
    expect(json(deriveMessagesFromEvents(events))).toBe(json(session.deriveMessages()))
    const replace = ofType(events, 'surface/replace')
    expect(replace.length).toBeGreaterThan(0)
    expect(replace[0].data.meta).toMatchObject({ by: '@dsh/compaction-basic' })

    // Restore into a fresh tree from the events and continue: the model sees the compacted history.
    const next = await harness(readingScript({ reads: 0, final: 'continued' }))
    const restored = next.ctx.sessions.create({
      id: 'restored',
      cwd: session.cwd,
      events: events.map((e) => ({ ...e })),
    })
    expect(json(restored.deriveMessages())).toBe(json(session.deriveMessages()))
    const agent = next.ctx.agents.create({
      cwd: session.cwd,
      session: restored,
      model: { provider: 'scripted', model: SCRIPTED_MODEL },
    })
    const result = await agent.send('and now?')
    expect(result.text).toBe('continued')
    const request = next.model.requests.at(-1)!
    expect(json(request.messages.slice(0, -1))).toBe(json(session.deriveMessages()))
    await agent.dispose()
  })

  it('re-compacts absorbing the earlier summary, and the instruction names the focus of /compact', async () => {
    const h = await harness(readingScript({ reads: 20 }))
    await h.prompt('read many files')
    const starts = ofType(h.session.events, 'compaction/start')
    expect(starts.length).toBeGreaterThanOrEqual(2)
    // One summary on the surface at a time.
    const summaries = h.session
      .deriveMessages()
      .filter((m) => m.role === 'user' && (m.content[0] as { text: string }).text.startsWith(SUMMARY_HEADER))
    expect(summaries).toHaveLength(1)
    // The second summary request replayed the first summary (cache reuse of the compacted prefix).
    const second = h.model.requests.filter(isCompactionRequest)[1]
    expect(json(second.messages)).toContain(SUMMARY_HEADER)

    const manual = await h.ctx.compaction.compact(h.session, { reason: 'manual', focus: 'the file names' })
    expect(manual.status).toBe('compacted')
    const last = ofType(h.session.events, 'compaction/start').at(-1)!
    expect(last.data).toMatchObject({ reason: 'manual', focus: 'the file names' })
    expect(last.data.instruction).toContain('the file names')
  })
})

describe('oversized tool-call arguments (issue 14 item 12)', () => {
  it('keeps every request, compaction requests included, inside the window after a 1 MB argument', async () => {
    const huge = 'q'.repeat(1_000_000)
    const h = await createHarness({
      script: readingScript({
        reads: 6,
        final: 'done despite the big call',
        agentStep: (_request, n) =>
          n === 0 ? { toolCalls: [{ name: 'read', arguments: { path: 'src/big.ts', content: huge } }] } : undefined,
      }),
      maxSteps: 200,
      sessionStore: { maxToolArgumentChars: 2_000 },
      plugins: [
        [TokenMeter],
        [readTool(2_000)],
        [BasicCompactionEngine, { contextWindow: 8_000, keepRecentTokens: 2_000 }],
      ],
    })
    harnesses.push(h)
    const result = await h.prompt('read the files')
    expect(result).toMatchObject({ reason: 'completed', text: 'done despite the big call' })
    for (const request of h.model.requests) expect(requestTokens(request)).toBeLessThan(8_000)
    // The log keeps the argument whole.
    const call = ofType(h.session.events, 'tool/call')[0]
    expect(call.data.arguments.length).toBeGreaterThan(1_000_000)
  })
})

describe('failures leave history untouched', () => {
  for (const [label, summary] of [
    ['a failed summary request', () => ({ error: { code: 'SERVER' as const, message: 'upstream 503' } })],
    ['an empty summary', () => ({ text: '' })],
  ] as const) {
    it(`${label} is logged and the turn still completes`, async () => {
      const h = await harness(readingScript({ reads: 8, summary }), {
        contextWindow: 20_000,
        keepRecentTokens: 1_000,
        triggerRatio: 0.3,
      })
      const result = await h.prompt('read')
      expect(result.reason).toBe('completed')
      const events = h.session.events
      const ends = ofType(events, 'compaction/end')
      expect(ends.length).toBeGreaterThanOrEqual(1)
      expect(ends.every((e) => e.data.status === 'failed')).toBe(true)
      expect(ends[0].data.error?.code).toBe(label.includes('empty') ? 'EMPTY_SUMMARY' : 'SERVER')
      expect(ofType(events, 'surface/replace')).toHaveLength(0)
      // One automatic attempt per turn: the failure is not retried on every step.
      expect(h.model.requests.filter(isCompactionRequest)).toHaveLength(1)
      expect(json(h.session.deriveMessages())).toBe(json(deriveMessagesFromEvents(events)))
    })
  }

  it('reports a manual compaction with nothing to compact as skipped, logging nothing', async () => {
    const h = await harness(readingScript({ reads: 0, final: 'hi' }))
    await h.prompt('hello')
    const length = h.session.length
    const result = await h.ctx.compaction.compact(h.session, { reason: 'manual' })
    expect(result.status).toBe('skipped')
    expect(h.session.length).toBe(length)
  })
})

describe('provider context overflow', () => {
  it('compacts once and retries once after CONTEXT_OVERFLOW', async () => {
    let compacted = false
    const script = readingScript({
      reads: 6,
      agentStep: (request: LlmRequest) => {
        if (!compacted && requestTokens(request) > 4_000)
          return { error: { code: 'CONTEXT_OVERFLOW', message: 'maximum context length exceeded' } }
        if (json(request.messages).includes(SUMMARY_HEADER)) compacted = true
        return undefined
      },
    })
    const h = await harness(script, { auto: false })
    const result = await h.prompt('read six files')
    expect(result.reason).toBe('completed')
    const starts = ofType(h.session.events, 'compaction/start')
    expect(starts.map((s) => s.data.reason)).toEqual(['overflow'])
    // The failed step is followed by a compacted retry.
    const requests = h.model.requests
    const at = requests.findIndex(isCompactionRequest)
    expect(json(requests[at + 1].messages)).toContain(SUMMARY_HEADER)
  })

  it('fails the turn when the retried request overflows again', async () => {
    const script = readingScript({
      reads: 6,
      agentStep: (_request: LlmRequest, n: number) =>
        n >= 4 ? { error: { code: 'CONTEXT_OVERFLOW', message: 'too long' } } : undefined,
    })
    const h = await harness(script, { auto: false, keepRecentTokens: 1_000 })
    const result = await h.prompt('read six files')
    expect(result).toMatchObject({ reason: 'error', error: { code: 'CONTEXT_OVERFLOW' } })
    expect(h.model.requests.filter(isCompactionRequest)).toHaveLength(1)
  })
})

describe('plugin lifecycle', () => {
  it('stops compacting when the plugin unloads', async () => {
    const h = await createHarness({ script: readingScript({ reads: 8 }), plugins: [[TokenMeter], [readTool(4_000)]] })
    harnesses.push(h)
    const fiber = await h.mount(BasicCompactionEngine, { contextWindow: 8_000, keepRecentTokens: 2_000 })
    await fiber.dispose()
    await h.prompt('read')
    expect(ofType(h.session.events, 'compaction/start')).toHaveLength(0)
  })
})
