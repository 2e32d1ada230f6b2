import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import TokenMeter from '@dsh/token-meter'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { deriveMessagesFromEvents } from '@dsh/session'
import type { LlmRequest, ToolMessage } from '@dsh/llm'
import ToolResultPruner, { Config, omissionMarker, PRUNER } from '../src/index.ts'

const harnesses: Harness[] = []
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.dispose()
})

const bigTool = (size: number) => ({
  name: 'big-tool',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register({
      name: 'dump',
      description: 'prints a large log',
      parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      execute: (args: { n: number }) => ({ content: `BEGIN ${args.n}\n` + 'x'.repeat(size) + `\nEND ${args.n}` }),
    })
  },
})

const tokensOf = (request: LlmRequest) =>
  Math.ceil(
    ((request.system ?? '').length +
      JSON.stringify(request.tools ?? []).length +
      JSON.stringify(request.messages).length) /
      4,
  )

function script(steps: number) {
  let n = 0
  const entry = (request: LlmRequest) => {
    const usage = { input: tokensOf(request), output: 10 }
    const i = n++
    return i < steps ? { usage, toolCalls: [{ name: 'dump', arguments: { n: i } }] } : { usage, text: 'done' }
  }
  return Array.from({ length: steps + 1 }, () => entry)
}

async function harness(steps: number, size: number, config: Partial<Config> = {}) {
  const h = await createHarness({
    script: script(steps),
    maxSteps: steps + 5,
    plugins: [[TokenMeter], [bigTool(size)], [ToolResultPruner, config]],
  })
  harnesses.push(h)
  return h
}

describe('tool-result pruning', () => {
  it('keeps every request of a 500-result session under the 128k window while the log keeps everything', async () => {
    // 500 results of ~8 KB (~2,000 tokens each): about a million tokens unpruned.
    const h = await harness(500, 8_000, {
      maxResultTokens: 500,
      headChars: 200,
      tailChars: 100,
      keepRecentTokens: 8_000,
    })
    const result = await h.prompt('dump 500 logs')
    expect(result).toMatchObject({ reason: 'completed', steps: 501 })
    const peak = Math.max(...h.model.requests.map(tokensOf))
    expect(peak).toBeLessThan(128_000)
    const uncompacted = deriveMessagesFromEvents(h.session.events.filter((e) => e.type !== 'surface/replace'))
    expect(Math.ceil(JSON.stringify(uncompacted).length / 4)).toBeGreaterThan(1_000_000)
    // The raw log keeps every full result; the surface shows head, marker and tail.
    const results = h.session.events.filter((e) => e.type === 'tool/result')
    expect(results).toHaveLength(500)
    for (const r of results)
      expect((r.data as { message: ToolMessage }).message.content[0]).toMatchObject({ type: 'text' })
    expect(results.every((r) => JSON.stringify(r.data).length > 8_000)).toBe(true)
    const surface = h.session.deriveMessages().filter((m): m is ToolMessage => m.role === 'tool')
    const first = (surface[0].content[0] as { text: string }).text
    expect(first.startsWith('BEGIN 0\n')).toBe(true)
    expect(first.endsWith('\nEND 0')).toBe(true)
    expect(first).toContain(omissionMarker(8_000 + 14 - 300, 0).trim())
    // Recent results are whole.
    expect((surface.at(-1)!.content[0] as { text: string }).text.length).toBeGreaterThan(8_000)
    // Pruning happens in batches (a cache break per batch), not on every step.
    const replaces = h.session.events.filter((e) => e.type === 'surface/replace')
    const batches = new Set(
      replaces.map((e) => h.session.events.slice(0, e.seq).filter((x) => x.type === 'step/start').length),
    )
    expect(replaces.length / batches.size).toBeGreaterThanOrEqual(3)
    expect(replaces.every((e) => (e.data as { meta?: { by?: string } }).meta?.by === PRUNER)).toBe(true)
    expect(JSON.stringify(h.session.deriveMessages())).toBe(JSON.stringify(deriveMessagesFromEvents(h.session.events)))
  })

  it('leaves small results and sessions under the trigger alone', async () => {
    const h = await harness(10, 100)
    await h.prompt('dump')
    expect(h.session.events.some((e) => e.type === 'surface/replace')).toBe(false)
  })

  it('prunes on demand, keeps the call id and error flag, and never prunes twice', async () => {
    const h = await harness(6, 10_000, { auto: false, keepRecentTokens: 0 })
    await h.prompt('dump')
    const first = h.ctx.toolResultPruner.prune(h.session)
    expect(first.pruned).toBe(6)
    expect(first.savedTokens).toBeGreaterThan(10_000)
    expect(h.ctx.toolResultPruner.prune(h.session).pruned).toBe(0)
    const pruned = h.ctx.toolResultPruner.pruneMessage({
      role: 'tool',
      callId: 'c',
      name: 'dump',
      isError: true,
      content: [{ type: 'text', text: 'y'.repeat(9_000) }],
    })
    expect(pruned).toMatchObject({ callId: 'c', name: 'dump', isError: true })
    expect(
      h.ctx.toolResultPruner.pruneMessage({
        role: 'tool',
        callId: 'c',
        name: 'dump',
        content: [{ type: 'text', text: 'short' }],
      }),
    ).toBeUndefined()
  })

  it('does not split a surrogate pair at the cut', async () => {
    const h = await harness(0, 0, { headChars: 3, tailChars: 3, maxResultTokens: 16 })
    const text = '\u{1F600}'.repeat(200)
    const pruned = h.ctx.toolResultPruner.pruneMessage({
      role: 'tool',
      callId: 'c',
      name: 't',
      content: [{ type: 'text', text }],
    })!
    const out = (pruned.content[0] as { text: string }).text
    expect(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(out)).toBe(false)
    expect(out.length).toBeLessThan(text.length)
  })

  it('rejects bad config', () => {
    expect(() => Config({ triggerRatio: 2 })).toThrow()
    expect(() => Config({ headChars: -1 })).toThrow()
    expect(Config({})).toMatchObject({ auto: true, triggerRatio: 0.5, maxResultTokens: 1_000 })
  })
})
