// The adapter recipe against @dsh/llm-mock-server (real HTTP, the OpenAI/DeepSeek SSE wire format),
// through the real ctx.llm service, and on a whole agent loop.
import { Context } from 'cordis'
import { afterEach, expect, it } from 'vitest'
import LlmService, { type LlmRequest, type StreamChunk } from '@dsh/llm'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import * as adapter from '../index.ts'

let mock: MockServer | undefined
afterEach(async () => mock?.close())

async function withAdapter(config: Partial<adapter.Config>) {
  const ctx = new Context()
  await ctx.plugin(LlmService)
  const fiber = ctx.plugin(adapter, { baseURL: mock!.baseURL, ...config } as adapter.Config)
  await fiber
  return { ctx, fiber }
}

async function collect(stream: AsyncIterable<StreamChunk>) {
  const out: StreamChunk[] = []
  for await (const c of stream) out.push(c)
  return out
}

const request = (extra: Partial<LlmRequest> = {}): LlmRequest => ({
  provider: 'openai-compatible',
  model: 'deepseek-v4-flash',
  system: 'be brief',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  ...extra,
})

it('streams text, a tool call and usage from the wire, and sends the key from the named variable', async () => {
  mock = await startMockServer({
    steps: [
      {
        text: 'Hel',
        toolCalls: [{ id: 'c1', name: 'read', arguments: { path: 'a.txt' }, split: 3 }],
        usage: { prompt: 10, completion: 4 },
      },
    ] as never,
  })
  process.env.COOKBOOK_TEST_KEY = 'sk-cookbook'
  const { ctx } = await withAdapter({ apiKeyEnv: 'COOKBOOK_TEST_KEY' })
  const chunks = await collect(
    ctx.llm.stream(request({ tools: [{ name: 'read', description: 'r', parameters: { type: 'object' } }] })),
  )
  expect(
    chunks
      .filter((c) => c.kind === 'text-delta')
      .map((c) => (c as { text: string }).text)
      .join(''),
  ).toBe('Hel')
  expect(chunks).toContainEqual({ kind: 'tool-call-start', index: 0, callId: 'c1', name: 'read' })
  const args = chunks
    .filter((c) => c.kind === 'tool-call-delta')
    .map((c) => (c as { argumentsDelta: string }).argumentsDelta)
    .join('')
  expect(JSON.parse(args)).toEqual({ path: 'a.txt' })
  expect(chunks).toContainEqual({ kind: 'finish', reason: 'tool-calls' })
  expect(chunks.find((c) => c.kind === 'usage')).toMatchObject({ usage: { output: 4 } })
  const sent = mock.requests[0]
  expect(sent.headers.authorization).toBe('Bearer sk-cookbook')
  expect((sent.body as { messages: { role: string }[] }).messages.map((m) => m.role)).toEqual(['system', 'user'])
})

it('maps an HTTP failure and a missing key to LlmError codes, and unloading removes the route', async () => {
  mock = await startMockServer({ steps: [{ error: { status: 503, message: 'overloaded' } }] as never })
  const { ctx, fiber } = await withAdapter({})
  await expect(collect(ctx.llm.stream(request()))).rejects.toMatchObject({
    name: 'LlmError',
    code: 'SERVER',
    status: 503,
  })
  delete process.env.COOKBOOK_MISSING
  const other = ctx.plugin(adapter, {
    baseURL: mock.baseURL,
    route: 'keyed',
    apiKeyEnv: 'COOKBOOK_MISSING',
  } as adapter.Config)
  await other
  await expect(collect(ctx.llm.stream(request({ provider: 'keyed' })))).rejects.toMatchObject({
    code: 'MISSING_CREDENTIAL',
  })
  await fiber.dispose()
  await expect(collect(ctx.llm.stream(request()))).rejects.toMatchObject({ code: 'UNKNOWN_PROVIDER' })
})
