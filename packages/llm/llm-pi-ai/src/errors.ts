// pi-ai reports a failed request as an `error` event carrying only a message. The status and
// headers of the HTTP exchange come from the recording `fetch` the adapter hands to pi-ai
// (`WireRecord`); the message is the fallback. Everything ends as an LlmError code.
import { LlmError, type LlmErrorCode } from '@dsh/llm'

/** What the adapter's fetch saw of the last HTTP exchange of one request. */
export interface WireRecord {
  status?: number
  headers?: Headers
  /** Set when fetch itself rejected (no HTTP response at all). */
  fetchError?: unknown
  /** Requests that reached fetch (0: the failure happened before any I/O). */
  attempts: number
  /** Set when a 2xx body passed the byte cap and was cut off. */
  tooLarge?: boolean
}

/** Bounds applied by `recordingFetch` to each response body. */
export interface BodyLimits {
  /** Bytes of a 2xx body before it is cut off with an error (and `tooLarge` recorded). */
  maxBytes: number
  /** Called once when a body passes `maxBytes` (the adapter aborts the request). */
  onTooLarge?: () => void
}

/** Bytes of an error (non-2xx) body passed on: enough for any real message; the rest is dropped. */
export const ERROR_BODY_BYTES = 64 * 1024

const NO_BODY = new Set([101, 204, 205, 304])

/** `response` with its body counted: a 2xx body errors past `maxBytes`, any other is truncated. */
function capped(response: Response, record: WireRecord, limits: BodyLimits): Response {
  if (!response.body || NO_BODY.has(response.status)) return response
  const limit = response.ok ? limits.maxBytes : ERROR_BODY_BYTES
  let seen = 0
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      const room = limit - seen
      seen += chunk.byteLength
      if (seen <= limit) return controller.enqueue(chunk)
      if (!response.ok) {
        // An error body only needs its message: keep what fits, then end it.
        if (room > 0) controller.enqueue(chunk.subarray(0, room))
        return controller.terminate()
      }
      record.tooLarge = true
      controller.error(new Error(`response body exceeded ${limits.maxBytes} bytes (maxResponseBytes)`))
      limits.onTooLarge?.()
    },
  })
  const wrapped = new Response(response.body.pipeThrough(counter), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
  Object.defineProperty(wrapped, 'url', { value: response.url })
  return wrapped
}

/**
 * A fetch that records status, headers and transport failures into `record`, and with `limits`
 * bounds every response body it hands out.
 */
export function recordingFetch(
  record: WireRecord,
  base: typeof fetch = globalThis.fetch,
  limits?: BodyLimits,
): typeof fetch {
  return async (input, init) => {
    record.attempts++
    try {
      const response = await base(input, init)
      record.status = response.status
      record.headers = response.headers
      record.fetchError = undefined
      return limits ? capped(response, record, limits) : response
    } catch (error) {
      record.fetchError = error
      throw error
    }
  }
}

/** `Retry-After` (seconds or an HTTP date) or `retry-after-ms`, in milliseconds. */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined
  const ms = headers.get('retry-after-ms')
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms))) return Math.max(0, Math.round(Number(ms)))
  const value = headers.get('retry-after')
  if (value === null || value.trim() === '') return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000))
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

// Context-overflow sentences of common servers; pi-ai's own `isContextOverflow` is consulted first.
const OVERFLOW =
  /context length|context window|maximum context|too many tokens|prompt is too long|too long for the model|exceeds the (available )?context/i
const TRANSPORT =
  /fetch failed|terminated|socket|ECONNRESET|ECONNREFUSED|ENOTFOUND|EPIPE|ETIMEDOUT|network|connection (error|reset|closed)|other side closed|premature close|ended without finish_reason/i

/** Leading `<status>:` or `(<status>):` that pi-ai puts before a provider body. */
function statusFromMessage(message: string): number | undefined {
  const match = /^(?:[^:(]*\()?(\d{3})\)?:/.exec(message.trim())
  return match ? Number(match[1]) : undefined
}

export interface ErrorContext {
  route: string
  message: string
  wire: WireRecord
  /** pi-ai's own overflow verdict on the failed message. */
  overflow: boolean
}

/** Maps a failed pi-ai request (not an abort) to an LlmError. */
export function mapFailure({ route, message, wire, overflow }: ErrorContext): LlmError {
  const text = message || 'provider request failed'
  // A 2xx means the failure happened while reading the stream.
  const status = wire.status !== undefined && wire.status >= 400 ? wire.status : statusFromMessage(text)
  const make = (code: LlmErrorCode, extra: { retryAfterMs?: number } = {}) =>
    new LlmError(code, `${route}: ${text}`, { provider: route, status, ...extra })
  if (status !== undefined && status >= 400) {
    if (status === 401 || status === 403) return make('AUTH')
    if (status === 429) return make('RATE_LIMIT', { retryAfterMs: retryAfterMs(wire.headers) })
    if (status === 408) return make('TIMEOUT')
    if (status >= 500) return make('SERVER', { retryAfterMs: retryAfterMs(wire.headers) })
    if (overflow || status === 413 || OVERFLOW.test(text)) return make('CONTEXT_OVERFLOW')
    return make('BAD_REQUEST')
  }
  if (overflow) return make('CONTEXT_OVERFLOW')
  if (wire.fetchError !== undefined || TRANSPORT.test(text)) return make('TRANSPORT')
  if (/no api key|not configured|unauthori[sz]ed|invalid api key/i.test(text)) return make('AUTH')
  // A response arrived and its body could not be understood.
  if (wire.status !== undefined) return make('PROTOCOL')
  return make('TRANSPORT')
}
