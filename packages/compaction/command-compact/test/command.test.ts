import { afterEach, expect, it, vi } from 'vitest'
import type { Context } from 'cordis'
import TokenMeter from '@dsh/token-meter'
import CommandRegistry from '@dsh/commands'
import BasicCompactionEngine from '@dsh/compaction-basic'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import type { LlmRequest } from '@dsh/llm'
import * as CommandCompact from '../src/index.ts'

const harnesses: Harness[] = []
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.dispose()
})

/** A tool whose calls block until `release()`; `started` resolves when the first call begins. */
function gate() {
  let release!: () => void
  let started!: () => void
  const released = new Promise<void>((r) => (release = r))
  const running = new Promise<void>((r) => (started = r))
  const plugin = {
    name: 'gate-tool',
    inject: ['tools'],
    apply(ctx: Context) {
      ctx.tools.register({
        name: 'wait',
        description: 'waits',
        parameters: { type: 'object', properties: {} },
        execute: async () => {
          started()
          await released
          return { content: 'x'.repeat(6_000) }
        },
      })
    },
  }
  return { plugin, release, running }
}

const isSummary = (r: LlmRequest) => r.metadata?.purpose === 'compaction'

async function harness(script: Array<(r: LlmRequest) => object>, extra: Array<[unknown, unknown?]> = []) {
  const h = await createHarness({
    script: script as never,
    plugins: [
      [TokenMeter],
      [CommandRegistry],
      [BasicCompactionEngine, { auto: false, keepRecentTokens: 0 }],
      [CommandCompact],
      ...(extra as never[]),
    ],
  })
  harnesses.push(h)
  return h
}

it('/compact during a turn waits for the turn, then compacts with the focus', async () => {
  const g = gate()
  const steps = [
    () => ({ toolCalls: [{ name: 'wait', arguments: {} }] }),
    () => ({ text: 'the wait is over' }),
    (r: LlmRequest) =>
      isSummary(r)
        ? { text: 'Summary: waited once for the gate; the result was 6000 x characters.' }
        : { text: 'unexpected' },
  ]
  const h = await harness(steps, [[g.plugin]])
  const turn = h.prompt('wait for the gate')
  await g.running
  let settled = false
  const waits = vi.spyOn(h.agent, 'idle')
  const command = h.ctx.commands.dispatch(h.agent, '/compact the gate result').then((r) => ((settled = true), r))
  // The command has reached its wait for the turn (an event, not a delay)...
  await vi.waitFor(() => expect(waits).toHaveBeenCalled(), { timeout: 10_000, interval: 5 })
  // ...and nothing happens while the turn runs.
  expect(settled).toBe(false)
  expect(h.session.events.some((e) => e.type === 'compaction/start')).toBe(false)
  g.release()
  await turn
  const result = await command
  expect(result).toMatchObject({
    handled: true,
    name: 'compact',
    ok: true,
    output: expect.stringMatching(/^Compacted the conversation/),
  })
  const events = h.session.events
  const turnEnd = events.findIndex((e) => e.type === 'turn/end')
  const start = events.findIndex((e) => e.type === 'compaction/start')
  expect(start).toBeGreaterThan(turnEnd)
  expect(events[start].data).toMatchObject({ reason: 'manual', focus: 'the gate result' })
  // The command itself is not a model turn: one turn in the log, one summary request.
  expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(1)
  expect(h.model.requests.filter(isSummary)).toHaveLength(1)
  expect(h.ctx.commands.list().map((c) => c.name)).toContain('compact')
})

it('reports a failed summary as a failed command and leaves history alone', async () => {
  const steps = [
    () => ({ text: 'a first answer that is long enough to be worth summarizing at all' }),
    () => ({ text: '' }),
  ]
  const h = await harness(steps)
  await h.prompt('hello')
  const before = JSON.stringify(h.session.deriveMessages())
  const result = await h.ctx.commands.dispatch(h.agent, '/compact')
  expect(result).toMatchObject({
    handled: true,
    ok: false,
    error: { code: 'COMMAND_FAILED', message: expect.stringContaining('EMPTY_SUMMARY') },
  })
  expect(JSON.stringify(h.session.deriveMessages())).toBe(before)
  expect(
    h.session.events.filter((e) => e.type === 'compaction/end').map((e) => (e.data as { status: string }).status),
  ).toEqual(['failed'])
})

it('says so when there is nothing to compact', async () => {
  const h = await harness([])
  expect(await h.ctx.commands.dispatch(h.agent, '/compact')).toMatchObject({
    ok: true,
    output: expect.stringMatching(/^Nothing compacted/),
  })
})
