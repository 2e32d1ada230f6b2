// The web surface's context for the model (`surfaceContext` of the web-startup row): two prompt
// sections and one shell variable, registered once the server listens and its URL is known.
//   web:surface         the user follows the session in the dsh web page at <url>: what that page
//                       shows, so the model can point there instead of repeating what is on screen
//   web:harness-source  where dsh itself is installed, so a question about dsh can be answered
//                       from its own README files rather than from memory
//   DSH_WEB_URL         the page's URL in the environment of the commands the model runs (through
//                       ctx.shellEnv, so only shell tools of this process see it; other surfaces
//                       never mount this row)
// Each registration goes away with the row; each one waits for its service (typed inject), so a
// composition without a system prompt or without shell tools simply gets less.
import { existsSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Context } from 'cordis'
import type {} from '@dsh/shell-env'
import type {} from '@dsh/system-prompt'

export const WEB_SURFACE_SECTION = 'web:surface'
export const HARNESS_SOURCE_SECTION = 'web:harness-source'
export const WEB_URL_VARIABLE = 'DSH_WEB_URL'

/** The web-surface section for a page served at `url`. */
export function webSurfaceText(url: string): string {
  return (
    `Web surface: the user follows this session in the dsh web page at ${url} ($${WEB_URL_VARIABLE} in commands). ` +
    'It renders your replies as Markdown and shows each tool call as a card with its output, file edits as diffs, ' +
    'and attached images, so refer to what is on screen instead of repeating long output.'
  )
}

/** Where dsh is installed, as the harness-source section says it. */
export interface HarnessRoot {
  /** The checkout or the installed `dsh` package's root. */
  root: string
  /** Where each package's README lies, relative to the root. */
  packages: string
}

/**
 * The directory dsh runs from: the first ancestor of `from` that holds a `profiles/` folder and a
 * package.json (a checkout's root, or the root of the npm package `scripts/pack.mjs` builds).
 * Undefined when none does (a bundle copied elsewhere).
 */
export function findHarnessRoot(from: string = fileURLToPath(import.meta.url)): HarnessRoot | undefined {
  let dir = dirname(from)
  for (;;) {
    if (isDirectory(join(dir, 'profiles')) && existsSync(join(dir, 'package.json'))) {
      return { root: dir, packages: isDirectory(join(dir, 'packages')) ? 'packages/*/*/' : 'node_modules/@dsh/*/' }
    }
    const up = dirname(dir)
    if (up === dir) return undefined
    dir = up
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/** The harness-source section for an installation. */
export function harnessSourceText(harness: HarnessRoot): string {
  return (
    `dsh itself is installed at ${harness.root}: when asked about dsh, read its README.md and those of ` +
    `its packages (${harness.packages}) instead of guessing.`
  )
}

/** Registers both sections and DSH_WEB_URL for a page at `url`; each goes with `ctx`. */
export function registerSurfaceContext(ctx: Context, url: string, harness = findHarnessRoot()): void {
  ctx.inject(['systemPrompt'], (inner) => {
    // Stable: the URL is fixed for the process's life, so the provider's prompt cache survives.
    inner.systemPrompt.registerSection({ id: WEB_SURFACE_SECTION, order: 880, text: webSurfaceText(url) })
    if (harness)
      inner.systemPrompt.registerSection({ id: HARNESS_SOURCE_SECTION, order: 890, text: harnessSourceText(harness) })
  })
  ctx.inject(['shellEnv'], (inner) => {
    inner.shellEnv.register({
      name: WEB_URL_VARIABLE,
      description: 'URL of the dsh web page serving this session.',
      value: url,
    })
  })
}
