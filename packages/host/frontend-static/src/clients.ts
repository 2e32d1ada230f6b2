// Which enabled plugins ship a browser half, and where it lives: a package declares one with a
// `./client` entry in its package.json `exports` (a file, or a directory ending in "/"); every
// file in that entry's directory is then served at `/plugins/<package-name>/<file>`.
import { readFileSync } from 'node:fs'
import { realpathSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { inventoryOf, packageInfoOfModule, type LoaderLike } from '@dsh/plugin-inventory'

export interface ClientPlugin {
  /** The npm package name, the second part of the URL. */
  package: string
  /** Absolute real directory whose files are served. */
  dir: string
  /** The entry file relative to `dir` (what a client imports first), when the export names a file. */
  entry?: string
  /** `/plugins/<package>/` */
  baseUrl: string
  /**
   * `deferred`: the package's `dsh.clientLoad` says its half adds nothing to the conversation's
   * first screen, so the page imports it after that screen has painted (and does not preload it).
   */
  load: 'eager' | 'deferred'
  /** Why `dsh.clientLoad` was not understood (the half then loads eagerly). */
  loadError?: string
}

/** What a package.json may say in `dsh.clientLoad`. */
export const CLIENT_LOADS = ['eager', 'deferred'] as const

const CONDITIONS = ['browser', 'import', 'default']

function pickTarget(target: unknown): string | undefined {
  if (typeof target === 'string') return target
  if (target && typeof target === 'object' && !Array.isArray(target)) {
    for (const cond of CONDITIONS) {
      const hit = pickTarget((target as Record<string, unknown>)[cond])
      if (hit) return hit
    }
  }
  return undefined
}

/** The browser half of the package in `pkgDir`, or undefined when it declares none. */
export function clientOfPackage(pkgName: string, pkgDir: string): ClientPlugin | undefined {
  let manifest: { exports?: unknown; dsh?: { clientLoad?: unknown } }
  try {
    manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as typeof manifest
  } catch {
    return undefined
  }
  const exportsMap = manifest.exports
  if (!exportsMap || typeof exportsMap !== 'object' || Array.isArray(exportsMap)) return undefined
  const target = pickTarget((exportsMap as Record<string, unknown>)['./client'])
  if (!target?.startsWith('./')) return undefined
  const full = resolve(pkgDir, target)
  let dir: string
  let entry: string | undefined
  try {
    if (target.endsWith('/')) dir = realpathSync(full)
    else {
      const real = realpathSync(full)
      if (!statSync(real).isFile()) return undefined
      dir = dirname(real)
      entry = real.slice(dir.length + 1)
    }
    // The served directory must stay inside the package.
    const root = realpathSync(pkgDir)
    if (dir !== root && !dir.startsWith(root + '/')) return undefined
  } catch {
    return undefined
  }
  const declared = manifest.dsh?.clientLoad
  const known = declared === undefined || (CLIENT_LOADS as readonly unknown[]).includes(declared)
  return {
    package: pkgName,
    dir,
    ...(entry ? { entry } : {}),
    baseUrl: `/plugins/${pkgName}/`,
    load: declared === 'deferred' ? 'deferred' : 'eager',
    ...(known
      ? {}
      : {
          loadError: `${pkgName}: package.json dsh.clientLoad is ${JSON.stringify(declared)}, expected "eager" or "deferred"; loading its browser half eagerly`,
        }),
  }
}

/** Row states of a tree still coming up that will be active once it is (a failed row fails the boot). */
const COMING_UP = new Set(['pending', 'loading', 'not-loaded', 'active'])

/**
 * Every enabled, active row's browser half, in Loader order, one per package. `booting`: the tree
 * is still mounting, so rows on their way up (not yet imported or applied) count as well: a page
 * loaded during the boot lists the same halves as one loaded after it.
 */
export function clientPlugins(
  loader: LoaderLike | undefined,
  cache?: Map<string, ClientPlugin | undefined>,
  booting = false,
): ClientPlugin[] {
  const out: ClientPlugin[] = []
  const seen = new Set<string>()
  for (const row of inventoryOf(loader)) {
    if (!row.enabled || (booting ? !COMING_UP.has(row.state) : row.state !== 'active')) continue
    const info = packageInfoOfModule(row.module)
    if (!info?.dir || seen.has(info.name)) continue
    seen.add(info.name)
    let client: ClientPlugin | undefined
    if (cache?.has(info.dir)) client = cache.get(info.dir)
    else {
      client = clientOfPackage(info.name, info.dir)
      cache?.set(info.dir, client)
    }
    if (client) out.push(client)
  }
  return out
}

/** Splits `/plugins/@scope/name/a/b.js` into the package name and the file path (`/a/b.js`). */
export function splitPluginPath(pathname: string, prefix = '/plugins/'): { package: string; file: string } | undefined {
  if (!pathname.startsWith(prefix)) return undefined
  const parts = pathname.slice(prefix.length).split('/')
  let pkg: string
  try {
    if (parts[0]?.startsWith('@') || parts[0]?.startsWith('%40')) {
      if (parts.length < 3) return undefined
      pkg = decodeURIComponent(parts[0]) + '/' + decodeURIComponent(parts[1])
      parts.splice(0, 2)
    } else {
      if (parts.length < 2 || !parts[0]) return undefined
      pkg = decodeURIComponent(parts[0])
      parts.splice(0, 1)
    }
  } catch {
    return undefined
  }
  return { package: pkg, file: '/' + parts.join('/') }
}
