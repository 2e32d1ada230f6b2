// The prelinked row modules written by scripts/prelink.mjs: per shipped layer, one file exporting
// that layer's row modules (code shared by layers in chunk files), so a boot loads a few files
// instead of one per package. Used only when it is certainly equivalent to importing the files:
// every enabled row is in a prelinked layer and every file they were built from is unchanged
// (same size and mtime). Anything else imports file by file as before.
// A layer's early rows (packages that list the row in `dsh.earlyRows`, such as the web server's
// startup) are in their own small entry file: those files are loaded before the tree mounts, the
// rest in the background, so an early row starts (a server listens) while the big files compile.
// Stacks: when one stack file (the base layer plus the layer this boot adds, see
// scripts/prelink.mjs) holds every enabled row, that file is compiled as a `vm.Script` with a V8
// code cache kept in <dsh home>/.cache/compile, instead of importing the layer files: Node 20
// keeps no compiled code for ES modules, and compiling them was about a tenth of a one-shot.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { isAscii } from 'node:buffer'
import { createHash } from 'node:crypto'
import { Script } from 'node:vm'

/** Which host process boots: each has its own prelinked variant (see scripts/prelink.mjs). */
export type PrelinkVariant = 'dsh' | 'acp' | 'jsonrpc'

interface Manifest {
  variant: string
  /**
   * Entry name (`bundles-base`, `bundles-web-early`) -> the row module URLs its file exports;
   * `early` entries are loaded before the tree mounts, the others while it mounts.
   */
  layers: Record<string, { modules: string[]; early?: boolean }>
  inputs: Array<[file: string, size: number, mtimeMs: number]>
  /** Stack id -> the stack: every row module of its layers, in one script. */
  stacks?: Record<string, StackEntry>
}

interface StackEntry {
  layers: string[]
  modules: string[]
  /** Its row modules that are early rows (loaded with the rest here: the stack is one file). */
  early?: string[]
  /** `<id>.script.js`: `(async function (imports, load) { ... return { modules } })`. */
  script: string
  /** `<id>.imports.mjs`: the script's static imports (`imports`, namespaces) and `load`, its import(). */
  imports: string
  /** sha256 (32 hex) of the script's text, from the build. */
  hash: string
}

/** What happened to the code cache of a stack: used, absent, refused by V8, or turned off. */
export type StackCache = 'used' | 'absent' | 'rejected' | 'off'

/** Row module URL -> its module namespace. */
type Importers = Record<string, () => Promise<unknown>>

/** The checkout root this package is in (dist/ and src/ are both two levels below the package). */
const installRoot = () => fileURLToPath(new URL('../../../../', import.meta.url))

/** Why the prelinked modules were not used (for DSH_DEBUG), or undefined when they were. */
export interface PrelinkDecision {
  importers?: Importers
  reason?: string
  /** The row URLs of the early files (already loaded). */
  early?: ReadonlySet<string>
  /**
   * Starts loading the other files; their importers wait for it. Called by the boot once the
   * early rows are up (so their work is not stuck behind compiling the big files); idempotent.
   */
  startRest?: () => void
  /** The stack the rows came from, when one did, and what happened to its code cache. */
  stack?: { id: string; cache: StackCache }
  /**
   * Writes the stack's code cache (the functions compiled so far) when none was used at the
   * start; never throws. Each call replaces what the previous one wrote, so a later call adds
   * the functions compiled since (the boot calls it at `app/ready` and again when the app stops).
   * Undefined when there is nothing to write.
   */
  saveCodeCache?: () => void
}

/**
 * The prelinked importers for `urls` (the enabled rows' module URLs), or a reason they cannot be
 * used. `dir` defaults to `<checkout>/prelinked/<variant>`; DSH_NO_PRELINK=1 turns the whole
 * mechanism off.
 */
