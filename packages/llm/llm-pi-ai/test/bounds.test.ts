// Issue #14 items 9 and 5 on the pi-ai adapter: an endless, huge or keep-alive-only response ends
// with its own code after a bounded read, a request has a deadline, and a provider error echoing
// the key is redacted. Real HTTP against @dsh/llm-mock-server on an openai-compatible route.
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LlmService, { LlmError, REDACTED, type LlmRequest, type StreamChunk } from '@dsh/llm'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import * as LlmPiAi from '../src/index.ts'

const ENV = 'DSH_TEST_PI_AI_BOUNDS_KEY'
const KEY = 'sk-pi-bounds-0123456789abcdefghij'
const MiB = 1024 * 1024
let server: MockServer | undefined
let ctx: Context | undefined

afterEach(async () => {
  ctx = undefined
  await server?.close()
  server = undefined
  delete process.env[ENV]
})

/**
 * A route on a mock server that plays `steps` after one plain answer, which `local` streams first:
 * pi-ai loads its protocol code on a route's first request, and on a loaded machine that load alone
 * outlasted a short budget before any byte was sent (a keep-alive case ended in TIMEOUT with no
 * request at the server). The timed request is the second: `timed()`.
 */
async function local(steps: MockStep[], extra: Record<string, unknown> = {}): Promise<void> {
  server = await startMockServer({ steps: [{ text: 'warm' }, ...steps] })
  process.env[ENV] = KEY
  ctx = new Context()
  await ctx.plugin(LlmService)
  await ctx.plugin(LlmPiAi, {
    routes: {
      local: {
        provider: 'openai-compatible',
        baseURL: server.baseURL,
        apiKeyEnv: ENV,
        models: [{ id: 'local-model', contextWindow: 32_000 }],
        ...extra,
      },
    },
  } as never)
  const warm: StreamChunk[] = []
  for await (const chunk of ctx.llm.stream(request)) warm.push(chunk)
  expect(warm.some((c) => c.kind === 'text-delta')).toBe(true)
}

/** The request under test (the one after `local`'s warm-up). */
const timed = () => {
  expect(server!.requests).toHaveLength(2)
  return server!.requests[1]
}

const request: LlmRequest = {
  provider: 'local',
  model: 'local-model',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
}

async function failure(): Promise<{ error: LlmError; chunks: StreamChunk[] }> {
  const chunks: StreamChunk[] = []
  try {
    for await (const chunk of ctx!.llm.stream(request)) chunks.push(chunk)
  } catch (error) {
    expect(LlmError.is(error)).toBe(true)
    return { error: error as LlmError, chunks }
  }
  throw new Error(`expected the stream to fail; got ${chunks.length} chunks`)
}

