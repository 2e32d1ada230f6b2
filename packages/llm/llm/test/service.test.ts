import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import LlmService, { LlmError, type LlmAdapter, type LlmRequest, type StreamChunk } from '../src/index.ts'

function scriptedAdapter(provider: string, text: string, seen: LlmRequest[] = []): LlmAdapter {
  return {
    provider,
    async *stream(request) {
      seen.push(request)
      yield { kind: 'text-delta', text }
      yield { kind: 'usage', usage: { input: 3, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 } }
      yield { kind: 'finish', reason: 'stop' }
    },
    listModels: () => [
      { provider, id: `${provider}-small`, contextWindow: 1000 },
      { provider, id: `${provider}-large`, contextWindow: 9000, reasoning: true },
    ],
  }
}

async function boot() {
  const root = new Context()
  await root.plugin(LlmService)
  return root
}

const request = (provider: string): LlmRequest => ({
  provider,
  model: 'm',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
})

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of stream) out.push(chunk)
  return out
}

async function rejection(promise: Promise<unknown>): Promise<LlmError> {
  try {
    await promise
  } catch (error) {
    expect(LlmError.is(error)).toBe(true)
    return error as LlmError
  }
  throw new Error('expected a rejection')
}

describe('LlmService', () => {
  it('routes by provider and completes through the BlockAssembler', async () => {
    const root = await boot()
    const seenA: LlmRequest[] = []
    root.llm.registerAdapter(scriptedAdapter('alpha', 'from alpha', seenA))
    root.llm.registerAdapter(scriptedAdapter('beta', 'from beta'))
    expect(root.llm.listProviders()).toEqual(['alpha', 'beta'])

    const result = await root.llm.complete(request('beta'))
    expect(result).toEqual({
      message: { role: 'assistant', content: [{ type: 'text', text: 'from beta' }] },
      usage: { input: 3, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
      finish: 'stop',
    })
    const chunks = await collect(root.llm.stream(request('alpha')))
    expect(chunks[0]).toEqual({ kind: 'text-delta', text: 'from alpha' })
    expect(seenA).toHaveLength(1)
  })

  it('lists and resolves models per provider', async () => {
    const root = await boot()
    root.llm.registerAdapter(scriptedAdapter('alpha', 'x'))
    expect((await root.llm.listModels('alpha')).map((m) => m.id)).toEqual(['alpha-small', 'alpha-large'])
    expect(await root.llm.resolveModelInfo('alpha', 'alpha-large')).toMatchObject({
      contextWindow: 9000,
      reasoning: true,
    })
    expect(await root.llm.resolveModelInfo('alpha', 'nope')).toBeUndefined()
    expect(await root.llm.resolveModelInfo('ghost', 'alpha-large')).toBeUndefined()
    const error = await rejection(root.llm.listModels('ghost'))
    expect(error.code).toBe('UNKNOWN_PROVIDER')
  })

  it('resolves a typed model spec: MODEL on the default route, PROVIDER/MODEL, and names what exists when wrong', async () => {
    const root = await boot()
    root.llm.registerAdapter(scriptedAdapter('alpha', 'x'))
    root.llm.registerAdapter(scriptedAdapter('org/beta', 'x'))
    expect(await root.llm.resolveModelSpec('alpha-large', 'alpha')).toEqual({ provider: 'alpha', model: 'alpha-large' })
    expect(await root.llm.resolveModelSpec('alpha/alpha-small')).toEqual({ provider: 'alpha', model: 'alpha-small' })
    // A slash that is not a route prefix is part of a model id on the default route.
    await expect(root.llm.resolveModelSpec('vendor/alpha-small', 'alpha')).rejects.toMatchObject({
      code: 'UNKNOWN_MODEL',
      message: "provider 'alpha' has no model 'vendor/alpha-small'; known: alpha-small, alpha-large",
    })
    await expect(root.llm.resolveModelSpec('alpha-small')).rejects.toMatchObject({
      code: 'UNKNOWN_PROVIDER',
      message: "no provider route '?'; registered: alpha, org/beta",
    })
    await expect(root.llm.resolveModelSpec('x', 'gamma')).rejects.toBeInstanceOf(LlmError)
  })

  it('throws on a duplicate provider route and frees the route on dispose', async () => {
    const root = await boot()
    const dispose = root.llm.registerAdapter(scriptedAdapter('alpha', 'one'))
    expect(() => root.llm.registerAdapter(scriptedAdapter('alpha', 'two'))).toThrow(
      /provider route 'alpha' is already registered/,
    )
    dispose()
    expect(root.llm.listProviders()).toEqual([])
    root.llm.registerAdapter(scriptedAdapter('alpha', 'two'))
    expect((await root.llm.complete(request('alpha'))).message.content).toEqual([{ type: 'text', text: 'two' }])
  })

  it('rejects a malformed adapter', async () => {
    const root = await boot()
    expect(() => root.llm.registerAdapter({ provider: '', stream: () => [] as never, listModels: () => [] })).toThrow(
      TypeError,
    )
    expect(() => root.llm.registerAdapter({ provider: 'x' } as unknown as LlmAdapter)).toThrow(
      /stream\(\) and listModels\(\)/,
    )
  })

  it('fails an unknown provider with UNKNOWN_PROVIDER naming the registered routes', async () => {
    const root = await boot()
    root.llm.registerAdapter(scriptedAdapter('beta', 'x'))
    root.llm.registerAdapter(scriptedAdapter('alpha', 'x'))
    const stream = root.llm.stream(request('gamma')) // does not throw synchronously
    const error = await rejection(collect(stream))
    expect(error.code).toBe('UNKNOWN_PROVIDER')
    expect(error.message).toBe("no adapter for provider 'gamma'; registered: alpha, beta")
    expect(error.provider).toBe('gamma')

    const empty = await boot()
    expect((await rejection(empty.llm.complete(request('gamma')))).message).toBe(
      "no adapter for provider 'gamma'; registered: (none)",
    )
  })

  it('lets a prepended llm/stream listener short-circuit without any adapter', async () => {
    const root = await boot()
    const seen: string[] = []
    root.on(
      'llm/stream',
      async function* (req) {
        seen.push(req.provider)
        yield { kind: 'text-delta', text: 'intercepted' }
        yield { kind: 'finish', reason: 'stop' }
      },
      { prepend: true },
    )
    const result = await root.llm.complete(request('nobody-registered-this'))
    expect(result.message.content).toEqual([{ type: 'text', text: 'intercepted' }])
    expect(seen).toEqual(['nobody-registered-this'])
  })

  it('lets a listener observe and transform the adapter stream through next()', async () => {
    const root = await boot()
    root.llm.registerAdapter(scriptedAdapter('alpha', 'lower'))
    root.on('llm/stream', (req, next) => {
      req.metadata = { ...req.metadata, tagged: true }
      const inner = next()
      return (async function* () {
        for await (const chunk of inner)
          yield chunk.kind === 'text-delta' ? { ...chunk, text: chunk.text.toUpperCase() } : chunk
      })()
    })
    const seen: LlmRequest[] = []
    root.llm.registerAdapter(scriptedAdapter('beta', 'beta', seen))
    const result = await root.llm.complete(request('alpha'))
    expect(result.message.content).toEqual([{ type: 'text', text: 'LOWER' }])
    await root.llm.complete(request('beta'))
    expect(seen[0].metadata).toEqual({ tagged: true })
  })

  it('unregisters an adapter when the plugin that registered it unloads', async () => {
    const root = await boot()
    const fiber = root.plugin({
      name: 'adapter-plugin',
      inject: ['llm'],
      apply(ctx: Context) {
        ctx.llm.registerAdapter(scriptedAdapter('plugged', 'hello'))
      },
    })
    await fiber
    expect(root.llm.listProviders()).toEqual(['plugged'])
    expect((await root.llm.complete(request('plugged'))).message.content).toEqual([{ type: 'text', text: 'hello' }])
    await fiber.dispose()
    expect(root.llm.listProviders()).toEqual([])
    expect((await rejection(root.llm.complete(request('plugged')))).code).toBe('UNKNOWN_PROVIDER')
    // The route is free again.
    root.llm.registerAdapter(scriptedAdapter('plugged', 'again'))
    expect(root.llm.listProviders()).toEqual(['plugged'])
  })

  it('removes an interception listener with its plugin', async () => {
    const root = await boot()
    root.llm.registerAdapter(scriptedAdapter('alpha', 'real'))
    const fiber = root.plugin({
      name: 'interceptor',
      apply(ctx: Context) {
        ctx.on(
          'llm/stream',
          async function* () {
            yield { kind: 'text-delta', text: 'fake' } satisfies StreamChunk
          },
          { prepend: true },
        )
      },
    })
    await fiber
    expect((await root.llm.complete(request('alpha'))).message.content).toEqual([{ type: 'text', text: 'fake' }])
    await fiber.dispose()
    expect((await root.llm.complete(request('alpha'))).message.content).toEqual([{ type: 'text', text: 'real' }])
  })
})
