// `dsh plugin add|remove|update|list`: the package manager installs into the profile directory,
// the package's manifest becomes a row of the profile's cordis.patch.yml (or a bundle of its
// package.json), and the profile's tree is mounted once to prove it comes up. Any failure puts
// package.json, the lockfile, node_modules and the patch back as they were.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync, unlinkSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { composeProfile, ensureProfile, probeComposition, type BootFailure, type Composition } from '@dsh/app-boot'
import { homeLayout, PROFILE_NAME } from '@dsh/home-paths'
import { PluginError } from './errors.ts'
import { readPluginManifest, type PluginManifest } from './manifest.ts'
import { addRow, removeRows, rowsOf, writeAtomic } from './patch-file.ts'
import { parseSpec } from './spec.ts'

export interface ManagerOptions {
  home: string
  /** A file inside the dsh installation (the cli's package.json): bundles and bare names fall back to it. */
  installBase: string
  /** Profile templates copied on first use. */
  templatesDir: string
  cwd: string
  /** Progress and notes (one line each). */
  log?: (line: string) => void
  /** The npm executable (default `npm` on PATH). */
  npm?: string
  /** Row module importer for the probe (tests pass their runner's). */
  importModule?: (url: string) => Promise<unknown>
}

export interface AddResult {
  name: string
  version: string
  profile: string
  /** The row written to the profile's patch, or the bundle added to its package.json. */
  mounted: { kind: 'row'; id: string } | { kind: 'bundle' }
}

export interface PluginStatus {
  name: string
  version: string
  /** What package.json records (a version range or a `file:` path). */
  spec: string
  rows: { id: string; state: 'mounts' | 'disabled' | 'fails'; cause?: string }[]
  /** Set when the package is installed but no row names it (and it is not a bundle of the profile). */
  note?: string
}

interface Snapshot {
  files: Map<string, string | undefined>
  hadNodeModules: boolean
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
const dependencies = (dir: string) => (readJson(join(dir, 'package.json')).dependencies ?? {}) as Record<string, string>
const firstLine = (e: unknown) => String((e as Error)?.message ?? e).split('\n')[0]

export class PluginManager {
  constructor(readonly opts: ManagerOptions) {}

  private log(line: string) {
    this.opts.log?.(line)
  }

  private profileDir(profile: string, create: boolean): string {
    if (!PROFILE_NAME.test(profile)) throw new PluginError(`invalid profile name ${JSON.stringify(profile)}`, 2)
    if (create) return ensureProfile(this.opts.home, profile, this.opts.templatesDir).dir
    const dir = homeLayout(this.opts.home).profile(profile)
    if (!existsSync(join(dir, 'package.json'))) throw new PluginError(`profile "${profile}" does not exist (${dir})`, 2)
    return dir
  }

  /**
   * npm in the profile directory, always with `--ignore-scripts`: no lifecycle script of the
   * package or of its dependencies (preinstall, install, postinstall, a directory's prepare) runs,
   * so a package refused afterwards has executed nothing and the rollback leaves nothing behind.
   */
  private npm(dir: string, args: string[]): void {
    const r = spawnSync(
      this.opts.npm ?? 'npm',
      [...args, '--ignore-scripts', '--no-audit', '--no-fund', '--legacy-peer-deps', '--loglevel=error'],
      {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, npm_config_update_notifier: 'false' },
      },
    )
    if (r.error) throw new PluginError(`cannot run npm: ${firstLine(r.error)}`)
    if (r.status !== 0) {
      const lines = `${r.stderr}\n${r.stdout}`
        .split('\n')
        .map((l) => l.replace(/^npm (error|ERR!)\s*/, '').trim())
        .filter((l) => l && !/^(A complete log|code |errno |syscall )/.test(l))
      throw new PluginError(`npm ${args[0]} failed: ${lines[0] ?? `exit status ${r.status}`}`)
    }
  }

  private snapshot(dir: string): Snapshot {
    const files = new Map<string, string | undefined>()
    for (const f of ['package.json', 'package-lock.json', 'cordis.patch.yml']) {
      const path = join(dir, f)
      files.set(path, existsSync(path) ? readFileSync(path, 'utf8') : undefined)
    }
    return { files, hadNodeModules: existsSync(join(dir, 'node_modules')) }
  }

  /** Puts the files back, then makes node_modules match them again. */
  private rollback(dir: string, snap: Snapshot): void {
    for (const [path, text] of snap.files) {
      if (text === undefined) {
        if (existsSync(path)) unlinkSync(path)
      } else writeAtomic(path, text)
    }
    if (!snap.hadNodeModules) {
      rmSync(join(dir, 'node_modules'), { recursive: true, force: true })
      return
    }
    try {
      this.npm(dir, ['install', '--prefer-offline'])
    } catch (error) {
      this.log(`dsh plugin: warning: restoring node_modules: ${firstLine(error)}; run "npm install" in ${dir}`)
    }
  }

  private compose(profile: string, dir: string): Composition {
    return composeProfile({
      home: this.opts.home,
      profileName: profile,
      profileDir: dir,
      installBase: this.opts.installBase,
      cwd: this.opts.cwd,
    })
  }

