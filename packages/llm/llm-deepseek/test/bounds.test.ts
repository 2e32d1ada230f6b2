// Item 9 of issue #14: an endless or huge response is cut off after a bounded read with its own
// code, and a whole request has a deadline. Item 5: a provider error echoing the key is redacted.
import { afterEach, describe, expect, it } from 'vitest'
import { LlmError, REDACTED, type LlmRequest, type StreamChunk } from '@dsh/llm'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import * as DeepSeek from '../src/index.ts'
import { createAdapter, type Config, type DeepSeekAdapter } from '../src/index.ts'

const KEY = 'sk-bounds-0123456789abcdefghij'
const MiB = 1024 * 1024
let server: MockServer | undefined

afterEach(async () => {
  await server?.close()
  server = undefined
})

async function serve(steps: MockStep[], overrides: Partial<Config> = {}): Promise<DeepSeekAdapter> {
  server = await startMockServer({ steps })
  return createAdapter(DeepSeek.Config({ baseURL: server.baseURL, ...overrides }), () => KEY)
}

const request: LlmRequest = {
  provider: 'deepseek-official',
  model: 'deepseek-v4-flash',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
}

async function failure(adapter: DeepSeekAdapter): Promise<{ error: LlmError; chunks: StreamChunk[] }> {
  const chunks: StreamChunk[] = []
  try {
    for await (const chunk of adapter.stream(request)) chunks.push(chunk)
  } catch (error) {
    expect(LlmError.is(error)).toBe(true)
    return { error: error as LlmError, chunks }
  }
  throw new Error(`expected the stream to fail; got ${chunks.length} chunks`)
}

