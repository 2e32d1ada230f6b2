// Profiles and bundles: locating them, reading their manifests, and composing the ordered layers
// into resolved rows. Everything a boot or a `--dump-config` needs comes out of composeProfile().
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { basename, dirname, isAbsolute, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { homeLayout, PROFILE_NAME } from '@dsh/home-paths'
import { applyLayers, type ComposedRow } from './apply.ts'
import { DshUserError } from './errors.ts'
import { parseLayerCached, type Layer, type Row } from './layer.ts'
import { isBareSpecifier, resolveFirst } from './resolve.ts'
import { loadRowTable, type RowTable } from './row-table.ts'

export interface ProfileManifest {
  name: string
  dir: string
  packageJson: string
  bundles: string[]
  /** `dsh.profile.hotReload`: a long-lived profile (web, tui) re-composes on edits of its layer files. */
  hotReload: boolean
}

export interface BundleManifest {
  name: string
  packageJson: string
  patch: string
}

function readJson(file: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new DshUserError(`${file}: cannot read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  try {
    const data = JSON.parse(text) as unknown
    if (!data || typeof data !== 'object' || Array.isArray(data)) throw new Error('expected a JSON object')
    return data as Record<string, unknown>
  } catch (error) {
    throw new DshUserError(`${file}: invalid JSON: ${(error as Error).message}`)
  }
}

function field(obj: Record<string, unknown>, path: string): unknown {
  let cur: unknown = obj
  for (const key of path.split('.')) {
    if (!cur || typeof cur !== 'object') return undefined
    cur = (cur as Record<string, unknown>)[key]
  }
  return cur
}

/** Reads `<dir>/package.json` and its `dsh.profile.bundles` list. */
export function readProfile(dir: string, name: string = basename(dir)): ProfileManifest {
  const packageJson = join(dir, 'package.json')
  const pkg = readJson(packageJson)
  const bundles = field(pkg, 'dsh.profile.bundles')
  if (bundles === undefined) {
    throw new DshUserError(
      `${packageJson}: field "dsh.profile.bundles" is missing; a profile lists its bundles there, e.g. ["@dsh/bundle-base"]`,
    )
  }
  if (!Array.isArray(bundles) || bundles.some((b) => typeof b !== 'string' || !b)) {
    throw new DshUserError(`${packageJson}: field "dsh.profile.bundles" must be a list of package names`)
  }
  const hotReload = field(pkg, 'dsh.profile.hotReload')
  if (hotReload !== undefined && typeof hotReload !== 'boolean') {
    throw new DshUserError(`${packageJson}: field "dsh.profile.hotReload" must be true or false`)
  }
  return { name, dir, packageJson, bundles: bundles as string[], hotReload: hotReload === true }
}

function findPackageJson(name: string, fromDir: string): string | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name, 'package.json')
    if (existsSync(candidate)) return realpathSync(candidate)
    if (dirname(dir) === dir) return undefined
  }
}

/**
 * Locates a bundle package: from the profile directory first, then from the dsh installation
 * (`installBase`, a file inside the installation, normally the cli's package.json), since a
 * profile copied under $DSH_HOME has no node_modules of its own.
 */
export function resolveBundle(name: string, profileDir: string, installBase: string): BundleManifest {
  let packageJson: string | undefined
  if (name.startsWith('.') || isAbsolute(name)) {
    const candidate = join(resolve(profileDir, name), 'package.json')
    packageJson = existsSync(candidate) ? candidate : undefined
  } else {
    packageJson = findPackageJson(name, profileDir) ?? findPackageJson(name, dirname(installBase))
  }
  if (!packageJson) {
    throw new DshUserError(
      `bundle ${name} is not installed: looked from ${profileDir} and from the dsh installation (${dirname(installBase)})`,
    )
  }
  const pkg = readJson(packageJson)
  const patch = field(pkg, 'dsh.bundle.patch')
  if (patch === undefined) {
    throw new DshUserError(`${packageJson}: field "dsh.bundle.patch" is missing: ${name} is not a dsh bundle`)
  }
  if (typeof patch !== 'string' || !patch) {
    throw new DshUserError(
      `${packageJson}: field "dsh.bundle.patch" must be a relative path to the bundle's patch file`,
    )
  }
  const patchFile = resolve(dirname(packageJson), patch)
  if (!existsSync(patchFile)) {
    throw new DshUserError(`${packageJson}: field "dsh.bundle.patch" names ${patch}, which does not exist`)
  }
  return { name, packageJson, patch: patchFile }
}