  /** Ids of the rows that `manifest`'s package contributes to the composition. */
  private rowsFor(comp: Composition, dir: string, m: PluginManifest): string[] {
    const pkgDir = join(dir, 'node_modules', m.name) + '/'
    return comp.rows
      .filter(
        (r) =>
          r.row.name === m.name ||
          r.layers.includes(`bundle ${m.name}`) ||
          (r.url && decodeURIComponent(new URL(r.url).pathname).startsWith(pkgDir)),
      )
      .map((r) => r.row.id)
  }

  /**
   * Mounts the tree once and disposes it. Whatever a row prints while mounting goes to stderr:
   * stdout carries the command's result only (a web surface announces its URL from its apply).
   */
  private async probe(comp: Composition): Promise<BootFailure[]> {
    const write = process.stdout.write
    process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write
    try {
      return await probeComposition(comp, {
        bootInfo: { home: this.opts.home, cwd: this.opts.cwd },
        importModule: this.opts.importModule,
      })
    } finally {
      process.stdout.write = write
    }
  }

  /** Mounts the whole profile once; the package's own rows must come up, other failures are notes. */
  private async prove(profile: string, dir: string, m: PluginManifest): Promise<void> {
    const comp = this.compose(profile, dir)
    for (const w of comp.warnings) this.log(`dsh plugin: warning: ${w}`)
    const ids = this.rowsFor(comp, dir, m)
    const failures = await this.probe(comp)
    const own = failures.filter((f) => ids.includes(f.id))
    if (own.length) throw new PluginError(describeFailure(own[0]))
    for (const f of failures)
      this.log(`dsh plugin: note: row ${f.id} of profile ${profile} fails without this plugin's help: ${f.cause}`)
  }

  async add(raw: string, profile: string): Promise<AddResult> {
    const spec = parseSpec(raw, this.opts.cwd)
    const dir = this.profileDir(profile, true)
    const installed = dependencies(dir)
    if (installed[spec.name] !== undefined) {
      throw new PluginError(
        `${spec.name} is already installed in profile ${profile}; use "dsh plugin update ${spec.name}" or remove it first`,
      )
    }
    const before = this.compose(profile, dir)
    const snap = this.snapshot(dir)
    try {
      this.log(`installing ${spec.raw} into ${dir}`)
      this.npm(dir, ['install', '--save', ...(spec.kind === 'dir' ? ['--install-links'] : []), spec.install])
      const m = readPluginManifest(join(dir, 'node_modules', spec.name, 'package.json'))
      let mounted: AddResult['mounted']
      if (m.kind === 'row') {
        const clash = before.rows.find((r) => r.row.id === m.id)
        if (clash)
          throw new PluginError(
            `row id "${m.id}" is already used in profile ${profile} (by ${clash.row.name}, from ${clash.layers.join(', ')})`,
          )
        const row = {
          id: m.id,
          name: m.name,
          ...(m.config !== undefined ? { config: m.config } : {}),
          ...(m.disabled ? { disabled: true } : {}),
        }
        addRow(join(dir, 'cordis.patch.yml'), row, `dsh plugin add ${spec.raw} (${m.name}@${m.version})`)
        mounted = { kind: 'row', id: m.id }
      } else {
        const pkgFile = join(dir, 'package.json')
        const pkg = readJson(pkgFile)
        const p = (((pkg.dsh ??= {}) as Record<string, Record<string, unknown>>).profile ??= {})
        const bundles = (Array.isArray(p.bundles) ? p.bundles : []) as string[]
        if (!bundles.includes(m.name)) p.bundles = [...bundles, m.name]
        writeAtomic(pkgFile, JSON.stringify(pkg, null, 2) + '\n')
        mounted = { kind: 'bundle' }
      }
      await this.prove(profile, dir, m)
      return { name: m.name, version: m.version, profile, mounted }
    } catch (error) {
      this.rollback(dir, snap)
      if (error instanceof PluginError)
        throw new PluginError(
          `cannot add ${spec.raw} to profile ${profile}: ${error.message}; rolled back`,
          error.exitCode,
        )
      throw new PluginError(`cannot add ${spec.raw} to profile ${profile}: ${firstLine(error)}; rolled back`)
    }
  }

  /** Takes the package's rows (or bundle entry) out of the profile first, so a running host unmounts it, then uninstalls. */
  remove(name: string, profile: string): { removed: string[]; dangling: string[] } {
    const dir = this.profileDir(profile, false)
    const installed = dependencies(dir)
    if (installed[name] === undefined) {
      const known = Object.keys(installed)
      throw new PluginError(
        `${name} is not installed in profile ${profile} (installed: ${known.join(', ') || 'nothing'})`,
        2,
      )
    }
    const result = removeRows(join(dir, 'cordis.patch.yml'), name)
    const pkgFile = join(dir, 'package.json')
    const pkg = readJson(pkgFile)
    const p = (pkg.dsh as { profile?: { bundles?: string[] } } | undefined)?.profile
    if (p?.bundles?.includes(name)) {
      p.bundles = p.bundles.filter((b) => b !== name)
      writeAtomic(pkgFile, JSON.stringify(pkg, null, 2) + '\n')
      result.removed.push(`bundle ${name}`)
    }
    this.npm(dir, ['uninstall', name])
    return result
  }

