import { createServer, globalAgent, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Context } from 'cordis'
import LlmService, { BlockAssembler, LlmError, type LlmRequest, type StreamChunk } from '@dsh/llm'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import { userAgent } from '@dsh/brand'
import * as DeepSeek from '../src/index.ts'
import { DeepSeekAdapter, createAdapter, type Config } from '../src/index.ts'
import { nodeFetch } from '../src/http.ts'

const KEY = 'sk-test-key'
let server: MockServer | undefined
let extra: Server | undefined

afterEach(async () => {
  await server?.close()
  server = undefined
  await new Promise<void>((resolve) => (extra ? extra.close(() => resolve()) : resolve()))
  extra = undefined
})

const config = (overrides: Partial<Config> = {}): Config => DeepSeek.Config(overrides)

async function serve(steps: MockStep[], overrides: Partial<Config> = {}, key: string | null = KEY) {
  server = await startMockServer({ steps })
  return createAdapter(config({ baseURL: server.baseURL, ...overrides }), () => key ?? undefined)
}

const request = (overrides: Partial<LlmRequest> = {}): LlmRequest => ({
  provider: 'deepseek-official',
  model: 'deepseek-v4-flash',
  system: 'You are terse.',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
  ...overrides,
})

async function collect(adapter: DeepSeekAdapter, req: LlmRequest = request()): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of adapter.stream(req)) out.push(chunk)
  return out
}

async function failure(
  adapter: DeepSeekAdapter,
  req: LlmRequest = request(),
): Promise<{ error: LlmError; chunks: StreamChunk[] }> {
  const chunks: StreamChunk[] = []
  try {
    for await (const chunk of adapter.stream(req)) chunks.push(chunk)
  } catch (error) {
    expect(LlmError.is(error)).toBe(true)
    return { error: error as LlmError, chunks }
  }
  throw new Error(`expected the stream to fail; got ${JSON.stringify(chunks)}`)
}