export async function loadPrelinked(
  urls: readonly string[],
  variant: PrelinkVariant,
  opts: {
    dir?: string
    root?: string
    env?: NodeJS.ProcessEnv
    importFile?: (url: string) => Promise<unknown>
    /** Where stacks' V8 code caches live; `false` (the default): none. */
    cacheDir?: string | false
  } = {},
): Promise<PrelinkDecision> {
  const env = opts.env ?? process.env
  if (env.DSH_NO_PRELINK) return { reason: 'DSH_NO_PRELINK is set' }
  const root = opts.root ?? installRoot()
  const dir = opts.dir ?? join(root, 'prelinked', variant)
  let manifest: Manifest
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest
  } catch {
    return { reason: `no prelinked modules at ${dir}` }
  }
  if (
    manifest.variant !== variant ||
    !manifest.layers ||
    typeof manifest.layers !== 'object' ||
    !Array.isArray(manifest.inputs)
  ) {
    return { reason: `${join(dir, 'manifest.json')} is not the ${variant} variant's manifest` }
  }
  // The fewest layer files that hold every row: the layer of each row, first listed first.
  const layerOf = new Map<string, string>()
  for (const [entry, layer] of Object.entries(manifest.layers))
    for (const url of layer.modules ?? []) if (!layerOf.has(url)) layerOf.set(url, entry)
  const needed = new Set<string>()
  for (const url of urls) {
    const entry = layerOf.get(url)
    if (!entry) return { reason: `row module ${url} is not prelinked` }
    needed.add(entry)
  }
  for (const [file, size, mtimeMs] of manifest.inputs) {
    try {
      const st = statSync(join(root, file))
      if (st.size !== size || st.mtimeMs !== mtimeMs) return { reason: `${file} changed after prelinking` }
    } catch {
      return { reason: `${file} is gone` }
    }
  }
  const stack = pickStack(manifest.stacks, urls)
  if (stack) {
    try {
      const loaded = await loadStack(dir, stack[0], stack[1], variant, root, opts.cacheDir ?? false)
      const importers: Importers = {}
      for (const url of urls) {
        if (!Object.hasOwn(loaded.modules, url)) throw new Error(`the stack does not export ${url}`)
        const ns = loaded.modules[url]
        importers[url] = () => Promise.resolve(ns)
      }
      const early = new Set((stack[1].early ?? []).filter((url) => Object.hasOwn(importers, url)))
      return { importers, early, stack: { id: stack[0], cache: loaded.cache }, saveCodeCache: loaded.save }
    } catch (error) {
      return {
        reason: `prelinked stack ${stack[0]} in ${dir} did not load: ${(error as Error)?.message ?? String(error)}`,
      }
    }
  }
  const load = (entries: string[]) =>
    Promise.all(
      entries.map(
        (entry) =>
          import(pathToFileURL(join(dir, `${entry}.mjs`)).href) as Promise<{ modules?: Record<string, unknown> }>,
      ),
    ).then((loaded) => {
      const namespaces = new Map<string, unknown>()
      for (const mod of loaded) for (const [url, ns] of Object.entries(mod.modules ?? {})) namespaces.set(url, ns)
      return namespaces
    })
  const early = [...needed].filter((entry) => manifest.layers[entry]?.early)
  const rest = [...needed].filter((entry) => !manifest.layers[entry]?.early)
  const importers: Importers = {}
  const earlyUrls = new Set<string>()
  try {
    for (const [url, ns] of await load(early)) {
      importers[url] = () => Promise.resolve(ns)
      earlyUrls.add(url)
    }
  } catch (error) {
    return { reason: `prelinked modules in ${dir} did not load: ${(error as Error)?.message ?? String(error)}` }
  }
  let startRest = () => {}
  if (rest.length) {
    // The rest load once started (by the boot, after the early rows are up). Every row of them
    // resolves at once when all are loaded, so they apply in row order as before. A file that
    // does not load falls back to importing the row's own module (the equivalent; a broken row
    // then reports its own error).
    const loading = new Promise<void>((resolve) => (startRest = resolve)).then(() => load(rest))
    loading.catch(() => undefined)
    const importFile = opts.importFile ?? ((url: string) => import(url))
    for (const url of urls) {
      if (Object.hasOwn(importers, url)) continue
      importers[url] = () =>
        loading.then(
          (namespaces) => (namespaces.has(url) ? namespaces.get(url) : importFile(url)),
          () => importFile(url),
        )
    }
  }
  // Without early rows there is nothing to wait for.
  if (!earlyUrls.size) startRest()
  return { importers, early: earlyUrls, startRest }
}

