// Module specifier resolution for row names and bundle packages, done by us rather than by the
// loader: the loader would resolve bare names from its own folder inside node_modules.
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, isAbsolute, join, resolve as resolvePath } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const CONDITIONS = ['import', 'node', 'default']

let userConditions: string[] | undefined
/**
 * The `--conditions` (`-C`) this process runs with (flags or NODE_OPTIONS): Node adds them to
 * its own, so a source checkout run with `--conditions development` resolves rows to sources.
 */
function processConditions(): string[] {
  if (userConditions) return userConditions
  const args = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)]
  const found: string[] = []
  args.forEach((arg, i) => {
    const m = /^(?:--conditions|-C)(?:=(.*))?$/.exec(arg)
    if (!m) return
    const value = m[1] ?? args[i + 1]
    if (value) found.push(value)
  })
  userConditions = found
  return found
}

function pickExport(target: unknown, extra: readonly string[] = []): string | undefined {
  if (typeof target === 'string') return target
  if (Array.isArray(target)) {
    for (const t of target) {
      const hit = pickExport(t, extra)
      if (hit) return hit
    }
    return undefined
  }
  if (target && typeof target === 'object') {
    for (const [cond, value] of Object.entries(target)) {
      if (CONDITIONS.includes(cond) || extra.includes(cond)) {
        const hit = pickExport(value, extra)
        if (hit) return hit
      }
    }
  }
  return undefined
}

/** ESM-condition lookup for packages whose exports have no `require`/`default` entry. */
function resolveEsmPackage(specifier: string, fromDir: string): string | undefined {
  const split = splitSpecifier(specifier)
  if (!split) return undefined
  const { pkgName, subpath } = split
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const pkgDir = join(dir, 'node_modules', pkgName)
    const pkgJson = join(pkgDir, 'package.json')
    if (existsSync(pkgJson)) {
      const pkg = JSON.parse(readFileSync(pkgJson, 'utf8')) as { exports?: unknown; module?: string; main?: string }
      let target: string | undefined
      if (pkg.exports !== undefined) {
        const exp = pkg.exports
        const isSubpathMap =
          exp && typeof exp === 'object' && !Array.isArray(exp) && Object.keys(exp).some((k) => k.startsWith('.'))
        target = isSubpathMap
          ? pickExport((exp as Record<string, unknown>)[subpath])
          : subpath === '.'
            ? pickExport(exp)
            : undefined
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

/** `@scope/name` or `name`, and the `./sub` path after it (`.` for the package itself). */
function splitSpecifier(specifier: string): { pkgName: string; subpath: string } | undefined {
  const parts = specifier.split('/')
  const pkgName = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
  if (!pkgName || (specifier.startsWith('@') && parts.length < 2)) return undefined
  return { pkgName, subpath: '.' + specifier.slice(pkgName.length) }
}

/**
 * What decided a fast-path resolution (see resolveWithExports): the package.json paths tried and
 * found absent, the one read, the path its export target was joined to and the real file that
 * gave. The same inputs give the same answer; app-boot's row table (row-table.ts) records them.
 */
export interface ResolveTrace {
  misses: string[]
  pkgJson: string
  linked: string
  file: string
}

/**
 * The common case of a row name, cheaply: a package with an `exports` map found in a
 * `node_modules` above `fromDir`, its target for the `import` conditions (and this process's
 * `--conditions`), symlinks resolved.
 * One package.json read and one native realpath per name, where `require.resolve` walks, stats
 * and realpaths component by component (about 0.3 ms a name, most of a boot's composition).
 * Undefined leaves the name to Node's resolver (no exports map, a pattern export, no package).
 * With `trace`, what decided a hit is written into it.
 */
function resolveWithExports(specifier: string, fromDir: string, trace?: ResolveTrace): string | undefined {
  const split = splitSpecifier(specifier)
  if (!split) return undefined
  const misses: string[] = []
  for (let dir = fromDir; ; dir = dirname(dir)) {
    if (basename(dir) !== 'node_modules') {
      const pkgDir = join(dir, 'node_modules', split.pkgName)
      const pkgJson = join(pkgDir, 'package.json')
      let text: string | undefined
      try {
        text = readFileSync(pkgJson, 'utf8')
      } catch {
        text = undefined
      }
      if (text === undefined) {
        if (trace) misses.push(pkgJson)
      } else {
        let exp: unknown
        try {
          exp = (JSON.parse(text) as { exports?: unknown }).exports
        } catch {
          return undefined
        }
        if (exp === undefined || exp === null) return undefined
        const isSubpathMap =
          typeof exp === 'object' && !Array.isArray(exp) && Object.keys(exp).some((k) => k.startsWith('.'))
        const conditions = processConditions()
        const target = isSubpathMap
          ? pickExport((exp as Record<string, unknown>)[split.subpath], conditions)
          : split.subpath === '.'
            ? pickExport(exp, conditions)
            : undefined
        if (!target?.startsWith('./')) return undefined
        const linked = join(pkgDir, target)
        try {
          const file = realpathSync.native(linked)
          if (!statSync(file).isFile()) return undefined
          if (trace) Object.assign(trace, { misses, pkgJson, linked, file })
          return file
        } catch {
          return undefined
        }
      }
    }
    if (dirname(dir) === dir) return undefined
  }
}

/** The `--conditions` this process resolves with besides `import`, `node` and `default`. */
export function resolveConditions(): readonly string[] {
  return processConditions()
}

/**
 * `resolveFrom` for a bare name, with what decided the answer, when the fast path (a package
 * with an `exports` map) answered it; undefined when it did not (Node's resolver would).
 */
export function traceResolve(specifier: string, fromFile: string): { url: string; trace: ResolveTrace } | undefined {
  if (!isBareSpecifier(specifier)) return undefined
  const trace = {} as ResolveTrace
  const file = resolveWithExports(specifier, dirname(fromFile), trace)
  return file ? { url: pathToFileURL(file).href, trace } : undefined
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
 * URLs are taken as they are; bare names of packages with an `exports` map resolve with the
 * `import` conditions (what the loader's `import()` of the row sees), others use Node's
 * resolution from that file, then an `import`-condition lookup.
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
  const fast = resolveWithExports(specifier, dirname(fromFile))
  if (fast) return pathToFileURL(fast).href
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
  return !(
    name.startsWith('./') ||
    name.startsWith('../') ||
    name.startsWith('file:') ||
    isAbsolute(name) ||
    name.startsWith('cordis:')
  )
}