  /** Re-installs (the recorded local path, or `name@latest` / the version given) and proves the tree again. */
  async update(raw: string, profile: string): Promise<{ name: string; from: string; to: string }> {
    const dir = this.profileDir(profile, false)
    const at = raw.indexOf('@', 1)
    const name = at > 0 ? raw.slice(0, at) : raw
    const recorded = dependencies(dir)[name]
    if (recorded === undefined)
      throw new PluginError(`${name} is not installed in profile ${profile}; use "dsh plugin add"`, 2)
    const pkgJson = join(dir, 'node_modules', name, 'package.json')
    const from = existsSync(pkgJson) ? String(readJson(pkgJson).version) : 'missing'
    const target = recorded.startsWith('file:') ? resolve(dir, recorded.slice(5)) : at > 0 ? raw : `${name}@latest`
    const snap = this.snapshot(dir)
    try {
      this.npm(dir, [
        'install',
        '--save',
        ...(recorded.startsWith('file:') && !/\.(tgz|tar\.gz|tar)$/.test(target) ? ['--install-links'] : []),
        target,
      ])
      const m = readPluginManifest(pkgJson)
      await this.prove(profile, dir, m)
      return { name, from, to: m.version }
    } catch (error) {
      this.rollback(dir, snap)
      throw new PluginError(
        `cannot update ${name} in profile ${profile}: ${error instanceof PluginError ? error.message : firstLine(error)}; rolled back`,
      )
    }
  }

  /** Profiles with a package.json under `$DSH_HOME/profiles`, or just `profile`. */
  /** Whether the profile exists and lists `spec`'s package (a name, or a path/tarball spec) in its dependencies. */
  has(spec: string, profile: string): boolean {
    const dir = homeLayout(this.opts.home).profile(profile)
    if (!existsSync(join(dir, 'package.json'))) return false
    let name = spec
    try {
      name = parseSpec(spec, this.opts.cwd).name
    } catch {
      // Not a parseable spec: compare the text as a name.
    }
    return dependencies(dir)[name] !== undefined
  }

  profiles(profile?: string): string[] {
    if (profile) return [profile]
    const root = homeLayout(this.opts.home).profiles
    if (!existsSync(root)) return []
    return readdirSync(root)
      .filter((n) => existsSync(join(root, n, 'package.json')))
      .sort()
  }

  /** Each installed dsh plugin of the profile and whether its rows mount (`check`: by mounting the tree). */
  async list(profile: string, check = false): Promise<PluginStatus[]> {
    const dir = this.profileDir(profile, false)
    const out: PluginStatus[] = []
    const manifests: PluginManifest[] = []
    for (const [name, spec] of Object.entries(dependencies(dir))) {
      const pkgJson = join(dir, 'node_modules', name, 'package.json')
      if (!existsSync(pkgJson)) {
        out.push({
          name,
          version: 'missing',
          spec,
          rows: [],
          note: 'not in node_modules; run "dsh plugin update" or "npm install" in the profile',
        })
        continue
      }
      let m: PluginManifest
      try {
        m = readPluginManifest(pkgJson)
      } catch {
        continue // an ordinary dependency of the profile, not a plugin
      }
      manifests.push(m)
      out.push({ name, version: m.version, spec, rows: [] })
    }
    if (!out.length) return out
    let comp: Composition
    try {
      comp = this.compose(profile, dir)
    } catch (error) {
      for (const s of out) s.note = `the profile does not compose: ${firstLine(error)}`
      return out
    }
    const failures: BootFailure[] = check ? await this.probe(comp) : []
    for (const m of manifests) {
      const status = out.find((s) => s.name === m.name)!
      for (const id of this.rowsFor(comp, dir, m)) {
        const r = comp.rows.find((x) => x.row.id === id)!
        const failed = failures.find((f) => f.id === id)
        if (r.row.disabled === true) status.rows.push({ id, state: 'disabled' })
        else if (r.resolveError) status.rows.push({ id, state: 'fails', cause: r.resolveError })
        else if (failed) status.rows.push({ id, state: 'fails', cause: failed.cause })
        else status.rows.push({ id, state: 'mounts' })
      }
      if (!status.rows.length)
        status.note =
          m.kind === 'row' ? `no row names it in ${join(dir, 'cordis.patch.yml')}` : "not in the profile's bundle list"
    }
    return out
  }

  /** Row ids the profile's own patch inserts for `name`. */
  rowIds(name: string, profile: string): string[] {
    return rowsOf(join(this.profileDir(profile, false), 'cordis.patch.yml'), name)
  }
}

export function describeFailure(f: BootFailure): string {
  return `row ${f.id} (${f.name}) ${f.kind === 'inject' ? 'cannot mount' : 'failed'}: ${f.cause}`
}
