// Credential scrubbing of an inherited environment. Pure functions so every provider of the seam
// (local, remote sandboxes) applies the same policy.
import type { ScrubPolicy } from './types.ts'

/**
 * Names that look like credentials. A variable the caller sets explicitly is never scrubbed; only
 * what a child would inherit from the harness's own environment is.
 */
export const DEFAULT_SCRUB_DENY: readonly string[] = [
  '*API_KEY*',
  '*APIKEY*',
  '*_TOKEN',
  '*_TOKEN_*',
  'TOKEN',
  '*SECRET*',
  '*PASSWORD*',
  '*PASSWD*',
  '*_CREDENTIALS',
  '*_PRIVATE_KEY',
  '*_ACCESS_KEY',
  '*_ACCESS_KEY_ID',
  '*_SESSION_KEY',
  'AWS_*',
]

export const DEFAULT_SCRUB_POLICY: ScrubPolicy = { deny: [...DEFAULT_SCRUB_DENY], allow: [] }

const PATTERN = /^[A-Za-z0-9_*.-]+$/

/** Compiles one `*`-wildcard pattern into an anchored, case-insensitive RegExp. Throws on a malformed pattern. */
export function compilePattern(pattern: string): RegExp {
  if (typeof pattern !== 'string' || !PATTERN.test(pattern)) {
    throw new TypeError(
      `invalid environment name pattern ${JSON.stringify(pattern)} (letters, digits, _ . - and * only)`,
    )
  }
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.-]/g, (c) => `\\${c}`))
    .join('.*')
  return new RegExp(`^${body}$`, 'i')
}

/** Returns a predicate telling whether a variable name is scrubbed under `policy`. */
export function createScrubber(policy: ScrubPolicy): (name: string) => boolean {
  const deny = policy.deny.map(compilePattern)
  const allow = policy.allow.map(compilePattern)
  return (name) => deny.some((re) => re.test(name)) && !allow.some((re) => re.test(name))
}

/** A copy of `env` without the variables `isScrubbed` selects, and the names removed. */
export function scrubEnvironment(
  env: Record<string, string | undefined>,
  isScrubbed: (name: string) => boolean,
): { env: Record<string, string>; removed: string[] } {
  const out: Record<string, string> = {}
  const removed: string[] = []
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue
    if (isScrubbed(name)) removed.push(name)
    else out[name] = value
  }
  return { env: out, removed }
}
