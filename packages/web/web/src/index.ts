// @dsh/web: the web capability seam (`ctx.web`). Providers register fetch and search backends;
// consumers (tool-web) call `fetch()` and `search()` without knowing which vendor answers. The
// choice is an explicit `resolve*Provider()` step driven by this row's config. No I/O here.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import {
  WebError,
  type WebCallOptions,
  type WebFetchProvider,
  type WebFetchRequest,
  type WebFetchResult,
  type WebSearchProvider,
  type WebSearchRequest,
  type WebSearchResult,
  type ProviderStatus,
} from './types.ts'

export * from './types.ts'

declare module 'cordis' {
  interface Context {
    web: WebRuntime
  }
}

export interface WebRuntimeConfig {
  /** `auto` or a provider id. */
  search: string
  /** Preference of `auto` among ready search providers; unlisted ones follow in registration order. */
  searchOrder: string[]
  /** `auto` (the first registered) or a provider id. */
  fetch: string
}

export interface SearchProviderInfo {
  id: string
  status: ProviderStatus
}

export class WebRuntime extends Service {
  static Config: Schema<Partial<WebRuntimeConfig>, WebRuntimeConfig> = Schema.object({
    search: Schema.string()
      .default('auto')
      .description('Search provider id, or `auto`: the first ready one in `searchOrder`.'),
    searchOrder: Schema.array(Schema.string())
      .default(['deepseek', 'exa', 'perplexity'])
      .description('Preference of `auto` among ready search providers.'),
    fetch: Schema.string().default('auto').description('Fetch provider id, or `auto`: the first registered.'),
  }) as Schema<Partial<WebRuntimeConfig>, WebRuntimeConfig>

  private readonly fetchers = new Map<string, WebFetchProvider>()
  private readonly searchers = new Map<string, WebSearchProvider>()

  constructor(
    ctx: Context,
    readonly config: WebRuntimeConfig,
  ) {
    super(ctx, 'web')
  }

  /** Adds a fetch provider until the calling plugin unloads (or the disposer runs). A duplicate id throws. */
  registerFetchProvider(provider: WebFetchProvider): () => void {
    return this.register(this.fetchers, provider, 'fetch')
  }

  /** Adds a search provider until the calling plugin unloads (or the disposer runs). A duplicate id throws. */
  registerSearchProvider(provider: WebSearchProvider): () => void {
    return this.register(this.searchers, provider, 'search')
  }

  private register<P extends { id: string }>(table: Map<string, P>, provider: P, kind: string): () => void {
    if (!provider.id) throw new TypeError(`a web ${kind} provider needs an id`)
    if (table.has(provider.id)) throw new Error(`web ${kind} provider "${provider.id}" is already registered`)
    // `this.ctx` is the caller's context (Cordis binds service access to the accessing plugin),
    // so the effect unwinds with the registering plugin.
    return this.ctx.effect(
      () => {
        table.set(provider.id, provider)
        return () => {
          if (table.get(provider.id) === provider) table.delete(provider.id)
        }
      },
      `web.register${kind === 'fetch' ? 'Fetch' : 'Search'}Provider(${provider.id})`,
    )
  }

  fetchProviderIds(): string[] {
    return [...this.fetchers.keys()]
  }

  /** Every registered search provider with its readiness, in registration order. */
  async searchProviders(): Promise<SearchProviderInfo[]> {
    return Promise.all([...this.searchers.values()].map(async (p) => ({ id: p.id, status: await safeStatus(p) })))
  }

  /** The fetch provider a call would use, or a `NO_PROVIDER` error. */
  resolveFetchProvider(): WebFetchProvider {
    const wanted = this.config.fetch
    if (wanted !== 'auto') {
      const provider = this.fetchers.get(wanted)
      if (!provider)
        throw new WebError(
          'NO_PROVIDER',
          `web fetch provider "${wanted}" (the web row's \`fetch\`) is not mounted; mounted: ${list(this.fetchers.keys())}.`,
        )
      return provider
    }
    const first = this.fetchers.values().next()
    if (first.done)
      throw new WebError(
        'NO_PROVIDER',
        'web fetch is not available: no fetch provider is mounted (add a @dsh/web-fetch-http row).',
      )
    return first.value
  }

  /** The search provider a call would use: the configured one, or the first ready one; else a clear error. */
  async resolveSearchProvider(): Promise<WebSearchProvider> {
    const wanted = this.config.search
    if (wanted !== 'auto') {
      const provider = this.searchers.get(wanted)
      if (!provider)
        throw new WebError(
          'NO_PROVIDER',
          `web search provider "${wanted}" (the web row's \`search\`) is not mounted; mounted: ${list(this.searchers.keys())}.`,
        )
      const status = await safeStatus(provider)
      if (!status.ready)
        throw new WebError(
          'MISSING_CREDENTIAL',
          `web search provider "${wanted}" is not ready: ${status.reason ?? 'no reason given'}`,
          { provider: wanted },
        )
      return provider
    }
    const order = [
      ...this.config.searchOrder.filter((id) => this.searchers.has(id)),
      ...[...this.searchers.keys()].filter((id) => !this.config.searchOrder.includes(id)),
    ]
    const reasons: string[] = []
    for (const id of order) {
      const provider = this.searchers.get(id)!
      const status = await safeStatus(provider)
      if (status.ready) return provider
      reasons.push(`${id}: ${status.reason ?? 'not ready'}`)
    }
    if (order.length === 0)
      throw new WebError(
        'NO_PROVIDER',
        'web search is not available: no search provider is mounted (enable a web-search-* row).',
      )
    throw new WebError(
      'NO_PROVIDER',
      `web search is not configured: no search provider has a key (${reasons.join('; ')}).`,
    )
  }

  async fetch(request: WebFetchRequest, options: WebCallOptions = {}): Promise<WebFetchResult> {
    if (options.signal?.aborted) throw aborted()
    return this.resolveFetchProvider().fetch(request, options)
  }

  async search(request: WebSearchRequest, options: WebCallOptions = {}): Promise<WebSearchResult> {
    if (options.signal?.aborted) throw aborted()
    if (typeof request.query !== 'string' || request.query.trim() === '')
      throw new WebError('INVALID_REQUEST', 'the search query is empty.')
    const provider = await this.resolveSearchProvider()
    return provider.search({ ...request, query: request.query.trim() }, options)
  }
}

const aborted = () => new WebError('ABORTED', 'the web request was cancelled.')

function list(ids: Iterable<string>): string {
  const all = [...ids]
  return all.length ? all.join(', ') : 'none'
}

async function safeStatus(provider: WebSearchProvider): Promise<ProviderStatus> {
  try {
    return await provider.status()
  } catch (error) {
    return { ready: false, reason: error instanceof Error ? error.message : String(error) }
  }
}

export const name = 'web'
export default WebRuntime
