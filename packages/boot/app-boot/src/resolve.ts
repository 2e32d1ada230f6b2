// Module specifier resolution for row names and bundle packages, done by us rather than by the
// loader: the loader would resolve bare names from its own folder inside node_modules.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, isAbsolute, join, resolve as resolvePath } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const CONDITIONS = ['import', 'node', 'default']

function pickExport(target: unknown): string | undefined {
  if (typeof target === 'string') return target
  if (Array.isArray(target)) {
    for (const t of target) {
      const hit = pickExport(t)
      if (hit) return hit
    }
    return undefined
  }
  if (target && typeof target === 'object') {
    for (const [cond, value] of Object.entries(target)) {
      if (CONDITIONS.includes(cond)) {
        const hit = pickExport(value)
        if (hit) return hit
      }
    }
  }
  return undefined
}

/** ESM-condition lookup for packages whose exports have no `require`/`default` entry. */
function resolveEsmPackage(specifier: string, fromDir: string): string | undefined {
  const parts = specifier.split('/')
  const pkgName = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
  const subpath = '.' + specifier.slice(pkgName.length)
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const pkgDir = join(dir, 'node_modules', pkgName)
    const pkgJson = join(pkgDir, 'package.json')
    if (existsSync(pkgJson)) {
      const pkg = JSON.parse(readFileSync(pkgJson, 'utf8')) as { exports?: unknown; module?: string; main?: string }
      let target: string | undefined
      if (pkg.exports !== undefined) {
        const exp = pkg.exports
        const isSubpathMap = exp && typeof exp === 'object' && !Array.isArray(exp) && Object.keys(exp).some((k) => k.startsWith('.'))
        target = isSubpathMap ? pickExport((exp as Record<string, unknown>)[subpath]) : subpath === '.' ? pickExport(exp) : undefined
      } else if (subpath === '.') {
        target = pkg.module ?? pkg.main ?? 'index.js'
      } else {
        target = subpath
      }
      if (target) {
        const file = join(pkgDir, target)
        if (existsSync(file)) return file
      }
      return undefined
    }
    if (dirname(dir) === dir) return undefined
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/**
 * Resolves `specifier` as seen from the file `fromFile` to a file URL, or returns undefined.
 * Relative names (`./x.ts`) resolve against the file's directory; absolute paths and `file:`
 * URLs are taken as they are; bare names use Node's resolution from that file, then an
 * `import`-condition lookup.
 */
export function resolveFrom(specifier: string, fromFile: string): string | undefined {
  if (specifier.startsWith('file:')) {
    return isFile(fileURLToPath(specifier)) ? specifier : undefined
  }
  if (isAbsolute(specifier)) return isFile(specifier) ? pathToFileURL(specifier).href : undefined
  if (specifier.startsWith('./') || specifier.startsWith('../')) {
    const path = resolvePath(dirname(fromFile), specifier)
    return isFile(path) ? pathToFileURL(path).href : undefined
  }
  try {
    return pathToFileURL(createRequire(fromFile).resolve(specifier)).href
  } catch {
    const hit = resolveEsmPackage(specifier, dirname(fromFile))
    return hit ? pathToFileURL(hit).href : undefined
  }
}

/** Tries each base file in order; returns the first hit. */
export function resolveFirst(specifier: string, bases: readonly string[]): string | undefined {
  for (const base of bases) {
    const hit = resolveFrom(specifier, base)
    if (hit) return hit
  }
  return undefined
}

export function isBareSpecifier(name: string): boolean {
  return !(name.startsWith('./') || name.startsWith('../') || name.startsWith('file:') || isAbsolute(name) || name.startsWith('cordis:'))
}
