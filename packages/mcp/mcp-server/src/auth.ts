// The HTTP transport's gates, free of the SDK so the CLI can check flags without loading it: which
// hosts and origins count as loopback, and the bearer-token comparison.
import { timingSafeEqual } from 'node:crypto'

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost'])

/** `127.0.0.1`, `::1` (bracketed or not) or `localhost`. */
export const isLoopbackHost = (host: string): boolean => LOOPBACK.has(host.replace(/^\[|\]$/g, ''))

/** Whether an `Origin` header names a loopback page (an unparsable one does not). */
export function isLoopbackOrigin(origin: string): boolean {
  try {
    return isLoopbackHost(new URL(origin).hostname)
  } catch {
    return false
  }
}

/** Whether `header` is `Bearer <token>`, compared in constant time. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  if (!m) return false
  const given = Buffer.from(m[1])
  const want = Buffer.from(token)
  return given.length === want.length && timingSafeEqual(given, want)
}
