// `@dsh/web/http`: the small JSON-over-HTTP client the search providers share, so each maps one
// vendor's shapes and nothing else. Node's core http/https client (global fetch loads undici on
// first use); a byte cap and a time cap on every call; failures become `WebError`s whose messages
// never contain the key. Providers import it; the seam itself (index.ts) does no I/O.
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { whereToSet, type CredentialLayer } from '@dsh/credentials'
import { WebError } from './types.ts'

export interface PostJsonOptions {
  provider: string
  url: string
  headers: Record<string, string>
  body: unknown
  /** Wall-clock bound on the whole call. */
  timeoutMs: number
  /** Most response bytes read before BAD_RESPONSE. */
  maxResponseBytes: number
  signal?: AbortSignal
  /** Values scrubbed from any error message (the key). */
  secrets?: string[]
}

/** POSTs `body` as JSON and returns the parsed JSON answer of a 2xx response; anything else is a `WebError`. */
export async function postJson(options: PostJsonOptions): Promise<unknown> {
  const { provider } = options
  const scrub = (text: string) =>
    (options.secrets ?? []).filter((s) => s.length >= 4).reduce((t, s) => t.split(s).join('[redacted]'), text)
  let url: URL
  try {
    url = new URL(options.url)
  } catch {
    throw new WebError(
      'INVALID_REQUEST',
      `${provider}: the endpoint ${JSON.stringify(options.url)} is not a valid URL (check the row's baseURL).`,
      { provider },
    )
  }
  const send = url.protocol === 'https:' ? httpsRequest : url.protocol === 'http:' ? httpRequest : undefined
  if (!send)
    throw new WebError('INVALID_REQUEST', `${provider}: the endpoint must be http: or https:, not ${url.protocol}`, {
      provider,
    })
  if (options.signal?.aborted) throw new WebError('ABORTED', `${provider}: the search was cancelled.`, { provider })
  const payload = JSON.stringify(options.body)
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    let settled = false
    const finish = (error: WebError | undefined, value?: { status: number; text: string }) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      if (error) {
        req.destroy()
        reject(error)
      } else resolve(value!)
    }
    const onAbort = () => finish(new WebError('ABORTED', `${provider}: the search was cancelled.`, { provider }))
    const timer = setTimeout(
      () =>
        finish(
          new WebError('TIMEOUT', `${provider}: no complete answer within ${options.timeoutMs} ms.`, { provider }),
        ),
      options.timeoutMs,
    )
    options.signal?.addEventListener('abort', onAbort, { once: true })
    const req = send(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'content-length': String(Buffer.byteLength(payload)),
        ...options.headers,
      },
    })
    req.on('error', (error) =>
      finish(
        new WebError(
          'TRANSPORT',
          `${provider}: ${scrub(error.message)} (${url.host}).`,
          { provider },
          { cause: error },
        ),
      ),
    )
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > options.maxResponseBytes)
          finish(
            new WebError('BAD_RESPONSE', `${provider}: the answer is over ${options.maxResponseBytes} bytes.`, {
              provider,
            }),
          )
        else chunks.push(chunk)
      })
      res.on('error', (error) =>
        finish(new WebError('TRANSPORT', `${provider}: ${scrub(error.message)}.`, { provider }, { cause: error })),
      )
      res.on('end', () =>
        finish(undefined, { status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
      )
    })
    req.end(payload)
  })
  if (status < 200 || status >= 300) {
    const detail = scrub(errorDetail(text)).slice(0, 300)
    const suffix = detail ? `: ${detail}` : ''
    if (status === 401 || status === 403)
      throw new WebError('INVALID_CREDENTIAL', `${provider}: the key was refused (HTTP ${status})${suffix}`, {
        provider,
        status,
      })
    if (status === 429)
      throw new WebError('RATE_LIMIT', `${provider}: rate limited (HTTP 429)${suffix}; wait before searching again.`, {
        provider,
        status,
      })
    throw new WebError('HTTP_ERROR', `${provider}: HTTP ${status}${suffix}`, { provider, status })
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new WebError('BAD_RESPONSE', `${provider}: the answer is not JSON (${JSON.stringify(text.slice(0, 80))}).`, {
      provider,
      status,
    })
  }
}

/** The error message of a JSON error body (`{error: {message}}`, `{error: "..."}`, `{message}`), else the raw text. */
function errorDetail(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown }
    const error = body.error as { message?: unknown } | string | undefined
    if (typeof error === 'string') return error
    if (error && typeof error.message === 'string') return error.message
    if (typeof body.message === 'string') return body.message
  } catch {
    // not JSON: the raw text, trimmed
  }
  return text.trim()
}

/** A non-empty trimmed string, else undefined. */
export const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined

/** The part of `ctx.credentials` (@dsh/credentials) a provider reads; absent: the environment alone. */
export interface CredentialReader {
  get(name: string): Promise<string | undefined>
  describe(name: string): Promise<{ layers: CredentialLayer[] }>
}

/** A provider's API key: readiness without network I/O, and the value at call time (read each call, so a key set after boot is seen). */
export interface KeyAccess {
  status(): Promise<{ ready: boolean; reason?: string }>
  /** The key, or a `MISSING_CREDENTIAL` WebError naming where to set it. */
  require(): Promise<string>
}

export function keyAccess(
  provider: string,
  name: string,
  reader: () => CredentialReader | undefined,
  env: NodeJS.ProcessEnv = process.env,
): KeyAccess {
  const read = async () => {
    const credentials = reader()
    const value = credentials ? await credentials.get(name) : env[name]
    return value && value.trim() !== '' ? value.trim() : undefined
  }
  const reason = async () => {
    const credentials = reader()
    const where = credentials
      ? whereToSet(name, (await credentials.describe(name)).layers)
      : `export ${name}=... in the environment`
    return `set ${name} (${where})`
  }
  return {
    async status() {
      return (await read()) ? { ready: true } : { ready: false, reason: await reason() }
    },
    async require() {
      const key = await read()
      if (key) return key
      throw new WebError('MISSING_CREDENTIAL', `${provider} web search needs an API key: ${await reason()}.`, {
        provider,
      })
    },
  }
}
