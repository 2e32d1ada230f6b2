import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import * as TimeoutPolicy from '../src/index.ts'
import { budgetFor } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

/** `sleep` waits `ms` and records whether its signal aborted; `quick` answers at once. */
function sleepers(log: string[]) {
  return {
    name: 'sleepers',
    inject: ['tools'],
    apply(ctx: Context) {
      const body = (declared?: number) => ({
        description: 'sleep',
        parameters: { type: 'object', properties: { ms: { type: 'integer' } }, required: ['ms'] },
        ...(declared !== undefined ? { timeoutMs: declared } : {}),
        execute(args: { ms: number }, call: { signal: AbortSignal }) {
          return new Promise<{ content: string }>((resolve) => {
            const t = setTimeout(() => resolve({ content: `slept ${args.ms}` }), args.ms)
            call.signal.addEventListener('abort', () => {
              clearTimeout(t)
              log.push('aborted')
            })
          })
        },
      })
      ctx.tools.register({ name: 'sleep', ...body(50) })
      ctx.tools.register({ name: 'nap', ...body() })
    },
  }
}

async function run(calls: { name: string; ms: number }[], config: object) {
  const log: string[] = []
  harness = await createHarness({
    script: [{ toolCalls: calls.map((c) => ({ name: c.name, arguments: { ms: c.ms } })) }, { text: 'done' }],
    plugins: [[sleepers(log)], [TimeoutPolicy, config]],
  })
  await harness.prompt('go')
  const results = harness.session.events
    .filter((e) => e.type === 'tool/result')
    .map(
      (e) =>
        e.data as {
          message: { content: { text: string }[]; isError?: boolean }
          error?: { code: string; message: string }
        },
    )
  return { results, log }
}

describe('@dsh/timeout-policy', () => {
  it("aborts a call past the tool's declared timeoutMs with a structured TOOL_TIMEOUT result", async () => {
    const { results, log } = await run([{ name: 'sleep', ms: 60_000 }], {})
    expect(results[0].error).toEqual({ code: 'TOOL_TIMEOUT', message: 'timed out after 50 ms' })
    expect(results[0].message.isError).toBe(true)
    expect(results[0].message.content[0].text).toMatch(
      /^Error \[TOOL_TIMEOUT\]: tool "sleep" did not finish within its 50 ms time limit and was stopped/,
    )
    expect(log).toEqual(['aborted'])
    // the model saw it
    const seen = harness!.model.requests[1].messages.find((m) => m.role === 'tool')
    expect(JSON.stringify(seen)).toContain('TOOL_TIMEOUT')
  })

  it('lets a call that finishes in time through unchanged', async () => {
    const { results, log } = await run([{ name: 'sleep', ms: 1 }], {})
    expect(results[0].message.content[0].text).toBe('slept 1')
    expect(results[0].error).toBeUndefined()
    expect(log).toEqual([])
  })

  it('uses defaultMs for tools without a declaration, and no deadline when it is 0', async () => {
    const timed = await run([{ name: 'nap', ms: 60_000 }], { defaultMs: 30 })
    expect(timed.results[0].error?.code).toBe('TOOL_TIMEOUT')
    await harness!.dispose()
    harness = undefined
    const free = await run([{ name: 'nap', ms: 80 }], { defaultMs: 0 })
    expect(free.results[0].message.content[0].text).toBe('slept 80')
  })

  it('perTool overrides the declaration (0 disables it)', async () => {
    const off = await run([{ name: 'sleep', ms: 120 }], { perTool: { sleep: 0 } })
    expect(off.results[0].message.content[0].text).toBe('slept 120')
    expect(budgetFor({ name: 'sleep', timeoutMs: 50 }, { defaultMs: 7, perTool: { sleep: 20 } })).toBe(20)
    expect(budgetFor({ name: 'x', timeoutMs: 50 }, { defaultMs: 7, perTool: {} })).toBe(50)
    expect(budgetFor({ name: 'x' }, { defaultMs: 7, perTool: {} })).toBe(7)
  })

  it('times out each call on its own deadline', async () => {
    const { results } = await run(
      [
        { name: 'sleep', ms: 60_000 },
        { name: 'sleep', ms: 1 },
      ],
      {},
    )
    expect(results.map((r) => r.error?.code)).toEqual(['TOOL_TIMEOUT', undefined])
  })

  it('rejects a malformed config at load', async () => {
    await expect(createHarness({ plugins: [[TimeoutPolicy, { defaultMs: -5 }]] })).rejects.toThrow()
  })

  it('unloading the policy removes the deadline', async () => {
    const log: string[] = []
    harness = await createHarness({
      script: [{ toolCalls: [{ name: 'sleep', arguments: { ms: 120 } }] }, { text: 'done' }],
      plugins: [[sleepers(log)]],
    })
    const policy = await harness.mount(TimeoutPolicy, {})
    await policy.dispose()
    await harness.prompt('go')
    const result = harness.session.events.find((e) => e.type === 'tool/result')!.data as {
      message: { content: { text: string }[] }
    }
    expect(result.message.content[0].text).toBe('slept 120')
  })
})
