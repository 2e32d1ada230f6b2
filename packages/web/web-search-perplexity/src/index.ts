// @dsh/web-search-perplexity: a `ctx.web` search provider over Perplexity's OpenAI-compatible
// `POST /chat/completions` (Sonar models search the web on every call). The generated message is
// the answer; `search_results` (title, url, date, snippet) are the hits, else the bare
// `citations` URLs.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { WebError, type WebSearchHit, type WebSearchProvider, type WebSearchResult } from '@dsh/web'
import { keyAccess, postJson, text, type CredentialReader } from '@dsh/web/http'
import type {} from '@dsh/credentials'

export const name = 'web-search-perplexity'
export const inject = ['web']

export const PUBLIC_BASE_URL = 'https://api.perplexity.ai'

export interface Config {
  id: string
  apiKeyEnv: string
  baseURL: string
  model: string
  maxTokens: number
  timeoutMs: number
  maxResponseBytes: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  id: Schema.string().default('perplexity').description('Provider id on ctx.web.'),
  apiKeyEnv: Schema.string().default('PERPLEXITY_API_KEY').description('Credential holding the API key.'),
  baseURL: Schema.string().default(PUBLIC_BASE_URL).description('API root; `/chat/completions` is appended.'),
  model: Schema.string().default('sonar').description('Sonar model.'),
  maxTokens: Schema.natural().min(64).default(1024).description('`max_tokens` of the answer.'),
  timeoutMs: Schema.natural().min(100).default(60_000).description('Wall-clock bound on one query.'),
  maxResponseBytes: Schema.natural()
    .min(1024)
    .default(4 * 1024 * 1024)
    .description('Most response bytes read.'),
}) as Schema<Partial<Config>, Config>

const SYSTEM = 'Answer the query in a few precise sentences based on current web sources.'

/** Maps a chat completion (with Perplexity's `search_results` / `citations`) to the seam's result. */
export function mapResponse(provider: string, query: string, body: unknown, maxResults: number): WebSearchResult {
  const data = body as { choices?: unknown; search_results?: unknown; citations?: unknown }
  if (!Array.isArray(data?.choices))
    throw new WebError('BAD_RESPONSE', `${provider}: the answer has no choices array.`, { provider })
  const message = (data.choices[0] as { message?: { content?: unknown } } | undefined)?.message
  const answer = text(message?.content)
  const hits: WebSearchHit[] = []
  const seen = new Set<string>()
  if (Array.isArray(data.search_results)) {
    for (const item of data.search_results as Array<Record<string, unknown>>) {
      const url = text(item?.url)
      if (!url || seen.has(url)) continue
      seen.add(url)
      const published = text(item.date) ?? text(item.last_updated)
      const snippet = text(item.snippet)
      hits.push({
        title: text(item.title) ?? url,
        url,
        ...(snippet ? { snippet } : {}),
        ...(published ? { published } : {}),
      })
    }
  }
  if (Array.isArray(data.citations)) {
    for (const citation of data.citations) {
      const url = text(citation)
      if (!url || seen.has(url)) continue
      seen.add(url)
      hits.push({ title: url, url })
    }
  }
  return { provider, query, hits: hits.slice(0, maxResults), ...(answer ? { answer } : {}) }
}

export function createProvider(config: Config, credentials: () => CredentialReader | undefined): WebSearchProvider {
  const key = keyAccess(config.id, config.apiKeyEnv, credentials)
  const endpoint = `${config.baseURL.replace(/\/+$/, '')}/chat/completions`
  return {
    id: config.id,
    status: () => key.status(),
    async search(request, options) {
      const apiKey = await key.require()
      const body = await postJson({
        provider: config.id,
        url: endpoint,
        headers: { authorization: `Bearer ${apiKey}` },
        body: {
          model: config.model,
          max_tokens: config.maxTokens,
          messages: [
            { role: 'system', content: SYSTEM },
            { role: 'user', content: request.query },
          ],
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
