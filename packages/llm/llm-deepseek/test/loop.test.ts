// The adapter inside a real agent loop with @dsh/llm-retry: the acceptance path for
// "a 429 with Retry-After then success (retried, logged)" and "a 400 (not retried)".
import { afterEach, describe, expect, it } from 'vitest'
import { Service, type Context, type Message as LogMessage } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import * as Retry from '@dsh/llm-retry'
import * as DeepSeek from '../src/index.ts'

const ENV = 'DSH_TEST_LOOP_DEEPSEEK_KEY'
let server: MockServer | undefined
let harness: Harness | undefined

afterEach(async () => {
  await harness?.dispose()
  await server?.close()
  harness = undefined
  server = undefined
  delete process.env[ENV]
})

async function run(steps: MockStep[], prompt: string, adapter: Record<string, unknown> = {}) {
  server = await startMockServer({ steps })
  process.env[ENV] = 'sk-loop'
  harness = await createHarness({
    plugins: [
      [DeepSeek, { baseURL: server.baseURL, apiKeyEnv: ENV, ...adapter }],
      // Retry-After from the server still wins over these tiny backoff figures.
      [Retry, { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 }],
    ],
  })
  const logs: LogMessage[] = []
  harness.ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void logs.push(m) })
  const agent = harness.ctx.agents.create({
    cwd: process.cwd(),
    model: { provider: 'deepseek-official', model: 'deepseek-v4-flash' },
  })
  const result = await agent.send(prompt)
  await agent.dispose()
  return { result, logs: logs.filter((m) => m.name === 'llm-retry') }
}

describe('llm-deepseek in the agent loop with llm-retry', () => {
  it('retries a 429 after its Retry-After, logs it, and then answers', async () => {
    const { result, logs } = await run(
      [{ error: { status: 429, retryAfter: 1, message: 'Rate limit reached' } }, { text: 'Here you go.' }],
      'hi',
    )
    expect(result).toMatchObject({ reason: 'completed', text: 'Here you go.' })
    expect(server!.requests.map((r) => r.outcome)).toEqual(['served', 'served'])
    expect(logs).toHaveLength(1)
    // The delay honoured the server's Retry-After (1 s) rather than the 1 ms backoff.
    expect(logs[0].args).toEqual(expect.arrayContaining(['deepseek-official', 1000, 'RATE_LIMIT']))
  })

  it('does not retry a 400', async () => {
    const { result, logs } = await run(
      [{ error: { status: 400, message: 'Invalid request' } }, { text: 'never' }],
      'hi',
    )
    expect(result.reason).toBe('error')
    expect(result.error).toMatchObject({ code: 'BAD_REQUEST' })
    expect(server!.requests).toHaveLength(1)
    expect(logs).toHaveLength(0)
  })

  it('retries a reset stream and sends the same history again', async () => {
    const { result } = await run(
      [{ events: [{ text: 'par' }, { delayMs: 20 }, { reset: true }] }, { text: 'whole answer' }],
      'hi',
    )
    expect(result).toMatchObject({ reason: 'completed', text: 'whole answer' })
    const [first, second] = server!.requests.map((r) => (r.body as { messages: unknown[] }).messages)
    expect(second).toEqual(first)
  })

  it('does not retry an endless response cut off at the byte cap', async () => {
    const endless: MockStep = { events: [{ forever: { text: 'again ' } }] }
    const { result, logs } = await run([endless, endless, endless, endless, endless, endless], 'hi', {
      maxResponseBytes: 64 * 1024,
    })
    expect(result.reason).toBe('error')
    expect(result.error).toMatchObject({ code: 'RESPONSE_TOO_LARGE' })
    expect(server!.requests).toHaveLength(1)
    expect(logs).toHaveLength(0)
  })

  it('does not retry a request past its deadline', async () => {
    const slow: MockStep = { events: [{ forever: { text: 'slow ', intervalMs: 20 } }] }
    const { result } = await run([slow, slow, slow, slow, slow, slow], 'hi', { requestTimeoutMs: 300 })
    expect(result.error).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    expect(server!.requests).toHaveLength(1)
  })
})

describe('service references', () => {
  it('reads ctx.llm once, and ctx.credentials again only after it changed', async () => {
    server = await startMockServer({ steps: [{ text: 'one' }, { text: 'two' }, { text: 'three' }] })
    process.env[ENV] = 'sk-from-env'
    let llmReads = 0
    const counter = {
      name: 'read-counter',
      apply(ctx: Context) {
        ctx.on('internal/get', (from, name, _error, next) => {
          if (from.fiber?.runtime?.name === DeepSeek.name && name === 'llm') llmReads++
          return next()
        })
      },
    }
    harness = await createHarness({ plugins: [[counter], [DeepSeek, { baseURL: server.baseURL, apiKeyEnv: ENV }]] })
    const agent = harness.ctx.agents.create({
      cwd: process.cwd(),
      model: { provider: 'deepseek-official', model: 'deepseek-v4-flash' },
    })
    const auth = () => server!.requests.at(-1)!.headers.authorization
    await agent.send('a')
    expect(auth()).toBe('Bearer sk-from-env')
    // A credentials service loaded after the first request is used from the next one.
    const credentials = harness.ctx.plugin(
      class extends Service {
        constructor(ctx: Context) {
          super(ctx, 'credentials')
        }
        async get(name: string) {
          return name === ENV ? 'sk-from-credentials' : undefined
        }
      },
    )
    await credentials
    await agent.send('b')
    expect(auth()).toBe('Bearer sk-from-credentials')
    // And once it is gone, the environment again.
    await credentials.dispose()
    await agent.send('c')
    expect(auth()).toBe('Bearer sk-from-env')
    // Twice when the plugin loaded (the plain object, registerAdapter), never per request.
    expect(llmReads).toBe(2)
    await agent.dispose()
  })
})