describe('DeepSeekAdapter over the mock server', () => {
  it('reads a node:http response from its node stream, never converting it to a web stream', async () => {
    // Reading `body` would load Node's web-streams internals at the first response of a process.
    const untouched: typeof fetch = async (input, init) => {
      const response = await nodeFetch(input as string, init as never)
      Object.defineProperty(response, 'body', {
        get: () => {
          throw new Error('the adapter read response.body')
        },
      })
      return response
    }
    server = await startMockServer({ steps: [{ text: 'Streamed from the node stream.' }] })
    const adapter = new DeepSeekAdapter({
      provider: 'deepseek-official',
      baseURL: server.baseURL,
      getKey: () => KEY,
      models: [],
      streamIdleTimeoutMs: 10_000,
      userAgent: 'test',
      fetch: untouched,
    } as never)
    const result = BlockAssembler.fold(await collect(adapter)).result()
    expect(result.message.content).toEqual([{ type: 'text', text: 'Streamed from the node stream.' }])
  })

  it('keeps the connection of a finished stream for the next request, and drops one a consumer abandoned', async () => {
    // Tearing the socket down after every response meant a new TCP (and TLS) handshake per turn.
    const adapter = await serve([{ text: 'one' }, { text: 'two' }, { text: 'three, left unread' }, { text: 'four' }])
    // The rest of a finished body (the chunked terminator) drains right after the stream ends;
    // then the socket waits in the agent's free list.
    const freeSocket = () =>
      vi.waitFor(() => expect(Object.values(globalAgent.freeSockets).flat().length).toBeGreaterThan(0), {
        timeout: 5_000,
        interval: 5,
      })
    await collect(adapter)
    await freeSocket()
    await collect(adapter)
    await freeSocket()
    expect(server!.requests[1].remotePort).toBe(server!.requests[0].remotePort)
    // A consumer that stops early leaves the body unread: that connection is not reused.
    for await (const chunk of adapter.stream(request())) if (chunk) break
    await collect(adapter)
    const ports = server!.requests.map((r) => r.remotePort)
    expect(ports[2]).toBe(ports[0])
    expect(ports[3]).not.toBe(ports[2])
  })

  it('streams text and sends the request DeepSeek expects', async () => {
    const adapter = await serve([{ text: 'Hello there, friend.', usage: { prompt: 12, completion: 4, cacheHit: 8 } }])
    const chunks = await collect(adapter, request({ reasoningEffort: 'high', maxTokens: 64 }))
    const result = BlockAssembler.fold(chunks).result()
    expect(result.message.content).toEqual([{ type: 'text', text: 'Hello there, friend.' }])
    expect(result.finish).toBe('stop')
    expect(result.usage).toEqual({ input: 4, cacheRead: 8, output: 4, reasoning: 0, cacheWrite: 0 })
    const sent = server!.requests[0]
    expect(sent.path).toBe('/v1/chat/completions')
    expect(sent.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(sent.headers['user-agent']).toBe(userAgent())
    expect(sent.headers['user-agent']).toMatch(/^dsh\/\d/)
    expect(sent.body).toMatchObject({
      model: 'deepseek-v4-flash',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 64,
      thinking: { type: 'enabled' },
      reasoning_effort: 'high',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'hello' },
      ],
    })
  })

  it('streams reasoning before text and splits reasoning tokens out of output', async () => {
    const adapter = await serve([
      { reasoning: 'Let me think.', text: 'Four.', usage: { prompt: 10, completion: 30, reasoning: 25 } },
    ])
    const chunks = await collect(adapter)
    expect(chunks[0]).toEqual({ kind: 'reasoning-delta', text: 'Let me think.' })
    const result = BlockAssembler.fold(chunks).result()
    expect(result.message.content).toEqual([
      { type: 'reasoning', text: 'Let me think.' },
      { type: 'text', text: 'Four.' },
    ])
    expect(result.usage).toMatchObject({ output: 5, reasoning: 25, input: 10 })
  })

  it('assembles tool-call arguments split across chunks and interleaved', async () => {
    const adapter = await serve([
      {
        events: [
          { text: 'Reading both.' },
          { toolCall: { id: 'call_1', name: 'read', arguments: '{"file_path":"README.md"}', split: 4 } },
          { toolCall: { id: 'call_2', name: 'grep', arguments: ['{"pattern":', '"TODO"'] } },
          { toolArgs: { index: 0, arguments: '' } },
          { toolArgs: { index: 1, arguments: '}' } },
        ],
      },
    ])
    const tools = [{ name: 'read', description: 'Read', parameters: { type: 'object' } }]
    const chunks = await collect(adapter, request({ tools }))
    expect(chunks.filter((c) => c.kind === 'tool-call-delta').length).toBeGreaterThan(4)
    const result = BlockAssembler.fold(chunks).result()
    expect(result.message.content).toEqual([
      { type: 'text', text: 'Reading both.' },
      { type: 'tool-call', callId: 'call_1', name: 'read', arguments: '{"file_path":"README.md"}' },
      { type: 'tool-call', callId: 'call_2', name: 'grep', arguments: '{"pattern":"TODO"}' },
    ])
    expect(result.finish).toBe('tool-calls')
    expect(server!.requests[0].body).toMatchObject({
      tools: [{ type: 'function', function: { name: 'read', description: 'Read', parameters: { type: 'object' } } }],
    })
  })

  it('takes usage from the finish chunk, from a trailing chunk, or from both', async () => {
    for (const usageOn of ['finish', 'trailing', 'both'] as const) {
      const adapter = await serve([{ text: 'ok', usageOn, usage: { prompt: 100, completion: 2, cacheHit: 60 } }])
      const chunks = await collect(adapter)
      expect(chunks.filter((c) => c.kind === 'usage')).toEqual([
        { kind: 'usage', usage: { input: 40, cacheRead: 60, output: 2, reasoning: 0, cacheWrite: 0 } },
      ])
      expect(chunks.at(-1)).toEqual({ kind: 'finish', reason: 'stop' })
      await server!.close()
    }
  })

  it('finishes on a finish reason without [DONE], and on [DONE] without a finish reason', async () => {
    let adapter = await serve([{ text: 'no done', done: false }])
    expect((await collect(adapter)).at(-1)).toEqual({ kind: 'finish', reason: 'stop' })
    await server!.close()
    adapter = await serve([{ toolCalls: [{ name: 'ls', arguments: '{}' }], finish: null }])
    expect((await collect(adapter)).at(-1)).toEqual({ kind: 'finish', reason: 'tool-calls' })
  })

  it('ignores keep-alive comments and answers length finishes', async () => {
    const adapter = await serve([
      { events: [{ keepAlive: true }, { text: 'partial' }, { keepAlive: true }], finish: 'length' },
    ])
    const result = BlockAssembler.fold(await collect(adapter)).result()
    expect(result.message.content).toEqual([{ type: 'text', text: 'partial' }])
    expect(result.finish).toBe('length')
  })

  it('keep-alive comments do not hold off the idle watchdog forever', async () => {
    const adapter = await serve([{ events: [{ forever: { keepAlive: true, intervalMs: 10 } }] }], {
      streamIdleTimeoutMs: 300,
    })
    const { error } = await failure(adapter)
    expect(error.code).toBe('TIMEOUT')
    expect(error.message).toContain('only keep-alive comments for 300 ms')
    await expect.poll(() => server!.requests[0].aborted).toBe(true)
  })

  it('gives TIMEOUT when the stream stalls', async () => {
    const adapter = await serve([{ events: [{ text: 'begin' }, { stall: true }] }], { streamIdleTimeoutMs: 100 })
    const { error, chunks } = await failure(adapter)
    expect(error.code).toBe('TIMEOUT')
    expect(error.message).toContain('100 ms')
    expect(chunks).toEqual([{ kind: 'text-delta', text: 'begin' }])
  })

  it('gives TIMEOUT when the server never answers the headers', async () => {
    extra = createServer(() => {
      // accept the request and never respond
    })
    await new Promise<void>((resolve) => extra!.listen(0, '127.0.0.1', () => resolve()))
    const port = (extra.address() as AddressInfo).port
    const adapter = createAdapter(config({ baseURL: `http://127.0.0.1:${port}`, streamIdleTimeoutMs: 100 }), () => KEY)
    expect((await failure(adapter)).error.code).toBe('TIMEOUT')
    extra.closeAllConnections()
  })

  it('maps 429 with Retry-After to RATE_LIMIT with retryAfterMs', async () => {
    const adapter = await serve([
      { error: { status: 429, retryAfter: 2, message: 'Rate limit reached' } },
      { text: 'fine now' },
    ])
    const { error } = await failure(adapter)
    expect(error).toMatchObject({ code: 'RATE_LIMIT', status: 429, retryAfterMs: 2000, provider: 'deepseek-official' })
    expect(error.message).toContain('Rate limit reached')
    // The adapter itself never retries: the next request is a separate attempt.
    expect(BlockAssembler.fold(await collect(adapter)).result().message.content).toEqual([
      { type: 'text', text: 'fine now' },
    ])
    expect(server!.requests).toHaveLength(2)
  })

  it('maps 400 to BAD_REQUEST, 401 to AUTH and 5xx to SERVER', async () => {
    const adapter = await serve([
      { error: { status: 400, message: 'Invalid tools' } },
      { error: { status: 401, message: 'Authentication Fails' } },
      { error: { status: 503, message: 'Server overloaded', retryAfter: 1 } },
      { error: { status: 400, message: "This model's maximum context length is 1048576 tokens" } },
    ])
    expect((await failure(adapter)).error).toMatchObject({ code: 'BAD_REQUEST', status: 400 })
    expect((await failure(adapter)).error).toMatchObject({ code: 'AUTH', status: 401 })
    expect((await failure(adapter)).error).toMatchObject({ code: 'SERVER', status: 503, retryAfterMs: 1000 })
    expect((await failure(adapter)).error).toMatchObject({ code: 'CONTEXT_OVERFLOW' })
  })

  it('gives PROTOCOL for a body that is not SSE', async () => {
    const adapter = await serve([
      { raw: { status: 200, contentType: 'text/html', body: '<html><body>captive portal</body></html>' } },
      { raw: { status: 200, contentType: 'text/event-stream', body: 'this is not an event stream' } },
      { raw: { status: 200, contentType: 'application/json', body: '{"choices":[]}' } },
      { events: [{ frame: 'data: {not json\n\n' }] },
    ])
    for (let i = 0; i < 4; i++) {
      const { error } = await failure(adapter)
      expect(error.code).toBe('PROTOCOL')
    }
  })

  it('gives TRANSPORT for a connection reset mid-stream, keeping the streamed prefix', async () => {
    const adapter = await serve([{ events: [{ text: 'half an answ' }, { delayMs: 50 }, { reset: true }] }])
    const { error, chunks } = await failure(adapter)
    expect(error.code).toBe('TRANSPORT')
    expect(chunks).toEqual([{ kind: 'text-delta', text: 'half an answ' }])
  })

  it('gives TRANSPORT when nothing listens', async () => {
    extra = createServer()
    await new Promise<void>((resolve) => extra!.listen(0, '127.0.0.1', () => resolve()))
    const port = (extra.address() as AddressInfo).port
    await new Promise<void>((resolve) => extra!.close(() => resolve()))
    extra = undefined
    const adapter = createAdapter(config({ baseURL: `http://127.0.0.1:${port}` }), () => KEY)
    const { error } = await failure(adapter)
    expect(error).toMatchObject({ code: 'TRANSPORT', provider: 'deepseek-official' })
    expect(error.message).toMatch(/ECONNREFUSED/)
  })

  it('gives EMPTY_RESPONSE for a finished response with no content', async () => {
    const adapter = await serve([{ events: [] }])
    expect((await failure(adapter)).error.code).toBe('EMPTY_RESPONSE')
  })

  it('gives SERVER when DeepSeek cuts the response for lack of resources', async () => {
    const adapter = await serve([{ text: 'so', finish: 'insufficient_system_resource' }])
    expect((await failure(adapter)).error.code).toBe('SERVER')
  })

  it('gives ABORTED when the caller aborts mid-stream, and closes the connection', async () => {
    const adapter = await serve([{ events: [{ text: 'first' }, { stall: true }] }])
    const controller = new AbortController()
    const chunks: StreamChunk[] = []
    let caught: unknown
    try {
      for await (const chunk of adapter.stream(request({ signal: controller.signal }))) {
        chunks.push(chunk)
        controller.abort()
      }
    } catch (error) {
      caught = error
    }
    expect(caught).toMatchObject({ code: 'ABORTED' })
    expect(chunks).toHaveLength(1)
    await expect.poll(() => server!.requests[0].aborted).toBe(true)
  })

  it('gives ABORTED while waiting on a stalled stream', async () => {
    const adapter = await serve([{ events: [{ stall: true }] }])
    const controller = new AbortController()
    const pending = failure(adapter, request({ signal: controller.signal }))
    await expect.poll(() => server!.requests.length).toBe(1)
    controller.abort()
    expect((await pending).error.code).toBe('ABORTED')
  })

  it('fails with MISSING_CREDENTIAL before any request when no key is set', async () => {
    const adapter = await serve([{ text: 'never' }], {}, null)
    const { error } = await failure(adapter)
    expect(error.code).toBe('MISSING_CREDENTIAL')
    expect(error.message).toBe(
      'DEEPSEEK_API_KEY is not set: export it, or put it in $DSH_HOME/.env or the project .env',
    )
    expect(server!.requests).toHaveLength(0)
    // The message names the configured variable.
    const other = createAdapter(config({ baseURL: server!.baseURL, apiKeyEnv: 'MY_DS_KEY' }), () => '')
    expect((await failure(other)).error.message).toMatch(/^MY_DS_KEY is not set/)
    expect(server!.requests).toHaveLength(0)
  })

  it('turns a credential lookup that throws (a file broken after start) into MISSING_CREDENTIAL, not a retried transport error', async () => {
    await serve([{ text: 'never' }])
    const broken = createAdapter(config({ baseURL: server!.baseURL }), async () => {
      throw new Error('/home/u/.dsh/.credentials.yaml:2:1: malformed credentials file')
    })
    const { error } = await failure(broken)
    expect(error.code).toBe('MISSING_CREDENTIAL')
    expect(error.message).toBe(
      'cannot read credential DEEPSEEK_API_KEY: /home/u/.dsh/.credentials.yaml:2:1: malformed credentials file',
    )
    expect(server!.requests).toHaveLength(0)
  })

  it('rejects an unconfigured model before any request, unless strictModels is off', async () => {
    let adapter = await serve([{ text: 'served' }])
    const { error } = await failure(adapter, request({ model: 'deepseek-v9' }))
    expect(error.code).toBe('UNKNOWN_MODEL')
    expect(error.message).toContain('deepseek-v4-flash, deepseek-v4-pro')
    expect(server!.requests).toHaveLength(0)
    adapter = createAdapter(config({ baseURL: server!.baseURL, strictModels: false }), () => KEY)
    await collect(adapter, request({ model: 'deepseek-v9' }))
    expect(server!.requests[0].body).toMatchObject({ model: 'deepseek-v9' })
  })

  it('sends reasoning back on assistant turns that called tools', async () => {
    const adapter = await serve([{ text: 'done', expect: { lastRole: 'tool' } }])
    await collect(
      adapter,
      request({
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'ls' }] },
          {
            role: 'assistant',
            content: [
              { type: 'reasoning', text: 'need ls' },
              { type: 'tool-call', callId: 'c1', name: 'bash', arguments: '{"command":"ls"}' },
            ],
          },
          { role: 'tool', callId: 'c1', name: 'bash', content: [{ type: 'text', text: 'x' }] },
        ],
      }),
    )
    const messages = (server!.requests[0].body as { messages: unknown[] }).messages
    expect(messages[2]).toEqual({
      role: 'assistant',
      content: null,
      reasoning_content: 'need ls',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
    })
    expect(messages[3]).toEqual({ role: 'tool', tool_call_id: 'c1', content: 'x' })
  })
})

