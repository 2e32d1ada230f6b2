// Scrubbing secret values (API keys) out of errors before they reach output, logs or the session.
// A provider error body may echo request headers; whatever enters the rest of the system from a
// provider passes through `redactError` with every secret value the process knows.
import { LlmError } from './types.ts'

/** What replaces a secret value. */
export const REDACTED = '[REDACTED]'

/**
 * Values shorter than this are not treated as secrets: replacing a 3-character "key" everywhere
 * would mangle ordinary text, and no real API key is that short.
 */
export const MIN_SECRET_LENGTH = 8

/** The distinct usable secrets, longest first (so a key containing another is replaced whole). */
export function secretList(values: Iterable<string | undefined | null>): string[] {
  const out = new Set<string>()
  for (const value of values) {
    if (typeof value !== 'string') continue
    const trimmed = value.trim()
    if (trimmed.length < MIN_SECRET_LENGTH) continue
    out.add(trimmed)
    // The same value as it would appear in a URL or a form body.
    const encoded = encodeURIComponent(trimmed)
    if (encoded !== trimmed) out.add(encoded)
  }
  return [...out].sort((a, b) => b.length - a.length)
}

/** `text` with every occurrence of every secret replaced by `REDACTED`. */
export function redactText(text: string, secrets: readonly string[]): string {
  let out = text
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED)
  return out
}

function containsSecret(text: unknown, secrets: readonly string[]): boolean {
  return typeof text === 'string' && secrets.some((secret) => text.includes(secret))
}

function leaks(error: unknown, secrets: readonly string[], depth = 0): boolean {
  if (depth > 5 || error === null || error === undefined) return false
  if (typeof error === 'string') return containsSecret(error, secrets)
  if (!(error instanceof Error)) {
    try {
      return containsSecret(JSON.stringify(error), secrets)
    } catch {
      return containsSecret(String(error), secrets)
    }
  }
  if (containsSecret(error.message, secrets) || containsSecret(error.stack, secrets)) return true
  for (const [key, value] of Object.entries(error)) {
    if (key === 'cause') continue
    if (typeof value === 'string' ? containsSecret(value, secrets) : leaks(value, secrets, depth + 1)) return true
  }
  return leaks((error as { cause?: unknown }).cause, secrets, depth + 1)
}

/** A plain Error standing in for a cause that carried a secret: same name and message shape, no value. */
function scrubCause(cause: unknown, secrets: readonly string[], depth = 0): unknown {
  if (!leaks(cause, secrets)) return cause
  if (depth > 5) return undefined
  if (!(cause instanceof Error)) return redactText(typeof cause === 'string' ? cause : String(cause), secrets)
  const inner = scrubCause((cause as { cause?: unknown }).cause, secrets, depth + 1)
  const copy = new Error(redactText(cause.message, secrets), inner === undefined ? undefined : { cause: inner })
  copy.name = cause.name
  const code = (cause as { code?: unknown }).code
  if (typeof code === 'string') (copy as { code?: string }).code = redactText(code, secrets)
  copy.stack = `${copy.name}: ${copy.message}`
  return copy
}

/**
 * `error` without any of `secrets`: returned unchanged when it carries none, else rebuilt (message,
 * stack and cause chain) with each value replaced by `REDACTED`. An LlmError stays an LlmError
 * with the same code, status, provider and retryAfterMs.
 */
export function redactError<E>(error: E, secrets: readonly string[]): E | LlmError | Error {
  if (secrets.length === 0 || !leaks(error, secrets)) return error
  if (LlmError.is(error)) {
    const copy = new LlmError(error.code, redactText(error.message, secrets), {
      status: error.status,
      provider: error.provider,
      retryAfterMs: error.retryAfterMs,
      cause: scrubCause(error.cause, secrets),
    })
    copy.stack = redactText(error.stack ?? `${copy.name}: ${copy.message}`, secrets)
    return copy
  }
  if (error instanceof Error) {
    const copy = scrubCause(error, secrets) as Error
    copy.stack = redactText(error.stack ?? `${copy.name}: ${copy.message}`, secrets)
    return copy
  }
  return new Error(redactText(typeof error === 'string' ? error : String(error), secrets))
}
