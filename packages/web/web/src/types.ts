// The vocabulary of the web seam: what a fetch or a search asks for, what it returns, and the
// stable error codes providers raise. Provider-neutral: no vendor field appears here.

/** One page retrieval. */
export interface WebFetchRequest {
  /** Absolute http: or https: URL. */
  url: string
}

/** What a fetch provider returns: the final response after redirects, its body decoded to text. */
export interface WebFetchResult {
  /** Provider id that served the request. */
  provider: string
  /** The URL asked for. */
  url: string
  /** The URL of the response returned, after redirects. */
  finalUrl: string
  /** Each redirect target followed, in order (empty when none). */
  redirects: string[]
  status: number
  statusText: string
  /** The full Content-Type header ('' when absent). */
  contentType: string
  /** The lower-case media type without parameters, e.g. `text/html`. */
  mediaType: string
  /** Charset the body was decoded with. */
  charset: string
  /** The decoded body, at most the provider's byte cap of it. */
  content: string
  /** Bytes of (decompressed) body read. */
  bytes: number
  /** True when the body was longer than the cap and was cut. */
  truncated: boolean
}

/** One search query. */
export interface WebSearchRequest {
  query: string
  /** Most results wanted; providers may return fewer. */
  maxResults: number
}

export interface WebSearchHit {
  title: string
  url: string
  /** A short excerpt of the page relevant to the query, when the provider gives one. */
  snippet?: string
  /** Publication or last-update date as the provider states it. */
  published?: string
}

export interface WebSearchResult {
  /** Provider id that answered. */
  provider: string
  query: string
  /** A generated answer grounded in the results, for providers that write one. */
  answer?: string
  hits: WebSearchHit[]
}

/** Per-call options every provider method takes. */
export interface WebCallOptions {
  /** Aborts the request; providers stop network I/O and reject with `ABORTED`. */
  signal?: AbortSignal
}

/** Whether a provider can be called now, decided without network I/O. */
export interface ProviderStatus {
  ready: boolean
  /** Why not, as a sentence naming what to set (for a not-ready provider). */
  reason?: string
}

export interface WebFetchProvider {
  /** Stable id, e.g. `http`. */
  id: string
  fetch(request: WebFetchRequest, options?: WebCallOptions): Promise<WebFetchResult>
}

export interface WebSearchProvider {
  /** Stable id, e.g. `deepseek`, `exa`, `perplexity`. */
  id: string
  /** A key is configured (or none is needed). No network I/O. */
  status(): Promise<ProviderStatus>
  search(request: WebSearchRequest, options?: WebCallOptions): Promise<WebSearchResult>
}

export const WEB_ERROR_CODES = [
  /** No provider of the needed kind is registered or ready. */
  'NO_PROVIDER',
  /** The provider needs a key that is not set. */
  'MISSING_CREDENTIAL',
  /** The provider refused the key (401/403). */
  'INVALID_CREDENTIAL',
  /** The URL is malformed, not http(s), or carries credentials. */
  'INVALID_URL',
  /** The host resolves to an address the guard refuses (private, loopback, link-local, ...). */
  'BLOCKED_ADDRESS',
  'TOO_MANY_REDIRECTS',
  /** The response's media type is not on the allow list. */
  'UNSUPPORTED_CONTENT_TYPE',
  /** The provider's own time cap elapsed. */
  'TIMEOUT',
  /** The caller's signal aborted the call. */
  'ABORTED',
  /** The remote answered with an HTTP error status. */
  'HTTP_ERROR',
  'RATE_LIMIT',
  /** Connection, DNS or TLS failure. */
  'TRANSPORT',
  /** A provider's response did not have the documented shape. */
  'BAD_RESPONSE',
  /** The request itself is unusable (empty query, ...). */
  'INVALID_REQUEST',
] as const
export type WebErrorCode = (typeof WEB_ERROR_CODES)[number]

/** Every failure of the seam and its providers. Messages are one sentence a model can act on. */
export class WebError extends Error {
  override name = 'WebError'
  constructor(
    readonly code: WebErrorCode,
    message: string,
    readonly details: { provider?: string; status?: number; url?: string } = {},
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/** A `WebError`, also one from another copy of this package (checked by name and code, not only by class). */
export const isWebError = (error: unknown): error is WebError =>
  error instanceof WebError ||
  (error instanceof Error &&
    error.name === 'WebError' &&
    (WEB_ERROR_CODES as readonly string[]).includes((error as { code?: unknown }).code as string))
