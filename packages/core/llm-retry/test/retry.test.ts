import { afterEach, describe, expect, it } from 'vitest'
import type { Message as LogMessage } from 'cordis'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import * as Retry from '../src/index.ts'
import { backoffDelay, decide, type Config } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

/** Tiny delays keep the tests fast; jitter 0 keeps the delays exact. */
const fast = (extra: Partial<Config> = {}): Partial<Config> => ({
  initialDelayMs: 1,
  maxDelayMs: 4,
  jitter: 0,
  ...extra,
})

async function boot(script: ScriptEntry[], config: Partial<Config>) {
  harness = await createHarness({ script, plugins: [[Retry, config]] })
  const logs: LogMessage[] = []
  harness.ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void logs.push(m) })
  return { h: harness, logs }
}

const types = (h: Harness) => h.session.events.map((e) => e.type)
const retryLogs = (logs: LogMessage[]) => logs.filter((m) => m.name === 'llm-retry')

describe('backoffDelay', () => {
  const policy = { maxRetries: 5, initialDelayMs: 500, maxDelayMs: 10_000, jitter: 0.1, codes: [] }

  it('doubles from 500 ms up to the 10 s cap', () => {
    const mid = () => 0.5
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(policy, n, undefined, mid))).toEqual([
      500, 1000, 2000, 4000, 8000, 10_000, 10_000,
    ])
  })

  it('spreads each delay by at most the jitter fraction', () => {
    expect(backoffDelay(policy, 1, undefined, () => 0)).toBe(450)
    expect(backoffDelay(policy, 1, undefined, () => 0.999999)).toBe(550)
    expect(backoffDelay(policy, 6, undefined, () => 0)).toBe(9000)
  })

  it('never waits less than the server asked for', () => {
    expect(backoffDelay(policy, 1, 3000, () => 0.5)).toBe(3000)
    expect(backoffDelay(policy, 3, 100, () => 0.5)).toBe(2000)
  })
})

describe('decide', () => {
  const config = Retry.Config({ providers: { strict: { maxRetries: 1, codes: ['SERVER'] } } as never })

  it('retries the default codes five times, then gives up', () => {
    for (const code of ['EMPTY_RESPONSE', 'RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT'] as const) {
      expect(decide(config, 'deepseek-official', { code }, 1).retry).toBe(true)
      expect(decide(config, 'deepseek-official', { code }, 5).retry).toBe(true)
      expect(decide(config, 'deepseek-official', { code }, 6)).toEqual({ retry: false, why: 'exhausted' })
    }
    for (const code of ['BAD_REQUEST', 'AUTH', 'MISSING_CREDENTIAL', 'ABORTED', 'CONTEXT_OVERFLOW'] as const) {
      expect(decide(config, 'deepseek-official', { code }, 1)).toEqual({ retry: false, why: 'code' })
    }
  })

  it('does not retry a runaway response (byte cap or deadline) by default; a profile may opt in', () => {
    for (const code of ['RESPONSE_TOO_LARGE', 'DEADLINE_EXCEEDED'] as const) {
      expect(decide(config, 'deepseek-official', { code }, 1)).toEqual({ retry: false, why: 'code' })
    }
    const optIn = Retry.Config({ codes: ['RESPONSE_TOO_LARGE'], maxRetries: 1 })
    expect(decide(optIn, 'x', { code: 'RESPONSE_TOO_LARGE' }, 1).retry).toBe(true)
    expect(decide(optIn, 'x', { code: 'RESPONSE_TOO_LARGE' }, 2)).toEqual({ retry: false, why: 'exhausted' })
  })

  it('uses the exact route policy when one is configured', () => {
    expect(decide(config, 'strict', { code: 'SERVER' }, 1).retry).toBe(true)
    expect(decide(config, 'strict', { code: 'SERVER' }, 2)).toEqual({ retry: false, why: 'exhausted' })
    expect(decide(config, 'strict', { code: 'TIMEOUT' }, 1)).toEqual({ retry: false, why: 'code' })
    expect(decide(config, 'strict-2', { code: 'TIMEOUT' }, 1).retry).toBe(true)
  })

  it('refuses a Retry-After over maxRetryAfterMs', () => {
    expect(decide(config, 'x', { code: 'RATE_LIMIT', retryAfterMs: 120_000 }, 1)).toEqual({
      retry: false,
      why: 'retry-after',
    })
    expect(decide(config, 'x', { code: 'RATE_LIMIT', retryAfterMs: 30_000 }, 1)).toMatchObject({ retry: true })
  })

  it('rejects bad config', () => {
    expect(() => Retry.Config({ codes: ['NOT_A_CODE'] } as never)).toThrow(/codes/)
    expect(() => Retry.Config({ jitter: 2 })).toThrow()
    expect(() => Retry.Config({ maxRetries: -1 })).toThrow()
  })
})