describe('pi-ai response bounds', () => {
  it('keep-alive comments alone end in TIMEOUT', async () => {
    // The idle budget also covers pi-ai loading its protocol code on first use: keep it roomy.
    await local([{ events: [{ forever: { keepAlive: true, intervalMs: 10 } }] }], { streamIdleTimeoutMs: 2000 })
    const { error } = await failure()
    expect(error.code).toBe('TIMEOUT')
    await expect.poll(() => timed().aborted).toBe(true)
  })

  it('data chunks that carry nothing (empty deltas, empty choices) end in TIMEOUT', async () => {
    // Issue #35: only content, reasoning, tool calls, usage or a finish refill the idle budget.
    await local([{ events: [{ forever: { empty: true, intervalMs: 10 } }] }], { streamIdleTimeoutMs: 2000 })
    const { error, chunks } = await failure()
    expect(error.code).toBe('TIMEOUT')
    expect(error.message).toContain('2000 ms')
    expect(chunks).toEqual([])
    await expect.poll(() => timed().aborted).toBe(true)
    // Positive control: the server really kept sending chunks past the budget.
    expect(timed().bytesWritten).toBeGreaterThan(2000)
  })

  it('repeated tool-call deltas that add nothing end in TIMEOUT', async () => {
    // pi-ai turns each `tool_calls: [{index: 0}]` chunk into an event with an empty delta; only the
    // first one starts a call, the rest carry nothing and must not refill the idle budget.
    const frame = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'read' } }] } }] })}\n\n`
    await local([{ events: [{ forever: { frame, intervalMs: 10 } }] }], {
      streamIdleTimeoutMs: 2000,
      requestTimeoutMs: 10_000,
    })
    const { error, chunks } = await failure()
    expect(error.code).toBe('TIMEOUT')
    // One call started (pi-ai may close it as the request is cut off), not one per repeated frame.
    expect(chunks[0]?.kind).toBe('tool-call-start')
    expect(chunks.filter((c) => c.kind === 'tool-call-start')).toHaveLength(1)
    expect(chunks.length).toBeLessThanOrEqual(3)
    await expect.poll(() => timed().aborted).toBe(true)
  })

  it('an endless stream of text ends with RESPONSE_TOO_LARGE after a bounded read', async () => {
    await local([{ events: [{ forever: { text: 'and on ' } }] }], { maxResponseBytes: 256 * 1024 })
    const { error, chunks } = await failure()
    expect(error.code).toBe('RESPONSE_TOO_LARGE')
    expect(error.provider).toBe('local')
    expect(error.message).toContain('maxResponseBytes')
    expect(chunks.length).toBeLessThan((256 * 1024) / 100)
    await expect.poll(() => timed().aborted).toBe(true)
    expect(timed().bytesWritten).toBeLessThan(32 * MiB)
  })

  it('one huge SSE body is cut at the cap', async () => {
    await local(
      [{ raw: { status: 200, contentType: 'text/event-stream', body: 'x'.repeat(64 * 1024), repeat: 1024 } }],
      { maxResponseBytes: MiB },
    )
    const { error } = await failure()
    expect(error.code).toBe('RESPONSE_TOO_LARGE')
    await expect.poll(() => timed().aborted).toBe(true)
    expect(timed().bytesWritten).toBeLessThan(32 * MiB)
  })

  it('a huge error body is read only in part and classified by its status', async () => {
    await local([{ raw: { status: 500, contentType: 'text/plain', body: 'e'.repeat(64 * 1024), repeat: 1024 } }])
    const { error } = await failure()
    expect(error.code).toBe('SERVER')
    expect(error.message.length).toBeLessThan(70 * 1024)
    await expect.poll(() => timed().aborted).toBe(true)
    expect(timed().bytesWritten).toBeLessThan(32 * MiB)
  })

  it('a response still streaming at requestTimeoutMs ends with DEADLINE_EXCEEDED', async () => {
    await local([{ events: [{ forever: { text: 'slow ', intervalMs: 20 } }] }], { requestTimeoutMs: 400 })
    const { error, chunks } = await failure()
    expect(error.code).toBe('DEADLINE_EXCEEDED')
    expect(error.message).toContain('400 ms (requestTimeoutMs)')
    expect(chunks.length).toBeGreaterThan(0)
  })

  it('route defaults for the new fields', () => {
    const row = LlmPiAi.RouteConfig({})
    expect(row.maxResponseBytes).toBe(256 * MiB)
    expect(row.requestTimeoutMs).toBe(3_600_000)
    expect(() => LlmPiAi.RouteConfig({ maxResponseBytes: 0 })).toThrow()
  })
})

describe('pi-ai key redaction', () => {
  it('a 401 body that echoes the Authorization header does not carry the key out', async () => {
    await local([{ error: { status: 401, message: 'Incorrect API key', echoHeaders: true } }])
    const { error } = await failure()
    expect(error.code).toBe('AUTH')
    expect(timed().headers.authorization).toBe(`Bearer ${KEY}`)
    expect(error.message).toContain(REDACTED)
    expect(error.message).not.toContain(KEY)
    expect(String(error.stack)).not.toContain(KEY)
  })
})
