// @dsh/web-search-exa: a `ctx.web` search provider over Exa's `POST /search` with highlight
// contents. Exa returns a flat `results[]`; each becomes a hit whose snippet is its highlights.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { WebError, type WebSearchHit, type WebSearchProvider, type WebSearchResult } from '@dsh/web'
import { keyAccess, postJson, text, type CredentialReader } from '@dsh/web/http'
import type {} from '@dsh/credentials'

export const name = 'web-search-exa'
export const inject = ['web']

export const PUBLIC_BASE_URL = 'https://api.exa.ai'

export interface Config {
  id: string
  apiKeyEnv: string
  baseURL: string
  searchType: string
  highlightSentences: number
  highlightsPerUrl: number
  timeoutMs: number
  maxResponseBytes: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  id: Schema.string().default('exa').description('Provider id on ctx.web.'),
  apiKeyEnv: Schema.string().default('EXA_API_KEY').description('Credential holding the API key.'),
  baseURL: Schema.string().default(PUBLIC_BASE_URL).description('API root; `/search` is appended.'),
  searchType: Schema.string().default('auto').description('Exa `type` (auto, neural, keyword, fast, ...).'),
  highlightSentences: Schema.natural().min(1).default(3).description('Sentences per highlight.'),
  highlightsPerUrl: Schema.natural().min(1).default(2).description('Highlights per result.'),
  timeoutMs: Schema.natural().min(100).default(30_000).description('Wall-clock bound on one query.'),
  maxResponseBytes: Schema.natural()
    .min(1024)
    .default(4 * 1024 * 1024)
    .description('Most response bytes read.'),
}) as Schema<Partial<Config>, Config>

/** Maps an Exa search response to the seam's result. */
export function mapResponse(provider: string, query: string, body: unknown, maxResults: number): WebSearchResult {
  const results = (body as { results?: unknown })?.results
  if (!Array.isArray(results))
    throw new WebError('BAD_RESPONSE', `${provider}: the answer has no results array.`, { provider })
  const hits: WebSearchHit[] = []
  for (const item of results as Array<Record<string, unknown>>) {
    const url = text(item?.url)
    if (!url) continue
    const highlights = Array.isArray(item.highlights)
      ? (item.highlights as unknown[]).flatMap((h) => (text(h) ? [text(h)!] : []))
      : []
    const snippet =
      highlights.length > 0 ? highlights.join(' … ') : (text(item.summary) ?? text(item.text)?.slice(0, 600))
    const published = text(item.publishedDate)
    hits.push({
      title: text(item.title) ?? url,
      url,
      ...(snippet ? { snippet } : {}),
      ...(published ? { published: published.slice(0, 10) } : {}),
    })
  }
  return { provider, query, hits: hits.slice(0, maxResults) }
}

export function createProvider(config: Config, credentials: () => CredentialReader | undefined): WebSearchProvider {
  const key = keyAccess(config.id, config.apiKeyEnv, credentials)
  const endpoint = `${config.baseURL.replace(/\/+$/, '')}/search`
  return {
    id: config.id,
    status: () => key.status(),
    async search(request, options) {
      const apiKey = await key.require()
      const body = await postJson({
        provider: config.id,
        url: endpoint,
        headers: { 'x-api-key': apiKey },
        body: {
          query: request.query,
          numResults: request.maxResults,
          type: config.searchType,
          contents: {
            highlights: { numSentences: config.highlightSentences, highlightsPerUrl: config.highlightsPerUrl },
          },
        },
        timeoutMs: config.timeoutMs,
        maxResponseBytes: config.maxResponseBytes,
        signal: options?.signal,
        secrets: [apiKey],
      })
      return mapResponse(config.id, request.query, body, request.maxResults)
    },
  }
}

export function apply(ctx: Context, config: Config): void {
  ctx.web.registerSearchProvider(createProvider(config, () => ctx.get('credentials')))
}