describe('llm-retry in the agent loop', () => {
  it('retries a rate-limited request after Retry-After and logs the retry', async () => {
    const { h, logs } = await boot(
      [{ error: { code: 'RATE_LIMIT', message: 'slow down', retryAfterMs: 5 } }, { text: 'answered after a retry' }],
      fast(),
    )
    const result = await h.prompt('hi')
    expect(result.reason).toBe('completed')
    expect(result.text).toBe('answered after a retry')
    expect(h.model.requests).toHaveLength(2)
    // The failed attempt closed its own step; the retry is a fresh one.
    expect(types(h).filter((t) => t === 'step/start')).toHaveLength(2)
    const lines = retryLogs(logs)
    expect(lines).toHaveLength(1)
    expect(lines[0].type).toBe('info')
    expect(lines[0].args).toEqual(expect.arrayContaining([1, 5, 'scripted', 5, 'RATE_LIMIT', 'slow down']))
  })

  it('draws jitter from the injected random source', async () => {
    const { h, logs } = await boot([{ error: { code: 'SERVER' } }, { text: 'ok' }], {
      initialDelayMs: 10,
      jitter: 0.5,
      random: () => 0,
    })
    await h.prompt('go')
    // 10 ms spread by -50%.
    expect(retryLogs(logs)[0].args[4]).toBe(5)
  })

  it('retries each default code and succeeds', async () => {
    const { h } = await boot(
      [
        { error: { code: 'EMPTY_RESPONSE' } },
        { error: { code: 'SERVER' } },
        { error: { code: 'TIMEOUT' } },
        { error: { code: 'TRANSPORT' } },
        { text: 'finally' },
      ],
      fast(),
    )
    const result = await h.prompt('go')
    expect(result).toMatchObject({ reason: 'completed', text: 'finally' })
    expect(h.model.requests).toHaveLength(5)
  })

  it('does not retry a bad request', async () => {
    const { h, logs } = await boot(
      [{ error: { code: 'BAD_REQUEST', message: 'invalid tools' } }, { text: 'never' }],
      fast(),
    )
    const result = await h.prompt('go')
    expect(result.reason).toBe('error')
    expect(result.error).toMatchObject({ code: 'BAD_REQUEST' })
    expect(h.model.requests).toHaveLength(1)
    expect(retryLogs(logs)).toHaveLength(0)
  })

  it('gives up after maxRetries and logs a warning', async () => {
    const { h, logs } = await boot(
      Array.from({ length: 4 }, () => ({ error: { code: 'SERVER' as const, message: 'overloaded' } })),
      fast({ maxRetries: 2 }),
    )
    const result = await h.prompt('go')
    expect(result.reason).toBe('error')
    expect(result.error).toMatchObject({ code: 'SERVER' })
    expect(h.model.requests).toHaveLength(3)
    const lines = retryLogs(logs)
    expect(lines.map((m) => m.type)).toEqual(['info', 'info', 'warn'])
  })

  it('falls through to later listeners for codes it does not retry', async () => {
    harness = await createHarness({ script: [{ error: { code: 'AUTH' } }, { text: 'ok' }], plugins: [[Retry, fast()]] })
    harness.ctx.on('agent/request-error', async () => ({ action: 'retry' as const, delayMs: 0 }))
    const result = await harness.prompt('go')
    expect(result.text).toBe('ok')
  })

  it('stops retrying once unloaded', async () => {
    harness = await createHarness({ script: [{ error: { code: 'SERVER' } }, { text: 'ok' }] })
    const mounted = await harness.mount(Retry, fast())
    await mounted.dispose()
    const result = await harness.prompt('go')
    expect(result.reason).toBe('error')
    expect(harness.model.requests).toHaveLength(1)
  })
})
