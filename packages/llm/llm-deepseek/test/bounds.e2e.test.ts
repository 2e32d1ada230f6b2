// End-to-end (issue #14 item 9): the real `dsh --profile headless` bin against endless, huge and
// keep-alive-only responses. Each ends with its own code after one attempt (or, for the
// keep-alive stall, TIMEOUT then a retry), having read a bounded number of bytes.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
// cli-testkit is not a dependency of this package; its source is imported directly so the test
// needs no lockfile change.
import { runDsh } from '@dsh/cli-testkit'

const MiB = 1024 * 1024
let server: MockServer | undefined

afterEach(async () => {
  await server?.close()
  server = undefined
})

async function dsh(steps: MockStep[], deepseekConfig: string) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-bounds-'))
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  const patch = join(root, 'bounds.patch.yml')
  // Tiny backoff so the retried case stays quick; the llm-deepseek row gets the bounds under test.
  writeFileSync(
    patch,
    `- id: llm-deepseek\n  config:\n${deepseekConfig}\n- id: llm-retry\n  config:\n    initialDelayMs: 1\n    maxDelayMs: 2\n    jitter: 0\n`,
  )
  server = await startMockServer({ steps })
  return runDsh(['--profile', 'headless', '--patch', patch, '--output-format', 'json', 'hello'], {
    cwd,
    env: {
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-e2e-bounds-0123456789',
    },
  })
}

const times = (step: MockStep, n: number): MockStep[] => Array.from({ length: n }, () => step)

describe('dsh headless: runaway responses are bounded and not retried blindly', () => {
  it('an endless stream ends with RESPONSE_TOO_LARGE after one attempt', { timeout: 60_000 }, async () => {
    const run = await dsh(times({ events: [{ forever: { text: 'more ' } }] }, 6), '    maxResponseBytes: 262144')
    expect(run.code).toBe(1)
    expect(JSON.parse(run.stdout)).toMatchObject({ reason: 'error', error: { code: 'RESPONSE_TOO_LARGE' } })
    expect(server!.requests).toHaveLength(1)
    await expect.poll(() => server!.requests[0].aborted).toBe(true)
    expect(server!.requests[0].bytesWritten).toBeLessThan(32 * MiB)
  })

  it('one huge body ends with RESPONSE_TOO_LARGE after one attempt, read in part', { timeout: 60_000 }, async () => {
    const huge: MockStep = {
      raw: { status: 200, contentType: 'text/event-stream', body: 'x'.repeat(64 * 1024), repeat: 1024 },
    }
    const run = await dsh(times(huge, 6), '    maxResponseBytes: 1048576')
    expect(run.code).toBe(1)
    expect(JSON.parse(run.stdout)).toMatchObject({ reason: 'error', error: { code: 'RESPONSE_TOO_LARGE' } })
    expect(server!.requests).toHaveLength(1)
    expect(server!.requests[0].bytesWritten).toBeLessThan(32 * MiB)
  })

  it('a response past requestTimeoutMs ends with DEADLINE_EXCEEDED after one attempt', {
    timeout: 60_000,
  }, async () => {
    const run = await dsh(
      times({ events: [{ forever: { text: 'slow ', intervalMs: 20 } }] }, 6),
      '    requestTimeoutMs: 500',
    )
    expect(run.code).toBe(1)
    expect(JSON.parse(run.stdout)).toMatchObject({ reason: 'error', error: { code: 'DEADLINE_EXCEEDED' } })
    expect(server!.requests).toHaveLength(1)
  })

  it('keep-alive comments alone end in TIMEOUT instead of holding the request forever', {
    timeout: 60_000,
  }, async () => {
    const run = await dsh(
      [{ events: [{ forever: { keepAlive: true, intervalMs: 10 } }] }, { text: 'recovered' }],
      '    streamIdleTimeoutMs: 500',
    )
    // The stall is a TIMEOUT, which is retried like any stall; the retry gets the answer.
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ reason: 'completed', result: 'recovered' })
    expect(server!.requests).toHaveLength(2)
    expect(server!.requests[0].aborted).toBe(true)
  })

  it('data chunks that carry nothing end in TIMEOUT at streamIdleTimeoutMs, not at the request deadline', {
    timeout: 60_000,
  }, async () => {
    // Issue #35: empty deltas, empty content and empty choice lists are not progress.
    const run = await dsh(
      [{ events: [{ forever: { empty: true, intervalMs: 10 } }] }, { text: 'recovered' }],
      '    streamIdleTimeoutMs: 500\n    requestTimeoutMs: 20000',
    )
    // Before the fix every chunk refilled the budget: the request ran to DEADLINE_EXCEEDED.
    expect(run.stdout).not.toContain('DEADLINE_EXCEEDED')
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ reason: 'completed', result: 'recovered' })
    expect(server!.requests).toHaveLength(2)
    expect(server!.requests[0].aborted).toBe(true)
    expect(server!.requests[0].bytesWritten).toBeGreaterThan(1000)
  })
})