/** Reads and parses one layer file; a missing or unreadable file is a one-line error. */
export function readLayerFile(file: string, label: string, cacheDir?: string): Layer {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new DshUserError(
      `${file}: cannot read patch layer: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    )
  }
  return parseLayerCached(text, file, label, cacheDir)
}

/** `<home>/.cache/layers`; `DSH_LAYER_CACHE=0` turns the parsed-layer cache off. */
export function layerCacheDir(home: string): string | undefined {
  if (process.env.DSH_LAYER_CACHE === '0') return undefined
  return join(home, '.cache', 'layers')
}

export function listProfileTemplates(templatesDir: string): string[] {
  if (!existsSync(templatesDir)) return []
  return readdirSync(templatesDir)
    .filter((n) => existsSync(join(templatesDir, n, 'package.json')))
    .sort()
}

/**
 * Returns `$DSH_HOME/profiles/<name>`, creating it from `templatesDir/<name>` on first use
 * (node_modules excluded). An unknown name or an invalid one is a usage error (exit 2).
 */
export function ensureProfile(home: string, name: string, templatesDir: string): { dir: string; created: boolean } {
  if (!PROFILE_NAME.test(name)) {
    throw new DshUserError(`invalid profile name ${JSON.stringify(name)}: use letters, digits, ".", "_" or "-"`, 2)
  }
  const dir = homeLayout(home).profile(name)
  if (existsSync(join(dir, 'package.json'))) return { dir, created: false }
  const template = join(templatesDir, name)
  if (!existsSync(join(template, 'package.json'))) {
    const existing = existsSync(homeLayout(home).profiles)
      ? readdirSync(homeLayout(home).profiles).filter((n) =>
          existsSync(join(homeLayout(home).profiles, n, 'package.json')),
        )
      : []
    const known = [...new Set([...listProfileTemplates(templatesDir), ...existing])].sort()
    throw new DshUserError(
      `unknown profile "${name}": no ${join(dir, 'package.json')} and no template of that name (known: ${known.join(', ') || 'none'})`,
      2,
    )
  }
  mkdirSync(dir, { recursive: true })
  cpSync(template, dir, {
    recursive: true,
    filter: (src) => basename(src) !== 'node_modules',
  })
  return { dir, created: true }
}

export interface ResolvedRow extends ComposedRow {
  /** File URL the loader imports; undefined when the name did not resolve (see resolveError). */
  url?: string
  resolveError?: string
  /** For group rows: the children, resolved the same way. */
  children?: ResolvedRow[]
}

export interface LayerInfo {
  label: string
  file: string
}

export interface Composition {
  profile: { name: string; dir: string }
  layers: LayerInfo[]
  rows: ResolvedRow[]
  warnings: string[]
  /** The installation fallback for resolution (normally the cli's package.json). */
  installBase: string
  /** The profile's `dsh.profile.hotReload` (false for compositions built from explicit layers). */
  hotReload?: boolean
  /**
   * How many row names the row table (row-table.ts) answered and how many of its entries failed
   * their checks (the first reason), or why no table was used.
   */
  rowTable?: { used: number; fallback: number; firstFallback?: string; reason?: string }
}

export interface ComposeOptions {
  home: string
  profileName: string
  /** Default: `$home/profiles/<profileName>`. */
  profileDir?: string
  /** `--patch` files, in order; relative paths resolve against `cwd`. */
  patches?: string[]
  installBase: string
  cwd?: string
  /**
   * The table of shipped rows' resolutions to use (row-table.ts); default: the one in this
   * checkout's prelinked/ (each entry is checked first). `false`: resolve every name.
   */
  rowTable?: RowTable | false
}

function resolveRow(c: ComposedRow, installBase: string, table?: RowTable): ResolvedRow {
  const row = c.row
  const out: ResolvedRow = { ...c }
  if (row.name.startsWith('cordis:')) {
    out.url = row.name
  } else if ((out.url = table?.lookup(c.nameFrom, row.name))) {
    // The table's answer: what resolveFirst would give from nameFrom, checked.
  } else {
    const bases = isBareSpecifier(row.name) ? [c.nameFrom, installBase] : [c.nameFrom]
    out.url = resolveFirst(row.name, bases)
    if (!out.url) {
      out.resolveError = isBareSpecifier(row.name)
        ? `cannot resolve module "${row.name}" from ${c.nameFrom} or the dsh installation`
        : `module file "${row.name}" does not exist (relative to ${c.nameFrom})`
    }
  }
  if ((row.group || row.name === 'cordis:group') && Array.isArray(row.config)) {
    out.children = (row.config as Row[]).map((child) =>
      resolveRow({ row: child, layers: c.layers, nameFrom: c.nameFrom }, installBase, table),
    )
  }
  return out
}

/** Collects the ordered layers of a profile: bundles, profile patch, home patch, `--patch`es. */
export function collectLayers(opts: ComposeOptions): { profile: ProfileManifest; layers: Layer[] } {
  const layout = homeLayout(opts.home)
  const dir = opts.profileDir ?? layout.profile(opts.profileName)
  const profile = readProfile(dir, opts.profileName)
  const layers: Layer[] = []
  const cache = layerCacheDir(opts.home)
  for (const bundle of profile.bundles) {
    const b = resolveBundle(bundle, dir, opts.installBase)
    layers.push(readLayerFile(b.patch, `bundle ${bundle}`, cache))
  }
  const profilePatch = join(dir, 'cordis.patch.yml')
  if (existsSync(profilePatch)) layers.push(readLayerFile(profilePatch, `profile ${opts.profileName}`, cache))
  if (existsSync(layout.patch)) layers.push(readLayerFile(layout.patch, 'home', cache))
  for (const p of opts.patches ?? []) {
    const file = resolve(opts.cwd ?? process.cwd(), p)
    if (!existsSync(file) || !statSync(file).isFile()) {
      throw new DshUserError(`--patch ${p}: no such file (${file})`, 2)
    }
    layers.push(readLayerFile(file, `--patch ${p}`, cache))
  }
  return { profile, layers }
}

/** Composes the rows that boot (and that `--dump-config` prints) for one profile. */
export function composeProfile(opts: ComposeOptions): Composition {
  const { profile, layers } = collectLayers(opts)
  const applied = applyLayers(layers)
  const table = opts.rowTable === false ? undefined : (opts.rowTable ?? loadRowTable())
  const rows = applied.rows.map((r) => resolveRow(r, opts.installBase, table))
  return {
    profile: { name: profile.name, dir: profile.dir },
    layers: layers.map((l) => ({ label: l.label, file: l.file })),
    rows,
    warnings: applied.warnings,
    installBase: opts.installBase,
    hotReload: profile.hotReload,
    rowTable: tableReport(table),
  }
}

function tableReport(table: RowTable | undefined): Composition['rowTable'] {
  if (!table) return undefined
  const report = { ...table.stats, ...(table.reason ? { reason: table.reason } : {}) }
  if (process.env.DSH_DEBUG) {
    const line = table.reason
      ? `no row table: ${table.reason}`
      : `row table answered ${report.used} row names${report.fallback ? `; ${report.fallback} resolved anew (first: ${report.firstFallback})` : ''}`
    process.stderr.write(`dsh: debug: ${line}\n`)
  }
  return report
}

/** Composes rows from explicit layers (tests, embedders); names resolve as in composeProfile. */
export function composeLayers(
  layers: Layer[],
  installBase: string,
  profileDir: string = process.cwd(),
  opts: { rowTable?: RowTable | false } = {},
): Composition {
  const applied = applyLayers(layers)
  const table = opts.rowTable === false ? undefined : (opts.rowTable ?? loadRowTable())
  const rows = applied.rows.map((r) => resolveRow(r, installBase, table))
  return {
    profile: { name: basename(profileDir), dir: profileDir },
    layers: layers.map((l) => ({ label: l.label, file: l.file })),
    rows,
    warnings: applied.warnings,
    installBase,
    rowTable: tableReport(table),
  }
}

export const profileDirUrl = (dir: string) => pathToFileURL(dir.endsWith('/') ? dir : dir + '/').href
