// @dsh/web-search-deepseek: a `ctx.web` search provider over DeepSeek's Anthropic-compatible
// Messages API with the server-side `web_search_20250305` tool. One request per query: the model
// searches on DeepSeek's side and answers; the `web_search_tool_result` blocks become the hits,
// text citations their snippets, and the text the answer.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { WebError, type WebSearchHit, type WebSearchProvider, type WebSearchResult } from '@dsh/web'
import { keyAccess, postJson, text, type CredentialReader } from '@dsh/web/http'
import type {} from '@dsh/credentials'

export const name = 'web-search-deepseek'
export const inject = ['web']

export const PUBLIC_BASE_URL = 'https://api.deepseek.com/anthropic'
export const ANTHROPIC_VERSION = '2023-06-01'
export const SEARCH_TOOL_TYPE = 'web_search_20250305'

export interface Config {
  id: string
  apiKeyEnv: string
  baseURL: string
  model: string
  maxTokens: number
  maxUses: number
  timeoutMs: number
  maxResponseBytes: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  id: Schema.string().default('deepseek').description('Provider id on ctx.web.'),
  apiKeyEnv: Schema.string().default('DEEPSEEK_API_KEY').description('Credential holding the API key.'),
  baseURL: Schema.string()
    .default(PUBLIC_BASE_URL)
    .description('Anthropic-compatible API root; `/v1/messages` is appended.'),
  model: Schema.string().default('deepseek-v4-flash').description('Model that runs the search and writes the answer.'),
  maxTokens: Schema.natural().min(64).default(2048).description('`max_tokens` of the answer.'),
  maxUses: Schema.natural()
    .min(1)
    .max(10)
    .default(3)
    .description('Most searches the model may run for one query (`max_uses`).'),
  timeoutMs: Schema.natural().min(100).default(90_000).description('Wall-clock bound on one query.'),
  maxResponseBytes: Schema.natural()
    .min(1024)
    .default(4 * 1024 * 1024)
    .description('Most response bytes read.'),
}) as Schema<Partial<Config>, Config>

const SYSTEM =
  'You are a web search helper. Search the web for the user query, then answer it in a few sentences using only what the results say, citing them. ' +
  'If the results do not answer it, say so.'

interface Block {
  type?: unknown
  text?: unknown
  content?: unknown
  citations?: unknown
}

const ERROR_CODES: Record<string, 'RATE_LIMIT' | 'INVALID_REQUEST' | 'HTTP_ERROR'> = {
  too_many_requests: 'RATE_LIMIT',
  invalid_input: 'INVALID_REQUEST',
  query_too_long: 'INVALID_REQUEST',
  max_uses_exceeded: 'HTTP_ERROR',
  unavailable: 'HTTP_ERROR',
}

/** Maps a Messages API response to the seam's result. Exported for tests of odd shapes. */
export function mapResponse(provider: string, query: string, body: unknown, maxResults: number): WebSearchResult {
  const content = (body as { content?: unknown })?.content
  if (!Array.isArray(content))
    throw new WebError('BAD_RESPONSE', `${provider}: the answer has no content array.`, { provider })
  const hits: WebSearchHit[] = []
  const byUrl = new Map<string, WebSearchHit>()
  const answer: string[] = []
  const errors: string[] = []
  for (const block of content as Block[]) {
    if (block?.type === 'web_search_tool_result') {
      if (Array.isArray(block.content)) {
        for (const item of block.content as Array<Record<string, unknown>>) {
          const url = text(item?.url)
          if (item?.type !== 'web_search_result' || !url || byUrl.has(url)) continue
          const hit: WebSearchHit = {
            title: text(item.title) ?? url,
            url,
            ...(text(item.page_age) ? { published: text(item.page_age) } : {}),
          }
          byUrl.set(url, hit)
          hits.push(hit)
        }
      } else {
        const code = text((block.content as { error_code?: unknown })?.error_code)
        if (code) errors.push(code)
      }
    } else if (block?.type === 'text' && typeof block.text === 'string') {
      answer.push(block.text)
      for (const citation of Array.isArray(block.citations)
        ? (block.citations as Array<Record<string, unknown>>)
        : []) {
        const url = text(citation?.url)
        const cited = text(citation?.cited_text)
        if (!url || !cited) continue
        let hit = byUrl.get(url)
        if (!hit) {
          hit = { title: text(citation.title) ?? url, url }
          byUrl.set(url, hit)
          hits.push(hit)
        }
        hit.snippet ??= cited
      }
    }
  }
  const written = answer.join('').trim()
  if (hits.length === 0 && errors.length > 0) {
    const code = ERROR_CODES[errors[0]] ?? 'HTTP_ERROR'
    throw new WebError(code, `${provider}: the web search tool failed (${errors.join(', ')}).`, { provider })
  }
  return { provider, query, hits: hits.slice(0, maxResults), ...(written ? { answer: written } : {}) }
}

export function createProvider(config: Config, credentials: () => CredentialReader | undefined): WebSearchProvider {
  const key = keyAccess(config.id, config.apiKeyEnv, credentials)
  const endpoint = `${config.baseURL.replace(/\/+$/, '')}/v1/messages`
  return {
    id: config.id,
    status: () => key.status(),
    async search(request, options) {
      const apiKey = await key.require()
      const body = await postJson({
        provider: config.id,
        url: endpoint,
        headers: { 'x-api-key': apiKey, 'anthropic-version': ANTHROPIC_VERSION },
        body: {
          model: config.model,
          max_tokens: config.maxTokens,
          system: SYSTEM,
          messages: [{ role: 'user', content: request.query }],
          tools: [{ type: SEARCH_TOOL_TYPE, name: 'web_search', max_uses: config.maxUses }],
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
