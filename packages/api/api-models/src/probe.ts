// Asking a provider for its model list: the one request that checks a key without spending tokens.
// Each wire protocol has its own listing endpoint and auth header; anything else is "unknown".

export type ProbeProtocol = 'openai' | 'anthropic' | 'google'

export interface ProbeTarget {
  protocol: ProbeProtocol
  baseURL: string
  key?: string
}

export type ProbeOutcome =
  | { kind: 'ok'; models: string[] }
  | { kind: 'rejected'; status: number; message: string }
  | { kind: 'failed'; message: string }

/** The pi-ai wire protocols (api ids) whose listing endpoint is known. */
export function protocolOfApi(api: string | undefined): ProbeProtocol | undefined {
  if (!api) return undefined
  if (api === 'openai-completions' || api === 'openai-responses' || api === 'mistral-conversations') return 'openai'
  if (api === 'anthropic-messages') return 'anthropic'
  if (api === 'google-generative-ai') return 'google'
  return undefined
}

function join(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path
}

function request(target: ProbeTarget): { url: string; headers: Record<string, string> } {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (target.protocol === 'anthropic') {
    // The catalog's Anthropic base has no version segment.
    const base = /\/v1\/?$/.test(target.baseURL) ? target.baseURL : join(target.baseURL, '/v1')
    if (target.key) headers['x-api-key'] = target.key
    headers['anthropic-version'] = '2023-06-01'
    return { url: join(base, '/models'), headers }
  }
  if (target.protocol === 'google') {
    if (target.key) headers['x-goog-api-key'] = target.key
    return { url: join(target.baseURL, '/models'), headers }
  }
  if (target.key) headers.authorization = `Bearer ${target.key}`
  return { url: join(target.baseURL, '/models'), headers }
}

/** Model ids of a listing body: OpenAI/Anthropic `data[].id`, Google `models[].name`. */
export function modelIdsOf(body: unknown): string[] {
  const record = body as { data?: unknown; models?: unknown } | null
  const list = Array.isArray(record?.data)
    ? record.data
    : Array.isArray(record?.models)
      ? record.models
      : Array.isArray(body)
        ? body
        : []
  const ids: string[] = []
  for (const item of list as unknown[]) {
    const entry = item as { id?: unknown; name?: unknown }
    const id =
      typeof entry?.id === 'string'
        ? entry.id
        : typeof entry?.name === 'string'
          ? entry.name.replace(/^models\//, '')
          : undefined
    if (id) ids.push(id)
  }
  return [...new Set(ids)].sort()
}

function scrub(text: string, key: string | undefined): string {
  return key ? text.split(key).join('[redacted]') : text
}

/** GET the listing. 401/403 is a rejection; a network failure, other status or bad body is `failed`. */
export async function probe(target: ProbeTarget, timeoutMs: number, signal?: AbortSignal): Promise<ProbeOutcome> {
  let url: URL
  try {
    url = new URL(target.baseURL)
  } catch {
    return { kind: 'failed', message: `'${target.baseURL}' is not a URL` }
  }
  if (!/^https?:$/.test(url.protocol)) return { kind: 'failed', message: `'${target.baseURL}' is not an http(s) URL` }
  const { url: href, headers } = request(target)
  const timeout = AbortSignal.timeout(timeoutMs)
  try {
    const res = await fetch(href, {
      headers,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      redirect: 'error',
    })
    const text = (await res.text()).slice(0, 1 << 20)
    if (res.status === 401 || res.status === 403) {
      let message = text
      try {
        const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown }
        const inner = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message)
        if (typeof inner === 'string') message = inner
      } catch {
        // not JSON: the raw text
      }
      return { kind: 'rejected', status: res.status, message: scrub(message, target.key).split('\n')[0].slice(0, 300) }
    }
    if (!res.ok) return { kind: 'failed', message: `${href} answered ${res.status}` }
    try {
      return { kind: 'ok', models: modelIdsOf(JSON.parse(text)) }
    } catch {
      return { kind: 'failed', message: `${href} did not answer JSON` }
    }
  } catch (error) {
    const reason = timeout.aborted
      ? `no answer within ${timeoutMs} ms`
      : scrub(String((error as Error)?.cause ?? (error as Error)?.message ?? error), target.key)
    return { kind: 'failed', message: `${href}: ${reason}` }
  }
}
