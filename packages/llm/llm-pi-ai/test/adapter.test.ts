// The adapter through ctx.llm against @dsh/llm-mock-server (real HTTP on loopback, the OpenAI
// chat-completions wire), for a declared openai-compatible route and the pi-ai `openai` provider.
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LlmService, { BlockAssembler, LlmError, type LlmRequest, type StreamChunk } from '@dsh/llm'
import { CredentialsService, type CredentialDescription } from '@dsh/credentials'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import { userAgent } from '@dsh/brand'
import * as LlmPiAi from '../src/index.ts'

const ENV = 'DSH_TEST_PI_AI_KEY'
const KEY = 'sk-pi-test'
let server: MockServer | undefined
let ctx: Context | undefined

afterEach(async () => {
  ctx = undefined
  await server?.close()
  server = undefined
  delete process.env[ENV]
})

/** An in-memory credentials provider: the real seam class with one layer. */
class MemoryCredentials extends CredentialsService {
  constructor(
    ctx: Context,
    private readonly values: Map<string, string>,
  ) {
    super(ctx)
  }
  async get(name: string) {
    return this.values.get(name)
  }
  async describe(name: string): Promise<CredentialDescription> {
    const layer = {
      id: 'memory',
      label: 'the test memory store',
      writable: true,
      status: this.values.has(name) ? ('ok' as const) : ('absent' as const),
    }
    return {
      name,
      configured: this.values.has(name),
      source: this.values.has(name) ? layer : undefined,
      shadowed: [],
      layers: [layer],
    }
  }
  async set(name: string, value: string) {
    this.values.set(name, value)
  }
  async unset(name: string) {
    this.values.delete(name)
  }
}

async function boot(config: unknown, credentials?: Map<string, string>): Promise<Context> {
  ctx = new Context()
  await ctx.plugin(LlmService)
  if (credentials) await ctx.plugin(MemoryCredentials as never, credentials as never)
  await ctx.plugin(LlmPiAi, config as never)
  return ctx
}

const localRoute = (extra: Record<string, unknown> = {}) => ({
  provider: 'openai-compatible',
  baseURL: server!.baseURL,
  apiKeyEnv: ENV,
  models: [{ id: 'local-model', contextWindow: 32_000, reasoning: true }],
  ...extra,
})

async function local(steps: MockStep[], extra: Record<string, unknown> = {}) {
  server = await startMockServer({ steps })
  process.env[ENV] = KEY
  return boot({ routes: { local: localRoute(extra) } })
}

const request = (overrides: Partial<LlmRequest> = {}): LlmRequest => ({
  provider: 'local',
  model: 'local-model',
  system: 'You are terse.',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
  ...overrides,
})

async function collect(req: LlmRequest = request()): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of ctx!.llm.stream(req)) out.push(chunk)
  return out
}

async function failure(req: LlmRequest = request()): Promise<{ error: LlmError; chunks: StreamChunk[] }> {
  const chunks: StreamChunk[] = []
  try {
    for await (const chunk of ctx!.llm.stream(req)) chunks.push(chunk)
  } catch (error) {
    expect(LlmError.is(error)).toBe(true)
    return { error: error as LlmError, chunks }
  }
  throw new Error(`expected the stream to fail; got ${JSON.stringify(chunks)}`)
}