describe('DeepSeek response bounds', () => {
  it('an endless stream of text ends with RESPONSE_TOO_LARGE after a bounded read', async () => {
    const adapter = await serve([{ events: [{ forever: { text: 'and on ' } }] }], { maxResponseBytes: 256 * 1024 })
    const { error, chunks } = await failure(adapter)
    expect(error.code).toBe('RESPONSE_TOO_LARGE')
    expect(error.provider).toBe('deepseek-official')
    expect(error.message).toContain('maxResponseBytes')
    // Only what fits in the cap reached the consumer (each frame is ~200 bytes on the wire).
    expect(chunks.length).toBeGreaterThan(100)
    expect(chunks.length).toBeLessThan((256 * 1024) / 100)
    await expect.poll(() => server!.requests[0].aborted).toBe(true)
    // The server was stopped after the cap plus what socket buffers held, not left streaming.
    const sent = server!.requests[0].bytesWritten
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(server!.requests[0].bytesWritten).toBe(sent)
    expect(sent).toBeLessThan(32 * MiB)
  })

  it('decodes characters split across body chunks, and the cap counts bytes', async () => {
    const frame = (content: string, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'deepseek-v4-flash', choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`
    const wire = Buffer.from(frame('héllo 中文 🎉') + frame('', 'stop') + 'data: [DONE]\n\n')
    // One byte per chunk: every multi-byte character arrives in pieces.
    const fetchBytes = (async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            for (const byte of wire) controller.enqueue(Uint8Array.of(byte))
            controller.close()
          },
        }),
        { status: 200, headers: { 'content-type': 'text/event-stream' } },
      )) as unknown as typeof fetch
    const options = (maxResponseBytes?: number) => ({
      provider: 'deepseek-official',
      baseURL: 'http://127.0.0.1:9/v1',
      getKey: () => KEY,
      models: [],
      streamIdleTimeoutMs: 10_000,
      userAgent: 'test',
      fetch: fetchBytes,
      ...(maxResponseBytes ? { maxResponseBytes } : {}),
    })
    const adapter = new DeepSeek.DeepSeekAdapter(options() as never)
    let text = ''
    for await (const chunk of adapter.stream(request)) if (chunk.kind === 'text-delta') text += chunk.text
    expect(text).toBe('héllo 中文 🎉')
    const capped = new DeepSeek.DeepSeekAdapter(options(wire.length - 1) as never)
    expect((await failure(capped)).error.code).toBe('RESPONSE_TOO_LARGE')
  })

  it('one huge SSE body is cut at the cap, not read whole', async () => {
    const total = 64 * MiB
    const adapter = await serve(
      [{ raw: { status: 200, contentType: 'text/event-stream', body: 'x'.repeat(64 * 1024), repeat: 1024 } }],
      {
        maxResponseBytes: MiB,
      },
    )
    const { error } = await failure(adapter)
    expect(error.code).toBe('RESPONSE_TOO_LARGE')
    await expect.poll(() => server!.requests[0].aborted).toBe(true)
    expect(server!.requests[0].bytesWritten).toBeLessThan(total / 2)
  })

  it('a huge error body is read only in part and still classified by its status', async () => {
    const total = 64 * MiB
    const adapter = await serve([
      { raw: { status: 500, contentType: 'text/plain', body: 'e'.repeat(64 * 1024), repeat: 1024 } },
    ])
    const { error } = await failure(adapter)
    expect(error.code).toBe('SERVER')
    expect(error.message.length).toBeLessThan(1000)
    await expect.poll(() => server!.requests[0].aborted).toBe(true)
    expect(server!.requests[0].bytesWritten).toBeLessThan(total / 2)
  })

  it('a response still streaming at requestTimeoutMs ends with DEADLINE_EXCEEDED', async () => {
    const adapter = await serve([{ events: [{ forever: { text: 'slow ', intervalMs: 20 } }] }], {
      requestTimeoutMs: 400,
    })
    const { error, chunks } = await failure(adapter)
    expect(error.code).toBe('DEADLINE_EXCEEDED')
    expect(error.message).toContain('400 ms (requestTimeoutMs)')
    expect(chunks.length).toBeGreaterThan(0)
    await expect.poll(() => server!.requests[0].aborted).toBe(true)
  })

  it('data chunks that carry nothing end in TIMEOUT at streamIdleTimeoutMs', async () => {
    // Issue #35: empty deltas, empty content and empty choice lists do not refill the idle budget.
    const adapter = await serve([{ events: [{ forever: { empty: true, intervalMs: 10 } }] }], {
      streamIdleTimeoutMs: 300,
      requestTimeoutMs: 20_000,
    })
    const { error, chunks } = await failure(adapter)
    expect(error.code).toBe('TIMEOUT')
    expect(error.message).toBe('DeepSeek sent only chunks without content for 300 ms (streamIdleTimeoutMs)')
    expect(chunks).toEqual([])
    await expect.poll(() => server!.requests[0].aborted).toBe(true)
    expect(server!.requests[0].bytesWritten).toBeGreaterThan(1000)
  })

  it('a stream of text slower than nothing-for-the-budget but steady completes', async () => {
    // Positive control for the rule above: each real delta refills the budget, so a response
    // longer than streamIdleTimeoutMs with empty chunks in between still ends normally. The whole
    // response (2.5 s) outlasts the budget (2 s), while real deltas come 0.5 s apart: a margin of
    // 1.5 s, wide enough for a loaded machine's scheduling noise.
    const empty = { frame: 'data: {"choices":[{"index":0,"delta":{}}]}\n\n' }
    const adapter = await serve(
      [
        {
          events: [
            { text: 'a' },
            ...['b', 'c', 'd', 'e', 'f'].flatMap((letter) => [
              { delayMs: 250 },
              empty,
              { delayMs: 250 },
              { text: letter },
            ]),
          ],
        },
      ],
      { streamIdleTimeoutMs: 2000 },
    )
    const text: string[] = []
    for await (const chunk of adapter.stream(request)) if (chunk.kind === 'text-delta') text.push(chunk.text)
    expect(text.join('')).toBe('abcdef')
  })

  it('the new config fields have defaults and reject bad values', () => {
    const config = DeepSeek.Config({})
    expect(config.maxResponseBytes).toBe(256 * MiB)
    expect(config.requestTimeoutMs).toBe(3_600_000)
    expect(() => DeepSeek.Config({ maxResponseBytes: 0 })).toThrow()
    expect(() => DeepSeek.Config({ requestTimeoutMs: -1 })).toThrow()
  })
})

describe('DeepSeek key redaction', () => {
  it('a 401 body that echoes the Authorization header does not carry the key out', async () => {
    const adapter = await serve([{ error: { status: 401, message: 'Authentication Fails', echoHeaders: true } }])
    const { error } = await failure(adapter)
    expect(error.code).toBe('AUTH')
    expect(error.status).toBe(401)
    expect(server!.requests[0].headers.authorization).toBe(`Bearer ${KEY}`)
    expect(error.message).toContain(`Bearer ${REDACTED}`)
    expect(error.message).not.toContain(KEY)
    expect(String(error.stack)).not.toContain(KEY)
    expect(JSON.stringify(error)).not.toContain(KEY)
  })
})
