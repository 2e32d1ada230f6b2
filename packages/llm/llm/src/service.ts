import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { BlockAssembler, type AssembledResponse } from './assembler.ts'
import { redactError, secretList } from './redact.ts'
import { LlmError, type LlmAdapter, type LlmRequest, type ModelInfo, type StreamChunk } from './types.ts'

declare module 'cordis' {
  interface Context {
    llm: LlmService
  }
  interface Events {
    /**
     * Every model call passes through here. The terminal routes to the adapter registered for
     * `request.provider`; a listener may transform the returned stream (`return wrap(next())`) or
     * short-circuit it (return its own stream without calling `next`), e.g. a replay or a test.
     */
    'llm/stream'(request: LlmRequest, next: () => AsyncIterable<StreamChunk>): AsyncIterable<StreamChunk>
  }
}

/**
 * `ctx.llm`: routes requests by `provider` to registered adapters.
 *
 * Methods must be called through a context (`ctx.llm.x()`): Cordis then binds `this.ctx` to the
 * caller, so an adapter registered from a plugin is unregistered when that plugin unloads.
 */
export class LlmService extends Service {
  static Config: Schema<LlmService.Config> = Schema.object({})

  // Shared by every caller view of the service; never reassigned (caller views are shadows).
  private readonly adapters = new Map<string, LlmAdapter>()
  /** Secret values adapters reported using (API keys); scrubbed from every stream error. */
  private readonly secrets = new Set<string>()

  constructor(ctx: Context, _config: LlmService.Config = {}) {
    super(ctx, 'llm')
  }

  /**
   * Registers `adapter` for its `provider` route. Throws if the route is taken. The registration
   * is an effect of the calling plugin: undone by the returned disposer or when that plugin unloads.
   */
  registerAdapter(adapter: LlmAdapter): () => void {
    if (!adapter || typeof adapter.stream !== 'function' || typeof adapter.listModels !== 'function') {
      throw new TypeError('llm.registerAdapter: an adapter needs stream() and listModels()')
    }
    const route = adapter.provider
    if (typeof route !== 'string' || route === '') {
      throw new TypeError('llm.registerAdapter: adapter.provider must be a non-empty string')
    }
    if (this.adapters.has(route)) {
      throw new Error(`llm.registerAdapter: provider route '${route}' is already registered`)
    }
    const adapters = this.adapters
    const dispose = this.ctx.effect(() => {
      adapters.set(route, adapter)
      return () => {
        if (adapters.get(route) === adapter) adapters.delete(route)
      }
    }, `llm.adapter(${route})`)
    return () => void dispose()
  }

  /** Registered provider routes, sorted. */
  listProviders(): string[] {
    return [...this.adapters.keys()].sort()
  }

  /** The adapter for `provider`, if any (for diagnostics; callers should use `stream`). */
  getAdapter(provider: string): LlmAdapter | undefined {
    return this.adapters.get(provider)
  }

  /**
   * Streams one response through the `llm/stream` waterfall. Errors, including
   * `UNKNOWN_PROVIDER`, surface while iterating, never from this call itself.
   */
  stream(request: LlmRequest): AsyncIterable<StreamChunk> {
    return this.redacting(this.ctx.waterfall('llm/stream', request, () => this.route(request)))
  }

  /**
   * Adds a secret value (e.g. the API key an adapter just sent) to those scrubbed from every
   * error leaving `stream`. Values shorter than `MIN_SECRET_LENGTH` are ignored. Never logged.
   */
  rememberSecret(value: string | undefined): void {
    if (typeof value === 'string' && value.trim() !== '') this.secrets.add(value.trim())
  }

  /**
   * Every secret value known to this process: those remembered by adapters plus the values of
   * `ctx.credentials` (via its optional `knownValues()`), when that service is mounted.
   */
  async knownSecrets(): Promise<string[]> {
    const values: string[] = [...this.secrets]
    const credentials = this.ctx.get('credentials') as SecretHolder | undefined
    if (credentials && typeof credentials.knownValues === 'function') {
      try {
        values.push(...(await credentials.knownValues()))
      } catch {
        // A credentials layer that cannot be read holds nothing we could have printed.
      }
    }
    return secretList(values)
  }

