// HTTP failures and transport faults as LlmErrors with stable codes.
import { LlmError, type LlmErrorCode } from '@dsh/llm'

export const PROVIDER_LABEL = 'DeepSeek'

/**
 * `Retry-After` (delta-seconds or an HTTP date) or `retry-after-ms`, in milliseconds; undefined
 * when absent or unparseable. `now` is injectable for tests.
 */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms')
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.round(Number(ms))
  const value = headers.get('retry-after')
  if (value === null || value.trim() === '') return undefined
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.round(Number(value) * 1000)
  const date = Date.parse(value)
  if (Number.isNaN(date)) return undefined
  return Math.max(0, date - now)
}

/** The human-readable message inside an error body (`{"error": {"message": ...}}`), else a snippet. */
export function errorBodyMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown }
    if (typeof parsed.error === 'string') return parsed.error
    if (parsed.error && typeof parsed.error.message === 'string') return parsed.error.message
    if (typeof parsed.message === 'string') return parsed.message
  } catch {
    // not JSON: fall through to the raw snippet
  }
  const flat = body.replace(/\s+/g, ' ').trim()
  return flat.length > 300 ? `${flat.slice(0, 300)}...` : flat
}

const CONTEXT_OVERFLOW = /context (length|window)|maximum context|too many tokens|prompt is too long/i

/** Code for an HTTP status, given the server's message (which separates context overflow from other 400s). */
export function codeForStatus(status: number, message: string): LlmErrorCode {
  if (status === 401 || status === 403) return 'AUTH'
  // 402: insufficient balance. Not retryable, and the fix is on the account, like a key problem.
  if (status === 402) return 'AUTH'
  if (status === 408) return 'TIMEOUT'
  if (status === 429) return 'RATE_LIMIT'
  if (status === 413 || ((status === 400 || status === 422) && CONTEXT_OVERFLOW.test(message)))
    return 'CONTEXT_OVERFLOW'
  if (status >= 500) return 'SERVER'
  return 'BAD_REQUEST'
}

export function errorFromResponse(status: number, headers: Headers, body: string): LlmError {
  const message = errorBodyMessage(body)
  const code = codeForStatus(status, message)
  const retryAfterMs = code === 'RATE_LIMIT' || code === 'SERVER' ? parseRetryAfter(headers) : undefined
  return new LlmError(code, `${PROVIDER_LABEL} HTTP ${status}: ${message || '(empty body)'}`, {
    status,
    retryAfterMs,
  })
}

/**
 * A network-level failure (refused, reset, DNS, TLS) as `TRANSPORT`, keeping the cause and naming
 * the base URL, so a wrong `baseURL` is visible in the one line the user sees.
 */
export function transportError(cause: unknown, phase: 'connect' | 'read', baseURL?: string): LlmError {
  const detail = describeCause(cause)
  const what = phase === 'connect' ? 'could not reach' : 'lost the connection to'
  return new LlmError('TRANSPORT', `${PROVIDER_LABEL}: ${what} ${baseURL ?? 'the API'}: ${detail}`, { cause })
}

function describeCause(cause: unknown): string {
  const parts: string[] = []
  let current: unknown = cause
  for (let depth = 0; current && depth < 4; depth++) {
    if (current instanceof Error) {
      const code = (current as { code?: unknown }).code
      parts.push(typeof code === 'string' ? `${current.message} (${code})` : current.message)
      current = (current as { cause?: unknown }).cause
    } else {
      parts.push(String(current))
      break
    }
  }
  return parts.join(': ') || 'unknown error'
}