describe('openai-compatible route over the mock server', () => {
  it('streams text, maps usage to disjoint counts and sends a chat-completions request', async () => {
    await local([{ text: 'Hello there, friend.', usage: { prompt: 12, completion: 4, cacheHit: 8 } }])
    const chunks = await collect(request({ maxTokens: 64 }))
    const result = BlockAssembler.fold(chunks).result()
    expect(result.message.content).toEqual([{ type: 'text', text: 'Hello there, friend.' }])
    expect(result.finish).toBe('stop')
    expect(result.usage).toEqual({ input: 4, cacheRead: 8, output: 4, reasoning: 0, cacheWrite: 0 })
    expect(chunks.at(-1)).toEqual({ kind: 'finish', reason: 'stop' })
    const sent = server!.requests[0]
    expect(sent.path).toBe('/v1/chat/completions')
    expect(sent.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(sent.headers['user-agent']).toBe(userAgent())
    expect(sent.body).toMatchObject({
      model: 'local-model',
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: [{ type: 'text', text: 'hello' }] },
      ],
    })
    expect(JSON.stringify(sent.body)).toContain('64')
  })

  it('streams reasoning_content as reasoning, keeps its replay signature, and counts reasoning tokens apart', async () => {
    await local([
      { reasoning: 'Think first.', text: 'Answer.', usage: { prompt: 10, completion: 9, reasoning: 6 } },
      { text: 'Second.' },
    ])
    const chunks = await collect(request({ reasoningEffort: 'high' }))
    expect(
      chunks
        .filter((c) => c.kind === 'reasoning-delta')
        .map((c) => (c as { text: string }).text)
        .join(''),
    ).toBe('Think first.')
    const result = BlockAssembler.fold(chunks).result()
    expect(result.message.content[0]).toEqual({
      type: 'reasoning',
      text: 'Think first.',
      signature: 'reasoning_content',
    })
    expect(result.message.content[1]).toEqual({ type: 'text', text: 'Answer.' })
    expect(result.usage).toMatchObject({ input: 10, output: 3, reasoning: 6 })
    // The next request replays the reasoning through the field it came in.
    await collect(
      request({
        messages: [...request().messages, result.message, { role: 'user', content: [{ type: 'text', text: 'more' }] }],
      }),
    )
    const replayed = (server!.requests[1].body as { messages: { role: string; reasoning_content?: string }[] }).messages
    expect(replayed.find((m) => m.role === 'assistant')).toMatchObject({ reasoning_content: 'Think first.' })
  })

  it('streams split tool-call arguments with one index per call and sends results back', async () => {
    await local([
      {
        toolCalls: [
          { id: 'call_a', name: 'read', arguments: '{"path":"notes/a.txt","limit":20}', split: 4 },
          { id: 'call_b', name: 'grep', arguments: { pattern: 'x' } },
        ],
      },
      { text: 'done' },
    ])
    const tools = [
      {
        name: 'read',
        description: 'Read a file',
        parameters: { type: 'object', properties: { path: { type: 'string' } } },
      },
      {
        name: 'grep',
        description: 'Search',
        parameters: { type: 'object', properties: { pattern: { type: 'string' } } },
      },
    ]
    const chunks = await collect(request({ tools }))
    expect(chunks.filter((c) => c.kind === 'tool-call-start')).toEqual([
      { kind: 'tool-call-start', index: 0, callId: 'call_a', name: 'read' },
      { kind: 'tool-call-start', index: 1, callId: 'call_b', name: 'grep' },
    ])
    expect(chunks.filter((c) => c.kind === 'tool-call-delta' && c.index === 0).length).toBeGreaterThan(1)
    const result = BlockAssembler.fold(chunks).result()
    expect(result.finish).toBe('tool-calls')
    expect(result.message.content).toEqual([
      { type: 'tool-call', callId: 'call_a', name: 'read', arguments: '{"path":"notes/a.txt","limit":20}' },
      { type: 'tool-call', callId: 'call_b', name: 'grep', arguments: '{"pattern":"x"}' },
    ])
    expect(
      (server!.requests[0].body as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name),
    ).toEqual(['read', 'grep'])

    await collect(
      request({
        tools,
        messages: [
          ...request().messages,
          result.message,
          { role: 'tool', callId: 'call_a', name: 'read', content: [{ type: 'text', text: 'file body' }] },
          {
            role: 'tool',
            callId: 'call_b',
            name: 'grep',
            content: [{ type: 'text', text: 'no match' }],
            isError: true,
          },
        ],
      }),
    )
    const history = (
      server!.requests[1].body as { messages: { role: string; tool_call_id?: string; tool_calls?: unknown[] }[] }
    ).messages
    expect(history.find((m) => m.role === 'assistant')?.tool_calls).toHaveLength(2)
    expect(history.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(['call_a', 'call_b'])
  })

  it('maps a 429 with Retry-After to RATE_LIMIT with retryAfterMs, without retrying', async () => {
    await local([{ error: { status: 429, retryAfter: 7, message: 'Rate limit reached' } }, { text: 'never' }])
    const { error } = await failure()
    expect(error).toMatchObject({ code: 'RATE_LIMIT', status: 429, retryAfterMs: 7000, provider: 'local' })
    expect(error.message).toContain('Rate limit reached')
    expect(server!.requests).toHaveLength(1)
  })

  it('maps a 400 to BAD_REQUEST, 401 to AUTH, 503 to SERVER and an overflow sentence to CONTEXT_OVERFLOW', async () => {
    await local([
      { error: { status: 400, message: 'Invalid request: tools[0] is malformed' } },
      { error: { status: 401, message: 'Incorrect API key provided' } },
      { error: { status: 503, message: 'overloaded' } },
      {
        error: {
          status: 400,
          message:
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        },
      },
    ])
    expect((await failure()).error).toMatchObject({ code: 'BAD_REQUEST', status: 400 })
    expect((await failure()).error).toMatchObject({ code: 'AUTH', status: 401 })
    expect((await failure()).error).toMatchObject({ code: 'SERVER', status: 503 })
    expect((await failure()).error).toMatchObject({ code: 'CONTEXT_OVERFLOW', status: 400 })
    expect(server!.requests).toHaveLength(4)
  })

  it('ends a stalled stream with ABORTED when the caller aborts, and closes the connection', async () => {
    await local([{ events: [{ text: 'partial ' }, { stall: true }] }])
    const controller = new AbortController()
    const chunks: StreamChunk[] = []
    let caught: unknown
    try {
      for await (const chunk of ctx!.llm.stream(request({ signal: controller.signal }))) {
        chunks.push(chunk)
        if (chunk.kind === 'text-delta') controller.abort()
      }
    } catch (error) {
      caught = error
    }
    expect(chunks).toEqual([{ kind: 'text-delta', text: 'partial ' }])
    expect(caught).toMatchObject({ code: 'ABORTED', provider: 'local' })
    await expect.poll(() => server!.requests[0].aborted).toBe(true)
  })

  it('ends a stalled stream with TIMEOUT after streamIdleTimeoutMs of silence', async () => {
    // Long enough that the first delta always arrives before it under load (150 ms did not in a
    // loaded run: the request itself, the SDK's first use, took longer, and no delta was seen).
    await local([{ events: [{ text: 'partial ' }, { stall: true }] }], { streamIdleTimeoutMs: 1000 })
    const { error, chunks } = await failure()
    expect(error.code).toBe('TIMEOUT')
    expect(chunks).toEqual([{ kind: 'text-delta', text: 'partial ' }])
  })

  it('maps a connection reset mid-stream to TRANSPORT', async () => {
    await local([{ events: [{ text: 'par' }, { delayMs: 10 }, { reset: true }] }])
    expect((await failure()).error.code).toBe('TRANSPORT')
  })

  it('maps a content_filter finish to finish content-filter', async () => {
    await local([{ text: 'I cannot', finish: 'content_filter' }])
    const chunks = await collect()
    expect(chunks.at(-1)).toEqual({ kind: 'finish', reason: 'content-filter' })
  })

  it('reports a finished response with nothing in it as EMPTY_RESPONSE', async () => {
    await local([{ events: [], finish: 'stop' }])
    expect((await failure()).error.code).toBe('EMPTY_RESPONSE')
  })

  it('fails with MISSING_CREDENTIAL naming the variable before any request when the key is unset', async () => {
    server = await startMockServer({ steps: [{ text: 'never' }] })
    await boot({ routes: { local: localRoute() } })
    const { error } = await failure()
    expect(error.code).toBe('MISSING_CREDENTIAL')
    expect(error.message).toContain(ENV)
    expect(server.requests).toHaveLength(0)
  })

  it('rejects an unknown model with UNKNOWN_MODEL before any request', async () => {
    await local([{ text: 'never' }])
    const { error } = await failure(request({ model: 'other' }))
    expect(error.code).toBe('UNKNOWN_MODEL')
    expect(error.message).toContain('local-model')
    expect(server!.requests).toHaveLength(0)
  })

  it('sends no real key on a keyless route and adds configured headers', async () => {
    server = await startMockServer({ steps: [{ text: 'ok' }] })
    await boot({
      routes: {
        ollama: {
          provider: 'openai-compatible',
          baseURL: server.baseURL,
          headers: { 'x-tenant': 't1' },
          models: [{ id: 'llama3', contextWindow: 8192 }],
        },
      },
    })
    await collect(request({ provider: 'ollama', model: 'llama3' }))
    expect(server.requests[0].headers['x-tenant']).toBe('t1')
    expect(server.requests[0].headers.authorization).not.toContain(KEY)
  })
})

