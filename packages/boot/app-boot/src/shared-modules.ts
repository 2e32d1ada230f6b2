// A user's own plugin file (a profile's `./hello.ts`, a `--patch` row pointing at a file) usually
// sits where no node_modules holds cordis, schemastery or the @dsh packages. Its bare imports
// would then fail, or find a second copy of cordis whose Context is not the running one. We add
// a module resolution hook that retries a bare specifier that did not resolve from the importing
// file, this time from the dsh installation, so such files share the host's copies.
import { register } from 'node:module'
import { pathToFileURL } from 'node:url'
import { isBareSpecifier, type ResolvedRow } from '@dsh/app-compose'

// The hook runs on Node's loader thread; a data: URL needs no file next to the transpiled dist/.
const HOOKS = `
let fallback
export function initialize(data) { fallback = data.parentURL }
const bare = (s) => !/^(\\.{0,2}\\/|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(s)
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context)
  } catch (error) {
    if (!fallback || !bare(specifier) || error?.code !== 'ERR_MODULE_NOT_FOUND' || context.parentURL === fallback) throw error
    try {
      return await next(specifier, { ...context, parentURL: fallback })
    } catch {
      throw error
    }
  }
}
`

let registered = false

/**
 * True when some row (or group child) is a file the user named by path rather than a package, or
 * a package installed under one of `userDirs` (a profile's own node_modules, where `dsh plugin
 * add` puts plugins without their cordis/schemastery peers).
 */
export function hasUserFileRows(rows: readonly ResolvedRow[], userDirs: readonly string[] = []): boolean {
  const prefixes = userDirs.map((d) => pathToFileURL(d.endsWith('/') ? d : d + '/').href)
  const user = (r: ResolvedRow): boolean =>
    (typeof r.row.name === 'string' && !isBareSpecifier(r.row.name) && !r.row.name.startsWith('cordis:')) ||
    (r.url !== undefined && prefixes.some((p) => r.url!.startsWith(p))) ||
    (r.children ? r.children.some(user) : false)
  return rows.some(user)
}

/**
 * Lets bare imports from user plugin files fall back to the installation (`installBase`, a file
 * inside it). Registered at most once per process, and only when a composition has such rows:
 * a hook costs a loader thread, which a boot of packages alone does not need.
 */
export function shareInstallModules(installBase: string): void {
  if (registered) return
  registered = true
  register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, {
    data: { parentURL: pathToFileURL(installBase).href },
  })
}