describe('llm-deepseek plugin', () => {
  it('registers the route on ctx.llm, reads the key from the environment at request time, and unregisters on dispose', async () => {
    server = await startMockServer({ steps: [{ text: 'from the plugin' }] })
    const ctx = new Context()
    await ctx.plugin(LlmService)
    const env = 'DSH_TEST_DEEPSEEK_KEY'
    delete process.env[env]
    const fiber = ctx.plugin(DeepSeek, { baseURL: server.baseURL, apiKeyEnv: env })
    await fiber
    expect(ctx.llm.listProviders()).toContain('deepseek-official')
    expect((await ctx.llm.listModels('deepseek-official')).map((m) => m.id)).toEqual([
      'deepseek-v4-flash',
      'deepseek-v4-pro',
    ])
    await expect(ctx.llm.complete(request())).rejects.toMatchObject({ code: 'MISSING_CREDENTIAL' })
    expect(server.requests).toHaveLength(0)
    process.env[env] = 'sk-late'
    try {
      const result = await ctx.llm.complete(request())
      expect(result.message.content).toEqual([{ type: 'text', text: 'from the plugin' }])
      expect(server.requests[0].headers.authorization).toBe('Bearer sk-late')
    } finally {
      delete process.env[env]
    }
    await fiber.dispose()
    expect(ctx.llm.listProviders()).not.toContain('deepseek-official')
  })

  it('resolves the base URL from config, then $DEEPSEEK_BASE_URL, then the public API', () => {
    expect(DeepSeek.resolveBaseURL({ baseURL: 'http://a/v1' }, { DEEPSEEK_BASE_URL: 'http://b' })).toBe('http://a/v1')
    expect(DeepSeek.resolveBaseURL({}, { DEEPSEEK_BASE_URL: 'http://b' })).toBe('http://b')
    expect(DeepSeek.resolveBaseURL({}, {})).toBe('https://api.deepseek.com')
    expect(createAdapter(config({ baseURL: 'http://a/v1/' })).endpoint).toBe('http://a/v1/chat/completions')
  })

  it('rejects bad config', () => {
    expect(() => DeepSeek.Config({ streamIdleTimeoutMs: -1 } as never)).toThrow()
    expect(() => DeepSeek.Config({ models: [{ id: 'x' }] } as never)).toThrow()
    expect(() => DeepSeek.Config({ provider: 3 } as never)).toThrow()
  })
})