  /**
   * The choke point where provider failures enter the rest of the system: any error raised while
   * iterating `inner` is rethrown with every known secret value replaced by `[REDACTED]`.
   */
  private redacting(inner: AsyncIterable<StreamChunk>): AsyncIterable<StreamChunk> {
    const service = this
    return {
      async *[Symbol.asyncIterator]() {
        try {
          yield* inner
        } catch (error) {
          throw redactError(error, await service.knownSecrets())
        }
      },
    }
  }

  /** `stream` folded by a BlockAssembler. */
  async complete(request: LlmRequest): Promise<AssembledResponse> {
    const assembler = new BlockAssembler()
    for await (const chunk of this.stream(request)) assembler.push(chunk)
    return assembler.result()
  }

  /** The adapter's catalog. Throws `UNKNOWN_PROVIDER` for an unregistered route. */
  async listModels(provider: string): Promise<ModelInfo[]> {
    const adapter = this.adapters.get(provider)
    if (!adapter) throw this.unknownProvider(provider)
    return [...(await adapter.listModels())]
  }

  /**
   * Resolves what a user types for a model, `MODEL` or `PROVIDER/MODEL`, against the registered
   * routes (a bare model, or a prefix that is not a route, uses `defaultProvider`). Rejects with an
   * `LlmError` (`UNKNOWN_PROVIDER` / `UNKNOWN_MODEL`) whose message names what is registered, for
   * surfaces to wrap in their own error shape.
   */
  async resolveModelSpec(spec: string, defaultProvider?: string): Promise<{ provider: string; model: string }> {
    const providers = this.listProviders()
    const slash = spec.indexOf('/')
    let provider = defaultProvider
    let model = spec
    if (slash > 0 && providers.includes(spec.slice(0, slash))) {
      provider = spec.slice(0, slash)
      model = spec.slice(slash + 1)
    }
    if (!provider || !providers.includes(provider)) {
      throw new LlmError(
        'UNKNOWN_PROVIDER',
        `no provider route '${provider ?? '?'}'; registered: ${providers.join(', ') || '(none)'}`,
        { provider },
      )
    }
    if (!(await this.resolveModelInfo(provider, model))) {
      const known = (await this.listModels(provider).catch(() => [])).map((m) => m.id)
      throw new LlmError(
        'UNKNOWN_MODEL',
        `provider '${provider}' has no model '${model}'; known: ${known.join(', ') || '(none)'}`,
        { provider },
      )
    }
    return { provider, model }
  }

  /** The catalog entry for `model` on `provider`; undefined for an unknown model or provider. */
  async resolveModelInfo(provider: string, model: string): Promise<ModelInfo | undefined> {
    const adapter = this.adapters.get(provider)
    if (!adapter) return undefined
    const models = await adapter.listModels()
    return models.find((info) => info.id === model)
  }

  private route(request: LlmRequest): AsyncIterable<StreamChunk> {
    const adapter = this.adapters.get(request.provider)
    if (adapter) return adapter.stream(request)
    const error = this.unknownProvider(request.provider)
    return {
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.reject(error),
      }),
    }
  }

  private unknownProvider(provider: string): LlmError {
    const known = this.listProviders()
    return new LlmError(
      'UNKNOWN_PROVIDER',
      `no adapter for provider '${provider}'; registered: ${known.length ? known.join(', ') : '(none)'}`,
      { provider },
    )
  }
}

/** The part of `ctx.credentials` (@dsh/credentials) the redaction reads, typed here to avoid the dependency. */
interface SecretHolder {
  knownValues?(): Promise<string[]>
}

export namespace LlmService {
  // No options yet; the schema exists so a profile row can carry `config: {}` and be validated.
  export type Config = {}
}