/** The stack with the fewest rows that holds every one of `urls`, if any. */
function pickStack(stacks: Manifest['stacks'], urls: readonly string[]): [string, StackEntry] | undefined {
  let best: [string, StackEntry] | undefined
  for (const [id, stack] of Object.entries(stacks ?? {})) {
    if (
      !stack ||
      !Array.isArray(stack.modules) ||
      typeof stack.script !== 'string' ||
      typeof stack.imports !== 'string'
    )
      continue
    const held = new Set(stack.modules)
    if (!urls.every((url) => held.has(url))) continue
    if (!best || stack.modules.length < best[1].modules.length) best = [id, stack]
  }
  return best
}

/**
 * Loads a stack: its imports module first (the npm packages and host files, in the order the
 * bundled module imported them), then the script, compiled with the code cache when there is one
 * for exactly this file. The cache file's name holds everything its validity depends on beyond
 * what V8 checks itself (V8 checks its version and flags, but of the source only its length):
 * the script's content hash from the build, its size and mtime here, and Node's version.
 */
async function loadStack(
  dir: string,
  id: string,
  stack: StackEntry,
  variant: PrelinkVariant,
  root: string,
  cacheDir: string | false,
): Promise<{ modules: Record<string, unknown>; cache: StackCache; save?: () => void }> {
  const { imports, load } = (await import(pathToFileURL(join(dir, stack.imports)).href)) as {
    imports: unknown[]
    load: (specifier: string) => Promise<unknown>
  }
  const file = join(dir, stack.script)
  const source = readSource(file)
  let cacheFile: string | undefined
  let cachedData: Buffer | undefined
  if (cacheDir) {
    const st = statSync(file)
    const key = createHash('sha256')
      .update(`${root}\0${stack.hash}\0${st.size}\0${st.mtimeMs}\0${process.version}\0${process.arch}`)
      .digest('hex')
      .slice(0, 24)
    cacheFile = join(cacheDir, `prelink-${variant}-${id}-${key}.v8`)
    try {
      cachedData = readFileSync(cacheFile)
    } catch {
      cachedData = undefined
    }
  }
  // The script's import() calls go to `load`, the imports module's own import(): a dynamic import
  // callback does not survive a code cache on Node 20.
  const script = new Script(source, { filename: file, cachedData })
  const cache: StackCache = !cacheFile
    ? 'off'
    : !cachedData
      ? 'absent'
      : script.cachedDataRejected
        ? 'rejected'
        : 'used'
  const run = script.runInThisContext() as (
    imports: unknown[],
    load: (specifier: string) => Promise<unknown>,
  ) => Promise<{ modules?: Record<string, unknown> }>
  const { modules } = await run(imports, load)
  if (!modules || typeof modules !== 'object') throw new Error(`${file} exported no modules`)
  const target = cacheFile
  const save = target && cache !== 'used' ? () => writeCodeCache(target, script) : undefined
  return { modules, cache, save }
}

/**
 * A stack's text. The build keeps stacks ASCII (one-byte strings; it warns otherwise), and for
 * ASCII bytes a latin1 decode gives the same string as UTF-8: Node 20's UTF-8 file decode took
 * 16-34 ms for a 1.1 MB stack, the buffer read plus latin1 0.3 ms. Anything else decodes as UTF-8.
 */
export function readSource(file: string): string {
  const bytes = readFileSync(file)
  return bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8')
}

/**
 * Writes `script`'s code cache to `file` (a temp file renamed into place, so a reader never sees
 * half of one), then removes older caches of the same stack. Failures (a read-only home) only
 * mean the next start compiles again.
 */
function writeCodeCache(file: string, script: Script): void {
  const dir = join(file, '..')
  const name = file.slice(dir.length + 1)
  const prefix = name.slice(0, name.lastIndexOf('-') + 1)
  try {
    const data = script.createCachedData()
    mkdirSync(dir, { recursive: true })
    const temp = `${file}.${process.pid}.tmp`
    writeFileSync(temp, data)
    renameSync(temp, file)
    for (const other of readdirSync(dir)) {
      if (other !== name && other.startsWith(prefix) && other.endsWith('.v8')) rmSync(join(dir, other), { force: true })
    }
  } catch {
    // best effort
  }
}
