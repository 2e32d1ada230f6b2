// @dsh/native-addons: which of dsh's optional native add-ons this installation has, and the one
// line that says what is off without them. better-sqlite3 backs session search (and the opt-in
// SQLite storage rows); node-pty backs persistent terminals. Both are optional dependencies of the
// published `dsh` package: where npm cannot build them (no compiler, no Node headers) the install
// still completes, sessions stay in JSONL (the default), session search and terminals are off,
// and the plugin of this package prints one stderr line at start saying so.
//
// The check is cheap on purpose (it runs at every start): it finds each package the way Node's
// resolution walks node_modules upwards and looks for its compiled binary without loading it. A binary that exists but does not load (built for
// another Node) is reported by the feature that loads it, when used.
import { existsSync, realpathSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Context } from 'cordis'
import Schema from 'schemastery'

export const name = '@dsh/native-addons'
export const inject: string[] = []

export type AddonName = 'better-sqlite3' | 'node-pty'

export interface AddonStatus {
  name: AddonName
  /** The package resolves and its compiled binary is on disk. */
  present: boolean
  /** What is off without it, for the user. */
  off: string
  /** Why it counts as absent (unresolvable package, no binary). */
  reason?: string
}

/** Where each add-on keeps its compiled binary, relative to its package directory (any one). */
const ADDONS: Record<AddonName, { off: string; binaries: () => string[] }> = {
  'better-sqlite3': {
    off: 'session search off, sessions in JSONL',
    binaries: () => ['build/Release/better_sqlite3.node', 'build/Debug/better_sqlite3.node'],
  },
  'node-pty': {
    off: 'terminals off',
    binaries: () => [
      'build/Release/pty.node',
      'build/Debug/pty.node',
      `prebuilds/${process.platform}-${process.arch}/pty.node`,
    ],
  },
}

/** The directory of package `name` as Node would find it from `dir` (node_modules upwards), if any. */
function findPackage(name: string, dir: string): string | undefined {
  for (let d = dir; ; d = dirname(d)) {
    const candidate = join(d, 'node_modules', name)
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate)
    if (dirname(d) === d) return undefined
  }
}

/**
 * The status of each add-on as found from directory `from` (default: this package's directory,
 * which depends on both). Nothing is loaded.
 */
export function nativeAddons(from: string = fileURLToPath(new URL('.', import.meta.url))): AddonStatus[] {
  return (Object.keys(ADDONS) as AddonName[]).map((addon) => {
    const { off, binaries } = ADDONS[addon]
    const dir = findPackage(addon, from)
    if (!dir) return { name: addon, present: false, off, reason: 'not installed' }
    if (binaries().some((rel) => existsSync(join(dir, rel)))) return { name: addon, present: true, off }
    return { name: addon, present: false, off, reason: `not built (no binary in ${dir})` }
  })
}

/** The one line for the absent add-ons, or undefined when every one is present. */
export function missingAddonsLine(statuses: readonly AddonStatus[]): string | undefined {
  const missing = statuses.filter((s) => !s.present)
  if (!missing.length) return undefined
  const parts = missing.map((s) => `${s.name} (${s.off})`).join(', ')
  return `dsh: running without native add-on${missing.length > 1 ? 's' : ''} ${parts}; reinstall dsh where a C++ compiler and Node's headers are available to turn ${missing.length > 1 ? 'them' : 'it'} on`
}

export interface Config {
  /** Print the line at start when an add-on is absent. */
  notice: boolean
  /** Resolve the add-ons from this directory instead of this package (tests, unusual layouts). */
  resolveFrom?: string
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  notice: Schema.boolean()
    .default(true)
    .description('Print one stderr line at start naming the absent add-ons and what is off.'),
  resolveFrom: Schema.string().description('Resolve the add-ons from this directory instead of this package.'),
})

/** Once per process, however many hosts or reloads apply the plugin. */
const NOTICED = Symbol.for('dsh.native-addons.noticed')

export function apply(_ctx: Context, config: Partial<Config> = {}): void {
  if (config.notice === false) return
  const line = missingAddonsLine(nativeAddons(config.resolveFrom))
  const state = globalThis as { [NOTICED]?: boolean }
  if (!line || state[NOTICED]) return
  state[NOTICED] = true
  process.stderr.write(`${line}\n`)
}
