// @dsh/web-fetch-http: the anonymous public HTTP(S) fetch provider of `ctx.web`. A GET with
// bounded redirects, a byte cap, a time cap, a content-type allow list and an address guard that
// refuses private, loopback and link-local destinations (checked on every resolved address and
// every redirect hop). No cookies, no credentials, no proxy.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { WebFetchProvider } from '@dsh/web'
import { userAgent } from '@dsh/brand'
import { AddressGuard, checkCidr } from './guard.ts'
import { Fetcher } from './fetcher.ts'

export { AddressGuard, embeddedV4, checkCidr } from './guard.ts'
export { Fetcher, contentTypeAllowed, parseUrl } from './fetcher.ts'

export const name = 'web-fetch-http'
export const inject = ['web']

export const DEFAULT_CONTENT_TYPES = [
  'text/*',
  'application/json',
  'application/*+json',
  'application/xml',
  'application/*+xml',
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'application/x-yaml',
  'application/yaml',
  'application/toml',
]

export interface Config {
  id: string
  maxBytes: number
  maxRedirects: number
  timeoutMs: number
  userAgent?: string
  allowedContentTypes: string[]
  allowPrivateNetwork: boolean
  allowedRanges: string[]
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  id: Schema.string().default('http').description('Provider id on ctx.web.'),
  maxBytes: Schema.natural()
    .min(1024)
    .default(5 * 1024 * 1024)
    .description('Most bytes of (decompressed) body read; the rest is cut and the result marked truncated.'),
  maxRedirects: Schema.natural().max(20).default(5).description('Most redirects followed.'),
  timeoutMs: Schema.natural()
    .min(100)
    .default(30_000)
    .description('Wall-clock bound on one fetch, redirects included.'),
  userAgent: Schema.string().description('User-Agent header; default names dsh and its version.'),
  allowedContentTypes: Schema.array(Schema.string())
    .default(DEFAULT_CONTENT_TYPES)
    .description('Media types read (`*` matches within a segment).'),
  allowPrivateNetwork: Schema.boolean()
    .default(false)
    .description('Turn the address guard off: private, loopback and link-local addresses may be fetched.'),
  allowedRanges: Schema.array(Schema.string())
    .default([])
    .description('CIDR ranges allowed despite the guard, e.g. 127.0.0.1/32.'),
}) as Schema<Partial<Config>, Config>

export function createProvider(config: Config): WebFetchProvider {
  for (const cidr of config.allowedRanges) {
    const problem = checkCidr(cidr)
    if (problem) throw new Error(`web-fetch-http: allowedRanges: ${problem}`)
  }
  const fetcher = new Fetcher({
    provider: config.id,
    guard: new AddressGuard({ allowPrivateNetwork: config.allowPrivateNetwork, allowedRanges: config.allowedRanges }),
    maxBytes: config.maxBytes,
    maxRedirects: config.maxRedirects,
    timeoutMs: config.timeoutMs,
    userAgent: config.userAgent || userAgent('web_fetch'),
    allowedContentTypes: config.allowedContentTypes.map((t) => t.toLowerCase()),
  })
  return { id: config.id, fetch: (request, options) => fetcher.fetch(request.url, options?.signal) }
}

export function apply(ctx: Context, config: Config): void {
  ctx.web.registerFetchProvider(createProvider(config))
}
