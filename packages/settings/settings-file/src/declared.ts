// Settings namespaces declared by the installed packages: a package lists the sections it reads in
// its package.json (`"dsh": { "settings": ["permissions"] }`), so a section read only by a plugin
// of another profile is not called unknown when this profile does not load that plugin.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

function readJson(file: string): Record<string, unknown> | undefined {
  try {
    const data: unknown = JSON.parse(readFileSync(file, 'utf8'))
    return typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** `node_modules/<name>/package.json` from `dir` upwards, as Node's resolution looks for it. */
function findPackageJson(dir: string, name: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const file = join(at, 'node_modules', name, 'package.json')
    if (existsSync(file)) return file
    if (dirname(at) === at) return undefined
  }
}

function declaredBy(pkgFile: string, out: Set<string>, seen = new Set<string>()): void {
  if (seen.has(pkgFile)) return
  seen.add(pkgFile)
  const pkg = readJson(pkgFile)
  if (!pkg) return
  const dir = dirname(pkgFile)
  const deps = {
    ...(pkg.dependencies as Record<string, string> | undefined),
    ...(pkg.optionalDependencies as Record<string, string> | undefined),
  }
  for (const name of Object.keys(deps)) {
    const file = findPackageJson(dir, name)
    const dsh = file ? (readJson(file)?.dsh as { settings?: unknown; bundle?: unknown } | undefined) : undefined
    if (Array.isArray(dsh?.settings)) for (const ns of dsh.settings) if (typeof ns === 'string') out.add(ns)
    // A bundle's rows are installed plugins too: its own dependencies are read as well.
    if (file && dsh?.bundle) declaredBy(file, out, seen)
  }
}

/**
 * The namespaces the installation's packages (the dependencies of `installBase`) and the plugins
 * installed into any profile under `home` declare.
 */
export function declaredNamespaces(installBase: string | undefined, home: string | undefined): string[] {
  const out = new Set<string>()
  if (installBase) declaredBy(installBase, out)
  if (home) {
    const profiles = join(home, 'profiles')
    let names: string[] = []
    try {
      names = readdirSync(profiles)
    } catch {
      // No profiles yet.
    }
    for (const name of names) declaredBy(join(profiles, name, 'package.json'), out)
  }
  return [...out].sort()
}