describe('pi-ai openai provider pointed at the mock server', () => {
  const openaiRoute = () => ({ provider: 'openai', baseURL: server!.baseURL, api: 'openai-completions' })

  it('inherits the pi-ai catalog, reads OPENAI_API_KEY through ctx.credentials and streams', async () => {
    server = await startMockServer({ steps: [{ text: 'From the catalog.', usage: { prompt: 5, completion: 3 } }] })
    await boot({ routes: { gpt: openaiRoute() } }, new Map([['OPENAI_API_KEY', 'sk-from-credentials']]))
    const models = await ctx!.llm.listModels('gpt')
    expect(models.find((m) => m.id === 'gpt-4o-mini')).toMatchObject({
      provider: 'gpt',
      contextWindow: 128_000,
      supportsImages: true,
    })
    const chunks = await collect(request({ provider: 'gpt', model: 'gpt-4o-mini' }))
    expect(BlockAssembler.fold(chunks).result()).toMatchObject({ finish: 'stop', usage: { input: 5, output: 3 } })
    expect(server.requests[0].path).toBe('/v1/chat/completions')
    expect(server.requests[0].headers.authorization).toBe('Bearer sk-from-credentials')
    expect(server.requests[0].body).toMatchObject({ model: 'gpt-4o-mini', stream: true })
  })

  it('overrides and adds catalog models field by field', async () => {
    server = await startMockServer({ steps: [] })
    await boot({
      routes: {
        gpt: {
          ...openaiRoute(),
          models: [
            { id: 'gpt-4o-mini', contextWindow: 1000 },
            { id: 'my-finetune', contextWindow: 4096, reasoning: true },
          ],
        },
      },
    })
    const models = await ctx!.llm.listModels('gpt')
    expect(models.find((m) => m.id === 'gpt-4o-mini')).toMatchObject({ contextWindow: 1000, maxOutputTokens: 16_384 })
    expect(models.find((m) => m.id === 'my-finetune')).toMatchObject({ contextWindow: 4096, reasoning: true })
  })

  it('fails with MISSING_CREDENTIAL naming OPENAI_API_KEY and where to set it, with no request', async () => {
    server = await startMockServer({ steps: [{ text: 'never' }] })
    const saved = process.env.OPENAI_API_KEY
    delete process.env.OPENAI_API_KEY
    try {
      await boot({ routes: { gpt: openaiRoute() } }, new Map())
      const { error } = await failure(request({ provider: 'gpt', model: 'gpt-4o-mini' }))
      expect(error.code).toBe('MISSING_CREDENTIAL')
      expect(error.message).toContain('OPENAI_API_KEY')
      expect(error.message).toContain('the test memory store')
      expect(server.requests).toHaveLength(0)
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved
    }
  })

  it('maps a 429 from the openai route with its Retry-After', async () => {
    server = await startMockServer({ steps: [{ error: { status: 429, retryAfter: 3 } }] })
    await boot({ routes: { gpt: { ...openaiRoute(), apiKeyEnv: ENV } } })
    process.env[ENV] = KEY
    const { error } = await failure(request({ provider: 'gpt', model: 'gpt-4o-mini' }))
    expect(error).toMatchObject({ code: 'RATE_LIMIT', retryAfterMs: 3000 })
    expect(server.requests).toHaveLength(1)
  })
})

