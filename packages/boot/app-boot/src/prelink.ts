// The prelinked row modules written by scripts/prelink.mjs: per shipped layer, one file exporting
// that layer's row modules (code shared by layers in chunk files), so a boot loads a few files
// instead of one per package. Used only when it is certainly equivalent to importing the files:
// every enabled row is in a prelinked layer and every file they were built from is unchanged
// (same size and mtime). Anything else imports file by file as before.
// A layer's early rows (packages that list the row in `dsh.earlyRows`, such as the web server's
// startup) are in their own small entry file: those files are loaded before the tree mounts, the
// rest in the background, so an early row starts (a server listens) while the big files compile.
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

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
}

/** Row module URL -> its module namespace. */
type Importers = Record<string, () => Promise<unknown>>

/** The checkout root of this app-boot (dist/ and src/ are both two levels below the package). */
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
}

/**
 * The prelinked importers for `urls` (the enabled rows' module URLs), or a reason they cannot be
 * used. `dir` defaults to `<checkout>/prelinked/<variant>`; DSH_NO_PRELINK=1 turns the whole
 * mechanism off.
 */
export async function loadPrelinked(
  urls: readonly string[],
  variant: PrelinkVariant,
  opts: { dir?: string; root?: string; env?: NodeJS.ProcessEnv; importFile?: (url: string) => Promise<unknown> } = {},
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
  if (manifest.variant !== variant || !manifest.layers || typeof manifest.layers !== 'object' || !Array.isArray(manifest.inputs)) {
    return { reason: `${join(dir, 'manifest.json')} is not the ${variant} variant's manifest` }
  }
  // The fewest layer files that hold every row: the layer of each row, first listed first.
  const layerOf = new Map<string, string>()
  for (const [entry, layer] of Object.entries(manifest.layers)) for (const url of layer.modules ?? []) if (!layerOf.has(url)) layerOf.set(url, entry)
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
  const load = (entries: string[]) =>
    Promise.all(entries.map((entry) => import(pathToFileURL(join(dir, `${entry}.mjs`)).href) as Promise<{ modules?: Record<string, unknown> }>)).then((loaded) => {
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
      importers[url] = () => loading.then((namespaces) => (namespaces.has(url) ? namespaces.get(url) : importFile(url)), () => importFile(url))
    }
  }
  // Without early rows there is nothing to wait for.
  if (!earlyUrls.size) startRest()
  return { importers, early: earlyUrls, startRest }
}
