// @ts-check
// The `--world NAME` flag every dsh bin accepts (`dsh`, `dsh-acp`, `dsh-jsonrpc-agent`): where
// commands and files live. A world other than `local` is one more patch layer
// (bundles/world-NAME/cordis.patch.yml). Plain JavaScript so the launcher's `--help` needs no
// TypeScript loader; paths are relative to this file (the monorepo layout).
import { fileURLToPath } from 'node:url'

/**
 * Patch layers `--world NAME` adds. `local` is the base bundle's own world and adds nothing.
 * @type {Record<string, string>}
 */
export const WORLD_PATCHES = {
  e2b: fileURLToPath(new URL('../../../../bundles/world-e2b/cordis.patch.yml', import.meta.url)),
}

/**
 * One more layer the session servers (`dsh-acp`, `dsh-jsonrpc-agent`) add with a world: their
 * sessions each name a folder and are asked about their change when a turn ends.
 * @type {Record<string, string>}
 */
export const WORLD_SESSION_PATCHES = {
  e2b: fileURLToPath(new URL('../../../../bundles/world-e2b/sessions.patch.yml', import.meta.url)),
}

/** The world names, `local` first, as the help text and the errors list them. */
export const WORLD_NAMES = ['local', ...Object.keys(WORLD_PATCHES)]

/** One line for a bin's `--help`, after the flag column. */
export const WORLD_HELP = `where commands and files live: ${WORLD_NAMES.join(' | ')} (default local; e2b: an E2B sandbox, needs E2B_API_KEY)`

/**
 * What `--world VALUE` means: the patch layer to add (none for `local`), the session servers'
 * extra layer (`sessions`), or a one-line usage error (exit 2) for a missing or unknown name.
 * @param {string | undefined} value
 * @returns {{ patch?: string; sessions?: string; error?: string }}
 */
export function worldPatch(value) {
  const known = WORLD_NAMES.join(', ')
  if (!value) return { error: `--world needs a world name (${known})` }
  if (value === 'local') return {}
  if (!Object.hasOwn(WORLD_PATCHES, value)) return { error: `--world: unknown world "${value}" (known: ${known})` }
  const sessions = Object.hasOwn(WORLD_SESSION_PATCHES, value) ? WORLD_SESSION_PATCHES[value] : undefined
  return { patch: WORLD_PATCHES[value], ...(sessions ? { sessions } : {}) }
}