describe('configuration and lifecycle', () => {
  it('is dormant without routes and unregisters its routes on unload', async () => {
    await boot({})
    expect(ctx!.llm.listProviders()).toEqual([])
    server = await startMockServer({ steps: [] })
    const fiber = ctx!.plugin(LlmPiAi, { routes: { a: localRoute(), b: localRoute() } } as never)
    await fiber
    expect(ctx!.llm.listProviders()).toEqual(['a', 'b'])
    await fiber.dispose()
    expect(ctx!.llm.listProviders()).toEqual([])
  })

  it('rejects an unknown pi-ai provider, naming the route and field and listing the known ids', async () => {
    await expect(boot({ routes: { mine: { provider: 'opnai' } } })).rejects.toThrow(
      /routes\.mine\.provider: 'opnai' is not a provider .*known: openai-compatible, .*anthropic.*openai/,
    )
  })

  it('rejects incomplete openai-compatible routes and bad field types', async () => {
    await expect(
      boot({ routes: { x: { provider: 'openai-compatible', models: [{ id: 'm', contextWindow: 10 }] } } }),
    ).rejects.toThrow(/routes\.x\.baseURL/)
    await expect(
      boot({
        routes: { x: { provider: 'openai-compatible', baseURL: 'http://127.0.0.1:1/v1', models: [{ id: 'm' }] } },
      }),
    ).rejects.toThrow(/routes\.x\.models\[0\]\.contextWindow/)
    await expect(
      boot({
        routes: { x: { provider: 'openai-compatible', baseURL: 'not a url', models: [{ id: 'm', contextWindow: 1 }] } },
      }),
    ).rejects.toThrow(/routes\.x\.baseURL/)
    await expect(boot({ routes: { x: { provider: 'openai', models: [{ id: 'not-in-catalog' }] } } })).rejects.toThrow(
      /routes\.x\.models\[0\]\.contextWindow/,
    )
    expect(() => LlmPiAi.Config({ routes: { x: { api: 'smoke-signals' } } } as never)).toThrow()
    expect(() => LlmPiAi.Config({ routes: { x: { streamIdleTimeoutMs: 0 } } } as never)).toThrow()
    expect(() => LlmPiAi.Config({ routes: { x: { apiKeyEnv: 'has space' } } } as never)).toThrow()
  })

  it('treats a route named after a pi-ai provider as that provider', async () => {
    await boot({ routes: { anthropic: {} } })
    const models = await ctx!.llm.listModels('anthropic')
    expect(models.length).toBeGreaterThan(0)
    expect(models.every((m) => m.provider === 'anthropic' && m.contextWindow > 0)).toBe(true)
  })
})
