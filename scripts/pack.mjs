#!/usr/bin/env node
// @ts-check
// Builds the publishable `dsh` npm package from a built checkout: one tarball that holds every
// workspace package a user runs (their dist/, dist-web/, dist-client/, bins and patch layers), the
// profiles, the prelinked stacks and the three patched npm packages, so `npm install -g
// dsh-<version>.tgz` needs no pnpm, no workspace and no compiler.
//
// Layout of the package (its root plays the part of the checkout root for app-boot and the cli,
// which look four directories above a package file for `profiles/` and `prelinked/`):
//   package.json        name `dsh`, the three bins, real npm dependencies pinned to the versions
//                       the workspace runs, the native add-ons as optionalDependencies, and every
//                       @dsh/* package plus the patched cordis, schemastery and
//                       @cordisjs/plugin-loader as bundleDependencies (they are not on npm, or not
//                       in the form dsh runs)
//   node_modules/@dsh/<name>/   each workspace package, without sources, tests or source maps
//   profiles/<name>/    the profile templates
//   prelinked/          scripts/prelink.mjs run on this layout (`--root`), plus pack.json naming
//                       the directory it was built in; scripts/relocate.mjs (from
//                       scripts/pack-relocate.mjs) moves the absolute paths to wherever npm put
//                       the package on the first start (where it cannot, the boot loads file by
//                       file: slower, same result)
//   bin/<bin>.mjs       the three bins: relocate.mjs, then the workspace package's bin
//
// Usage: node scripts/pack.mjs [--out DIR] [--skip-build] [--quiet]
//   --out DIR       where dsh-<version>.tgz goes (default: <checkout>/dist-pack/)
//   --skip-build    do not run scripts/build.mjs and scripts/build-client.mjs first
// Prints one JSON line on stdout: { tarball, bytes, files, version, seconds }.
import { spawnSync } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { isBuiltin } from 'node:module'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { init, parse } from 'es-module-lexer'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = process.argv.slice(2)
const flag = (name) => args.includes(name)
const option = (name) => {
  const i = args.indexOf(name)
  if (i === -1) return undefined
  const value = args[i + 1]
  if (!value || value.startsWith('--')) fail(`${name} needs a value`)
  return value
}
const quiet = flag('--quiet')
const started = Date.now()
const log = (line) => quiet || process.stderr.write(`pack: [+${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`)
function fail(message) {
  process.stderr.write(`pack: ${message}\n`)
  process.exit(1)
}
for (const a of args) {
  if (a.startsWith('--') && !['--out', '--skip-build', '--quiet'].includes(a))
    fail(`unknown option ${a} (known: --out DIR, --skip-build, --quiet)`)
}
const outDir = option('--out') ?? join(root, 'dist-pack')

/** The bins the package installs, by the workspace package that holds them. */
const BINS = {
  dsh: ['@dsh/cli', 'bin/dsh.mjs'],
  'dsh-acp': ['@dsh/acp-app', 'bin/dsh-acp.mjs'],
  'dsh-jsonrpc-agent': ['@dsh/sdk-server', 'bin/dsh-jsonrpc-agent.mjs'],
}
/** npm packages dsh runs with a pnpm patch applied: shipped as patched in the tarball. */
const PATCHED = ['cordis', 'schemastery', '@cordisjs/plugin-loader']
/** Native add-ons: optional, dsh runs without them. */
const NATIVE = ['better-sqlite3', 'node-pty']
/** Imported only by test-kit subpaths (e.g. a persistence contract suite): not shipped. */
const DEV_ONLY = ['vitest']
/** Imported only by browser code, which dist-web/ and dist-client/ already hold bundled. */
const BROWSER_ONLY = ['react', 'react-dom', 'highlight.js', 'marked']

function run(command, argv, opts = {}) {
  const r = spawnSync(command, argv, {
    stdio: ['ignore', quiet ? 'pipe' : 'inherit', 'inherit'],
    encoding: 'utf8',
    ...opts,
  })
  if (r.error) fail(`${command} ${argv.join(' ')}: ${r.error.message}`)
  if (r.status !== 0) fail(`${command} ${argv.join(' ')} exited ${r.status}`)
  return r
}

if (!flag('--skip-build')) {
  log('building (scripts/build.mjs, scripts/build-client.mjs --strict)')
  run(process.execPath, [join(root, 'scripts/build.mjs'), '--quiet'], { cwd: root })
  run(process.execPath, [join(root, 'scripts/build-client.mjs'), '--quiet', '--strict'], { cwd: root })
}

// --- the workspace --------------------------------------------------------------------------
/** @type {Map<string, { dir: string, pkg: any }>} */
const workspace = new Map()
for (const group of ['packages', 'bundles']) {
  for (const a of readdirSync(join(root, group))) {
    const dir = join(root, group, a)
    const dirs = existsSync(join(dir, 'package.json'))
      ? [dir]
      : statSync(dir).isDirectory()
        ? readdirSync(dir).map((b) => join(dir, b))
        : []
    for (const d of dirs) {
      if (!existsSync(join(d, 'package.json'))) continue
      const pkg = JSON.parse(readFileSync(join(d, 'package.json'), 'utf8'))
      workspace.set(pkg.name, { dir: d, pkg })
    }
  }
}
const profiles = readdirSync(join(root, 'profiles')).filter((n) =>
  existsSync(join(root, 'profiles', n, 'package.json')),
)

// Every workspace package reachable from the bins and the profiles' bundles through
// dependencies (not devDependencies: test kits and the mock model stay out).
const wanted = new Set()
const visit = (name, from) => {
  if (wanted.has(name)) return
  if (!workspace.has(name)) fail(`${from} depends on ${name}, which is not a workspace package`)
  wanted.add(name)
  const { pkg } = /** @type {{ pkg: any }} */ (workspace.get(name))
  for (const section of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
    for (const dep of Object.keys(pkg[section] ?? {})) if (workspace.has(dep)) visit(dep, name)
  }
}
for (const [, [name]] of Object.entries(BINS)) visit(name, 'the bins')
for (const profile of profiles) {
  const pkg = JSON.parse(readFileSync(join(root, 'profiles', profile, 'package.json'), 'utf8'))
  for (const bundle of pkg.dsh?.profile?.bundles ?? []) visit(bundle, `profiles/${profile}`)
}
// The built browser client is found by @dsh/frontend-static at run time.
if (workspace.has('@dsh/client-web')) visit('@dsh/client-web', 'the web host')
// Packages reached by path rather than by name (the cli runs `dsh sessions` with the layer file
// of @dsh/sessions-cli and `dsh mcp` with the bin of @dsh/mcp-client, by relative URL): every
// such URL in a shipped file of a wanted package brings its target package in too.
const urlLiteral = /new URL\(\s*(['"`])(\.\.?\/[^'"`]*)\1\s*,\s*import\.meta\.url\s*\)/g
/** The static directory part of a URL literal (`../../x/${name}.js` -> `../../x/`). */
const literalPrefix = (literal) => {
  const cut = literal.includes('${') ? literal.slice(0, literal.indexOf('${')) : literal
  return cut.slice(0, cut.lastIndexOf('/') + 1)
}
const workspaceDirs = [...workspace].map(([name, { dir }]) => [dir, name]).sort((a, b) => b[0].length - a[0].length)
const packageAt = (path) => workspaceDirs.find(([dir]) => path === dir || path.startsWith(`${dir}${sep}`))?.[1]
for (let grew = true; grew; ) {
  grew = false
  for (const name of [...wanted]) {
    const { dir } = /** @type {{ dir: string }} */ (workspace.get(name))
    for (const rel of files(dir)) {
      if (
        !/\.(m?js|cjs)$/.test(rel) ||
        !ships(rel) ||
        rel.startsWith(`dist-web${sep}`) ||
        rel.startsWith(`dist-client${sep}`)
      )
        continue
      for (const m of readFileSync(join(dir, rel), 'utf8').matchAll(urlLiteral)) {
        const target = packageAt(join(dirname(join(dir, rel)), literalPrefix(m[2])))
        if (target && !wanted.has(target)) {
          visit(target, `${name}/${rel} (by path)`)
          grew = true
        }
      }
    }
  }
}
const version = workspace.get('@dsh/cli')?.pkg.version
if (typeof version !== 'string') fail('packages/boot/cli/package.json has no version')

// --- staging ----------------------------------------------------------------------------------
// Staged outside the checkout and $HOME: the prelinked files hold the staging path until
// postinstall moves them, and it should name no user directory.
const stageBase = mkdtempSync(join(tmpdir(), 'dsh-pack-'))
const stage = join(stageBase, 'dsh')
mkdirSync(join(stage, 'node_modules', '@dsh'), { recursive: true })

/**
 * Whether a file of a workspace package ships: runtime output and metadata only. No tests, no
 * TypeScript sources, no source maps, no build stamps or ignore files (an ignore file would make
 * npm leave the directory's files out).
 */
function ships(rel) {
  const parts = rel.split(sep)
  const name = parts.at(-1) ?? ''
  if (
    parts.some(
      (p) =>
        p === 'test' ||
        p === 'tests' ||
        p === '__tests__' ||
        p === 'node_modules' ||
        p === 'fixtures' ||
        p.startsWith('.'),
    )
  )
    return false
  if (/\.(test|spec|bench)\.[cm]?[jt]sx?$/.test(name) || name.endsWith('.map') || name.endsWith('.stamp')) return false
  if (/\.(ts|tsx|mts|cts)$/.test(name)) return false // sources and declarations: the `development` condition only
  if (parts.length === 1)
    return name === 'package.json' || /^README(\.\w+)?\.md$/.test(name) || name === 'LICENSE' || /\.ya?ml$/.test(name)
  // Build inputs and test material of single packages: the web client's sources and build
  // scripts, the MCP conformance harness, the C sources of @dsh/posix-spawn (its native/build/
  // output ships: it loads only where it fits, else child_process is used).
  if (['build', 'docs', 'conformance', 'bench', 'coverage'].includes(parts[0])) return false
  if (parts[0] === 'native') return parts[1] === 'build'
  return true
}

function* files(dir, base = dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue
      yield* files(path, base)
    } else if (entry.isFile()) yield relative(base, path)
  }
}

/**
 * The package.json a bundled package ships with: what resolution and the boot read, no more. No
 * dependencies: npm would not install them for a bundled package; they are the dsh package's own.
 */
function shippedManifest(pkg) {
  const out = {}
  for (const key of [
    'name',
    'version',
    'description',
    'license',
    'type',
    'main',
    'module',
    'exports',
    'imports',
    'bin',
    'dsh',
  ]) {
    if (pkg[key] !== undefined) out[key] = pkg[key]
  }
  out.version = version // one product version (@dsh/brand falls back to its own package.json)
  return out
}

let copied = 0
for (const name of [...wanted].sort()) {
  const { dir, pkg } = /** @type {{ dir: string, pkg: any }} */ (workspace.get(name))
  const dest = join(stage, 'node_modules', name)
  for (const rel of files(dir)) {
    if (rel === 'package.json' || !ships(rel)) continue
    mkdirSync(dirname(join(dest, rel)), { recursive: true })
    cpSync(join(dir, rel), join(dest, rel))
    copied++
  }
  mkdirSync(dest, { recursive: true })
  writeFileSync(join(dest, 'package.json'), `${JSON.stringify(shippedManifest(pkg), null, 2)}\n`)
}
for (const profile of profiles) {
  for (const rel of files(join(root, 'profiles', profile))) {
    if (!ships(rel)) continue
    mkdirSync(dirname(join(stage, 'profiles', profile, rel)), { recursive: true })
    cpSync(join(root, 'profiles', profile, rel), join(stage, 'profiles', profile, rel))
  }
}

/** The installed copy of npm package `dep` that workspace directory `from` resolves (its real path). */
function installedDir(dep, from) {
  for (let d = from; ; d = dirname(d)) {
    const candidate = join(d, 'node_modules', dep, 'package.json')
    if (existsSync(candidate)) return dirname(realpathSync(candidate))
    if (dirname(d) === d) return undefined
  }
}
const packageOf = (spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0])

// Relative URLs that reach into another workspace package or the checkout root
// (`new URL('../../../acp/acp-app/bin/dsh-acp.mjs', import.meta.url)`) are written for the
// monorepo layout: each is pointed at the same file in the package layout. Same-package paths
// and `../../../../profiles/` come out unchanged.
const packageDirs = [...wanted]
  .map((name) => [/** @type {{ dir: string }} */ (workspace.get(name)).dir, name])
  .sort((a, b) => b[0].length - a[0].length)
/** A checkout path -> the same file in the stage, or undefined when it is outside both. */
function staged(path) {
  for (const [dir, name] of packageDirs) {
    if (path === dir || path.startsWith(`${dir}${sep}`)) return join(stage, 'node_modules', name, relative(dir, path))
  }
  const rel = relative(root, path)
  return rel.startsWith('..') ? undefined : join(stage, rel)
}
let rewritten = 0
for (const name of wanted) {
  const { dir } = /** @type {{ dir: string }} */ (workspace.get(name))
  const dest = join(stage, 'node_modules', name)
  for (const rel of files(dest)) {
    if (!/\.(m?js|cjs)$/.test(rel) || rel.startsWith(`dist-web${sep}`) || rel.startsWith(`dist-client${sep}`)) continue
    const text = readFileSync(join(dest, rel), 'utf8')
    const out = text.replace(urlLiteral, (whole, quote, literal) => {
      const prefix = literalPrefix(literal)
      const target = staged(join(dirname(join(dir, rel)), prefix))
      if (!target) return whole
      let moved = relative(dirname(join(dest, rel)), target)
      if (!moved.startsWith('.')) moved = `./${moved}`
      if (prefix.endsWith('/') && !moved.endsWith('/')) moved += '/'
      if (moved === prefix || moved === prefix.replace(/\/$/, '')) return whole
      rewritten++
      return `new URL(${quote}${moved}${literal.slice(prefix.length)}${quote}, import.meta.url)`
    })
    if (out !== text) writeFileSync(join(dest, rel), out)
  }
}
log(
  `${wanted.size} workspace packages, ${copied} files; ${rewritten} cross-package relative URLs pointed at the package layout`,
)

// The patched npm packages, copied as installed (the patch applied).
const appBootDir = /** @type {{ dir: string }} */ (workspace.get('@dsh/app-boot')).dir
/** @type {Map<string, { version: string, from: string, dir: string }>} */
const external = new Map()
const addExternal = (dep, from, why) => {
  if (DEV_ONLY.includes(dep) || BROWSER_ONLY.includes(dep)) return
  const dir = installedDir(dep, from)
  if (!dir) fail(`${why} imports ${dep}, which does not resolve from ${relative(root, from) || '.'}`)
  const v = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version
  const seen = external.get(dep)
  if (seen && seen.version !== v)
    fail(`${dep}: ${seen.from} runs ${seen.version}, ${why} runs ${v}; one version must serve both`)
  if (!seen) external.set(dep, { version: v, from: why, dir })
}
for (const dep of PATCHED) {
  const dir = installedDir(dep, appBootDir)
  if (!dir) fail(`${dep} is not installed (run the install first)`)
  cpSync(dir, join(stage, 'node_modules', dep), {
    recursive: true,
    // As installed, without nested node_modules, TypeScript sources and declarations, maps or tests.
    filter: (src) => {
      const rel = relative(dir, src)
      return (
        rel === '' ||
        (!rel.split(sep).some((p) => p === 'node_modules' || p === 'test' || p === 'tests') &&
          !/\.(ts|tsx|mts|cts|map)$/.test(rel))
      )
    },
  })
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  for (const sub of Object.keys(pkg.dependencies ?? {})) if (!PATCHED.includes(sub)) addExternal(sub, dir, dep)
  // npm installs nothing a bundled package depends on (it expects the bundle to hold it): its
  // dependencies become the dsh package's own, which resolution finds one directory up.
  for (const key of ['dependencies', 'peerDependencies', 'optionalDependencies', 'devDependencies', 'scripts'])
    delete pkg[key]
  writeFileSync(join(stage, 'node_modules', dep, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)
}

// npm dependencies: every bare specifier the shipped runtime files import or require, at the
// version the importing package runs in the workspace.
await init
const requireCall = /\b(?:require|require\.resolve|createRequire\([^)]*\))\(\s*(['"])([^'"]+)\1\s*\)/g
for (const name of wanted) {
  const { dir } = /** @type {{ dir: string }} */ (workspace.get(name))
  const dest = join(stage, 'node_modules', name)
  for (const rel of files(dest)) {
    if (!/\.(m?js|cjs)$/.test(rel) || rel.startsWith(`dist-web${sep}`) || rel.startsWith(`dist-client${sep}`)) continue
    const text = readFileSync(join(dest, rel), 'utf8')
    const specs = new Set()
    try {
      const [imports] = parse(text)
      for (const i of imports) if (i.n) specs.add(i.n)
    } catch {
      // CommonJS or not a module: the require() scan below covers it
    }
    for (const m of text.matchAll(requireCall)) specs.add(m[2])
    for (const spec of specs) {
      if (isBuiltin(spec) || /^(\.|\/|file:|data:|#)/.test(spec) || spec.startsWith('node:')) continue
      const dep = packageOf(spec)
      if (wanted.has(dep) || PATCHED.includes(dep)) continue
      if (dep.startsWith('@dsh/')) fail(`${name}/${rel} imports ${dep}, which is not among its dependencies`)
      if (!/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/.test(dep)) continue // a computed or placeholder string
      addExternal(dep, dir, `${name}/${rel}`)
    }
  }
}

const dependencies = {}
const optionalDependencies = {}
for (const [dep, { version: v }] of [...external].sort(([a], [b]) => a.localeCompare(b))) {
  ;(NATIVE.includes(dep) ? optionalDependencies : dependencies)[dep] = v
}
const bundled = [...[...wanted].sort(), ...PATCHED]
for (const name of bundled) {
  dependencies[name] = JSON.parse(readFileSync(join(stage, 'node_modules', name, 'package.json'), 'utf8')).version
}
const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const cliPkg = /** @type {{ pkg: any }} */ (workspace.get('@dsh/cli')).pkg
const manifest = {
  name: 'dsh',
  version,
  description: rootPkg.description,
  license: rootPkg.license,
  type: 'module',
  engines: rootPkg.engines,
  bin: Object.fromEntries(Object.keys(BINS).map((bin) => [bin, `bin/${bin}.mjs`])),
  dependencies: Object.fromEntries(Object.entries(dependencies).sort(([a], [b]) => a.localeCompare(b))),
  optionalDependencies,
  bundleDependencies: bundled,
  keywords: ['coding-agent', 'cli', 'agent', 'llm'],
  ...(cliPkg.repository ? { repository: cliPkg.repository } : {}),
}

// The direct npm dependencies, copied into the stage as the workspace runs them, for the
// prelink: its stacks import them by path, <package>/node_modules/<dep>/..., which is where npm
// puts a package's own dependencies in a global install (npm never hoists those above the
// package). Their own dependencies are not needed to prelink: npm packages stay external.
for (const [dep, { dir }] of external) {
  cpSync(dir, join(stage, 'node_modules', dep), {
    recursive: true,
    filter: (src) => !relative(dir, src).split(sep).includes('node_modules'),
  })
}
writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)

// The prelinked stacks, built on this layout.
log('prelinking the staged layout')
run(
  process.execPath,
  [
    '--experimental-import-meta-resolve',
    join(root, 'scripts/prelink.mjs'),
    '--root',
    stage,
    '--layout',
    'package',
    ...(quiet ? ['--quiet'] : []),
  ],
  { cwd: stage },
)
writeFileSync(
  join(stage, 'prelinked', 'pack.json'),
  `${JSON.stringify({ note: 'written by scripts/pack.mjs; scripts/relocate.mjs moves these absolute paths to the installed package on the first start', root: `${stage}${sep}` })}\n`,
)
mkdirSync(join(stage, 'scripts'))
cpSync(join(root, 'scripts', 'pack-relocate.mjs'), join(stage, 'scripts', 'relocate.mjs'))
// Each bin: the prelinked files moved first (once), then the workspace bin, as it runs in a checkout.
mkdirSync(join(stage, 'bin'))
for (const [bin, [pkg, file]] of Object.entries(BINS)) {
  const text = `#!/usr/bin/env node\n// The ${bin} bin of the dsh npm package (written by scripts/pack.mjs).\nimport '../scripts/relocate.mjs'\nimport '../node_modules/${pkg}/${file}'\n`
  writeFileSync(join(stage, 'bin', `${bin}.mjs`), text, { mode: 0o755 })
}
for (const file of ['README.md', 'LICENSE'])
  if (existsSync(join(root, file))) cpSync(join(root, file), join(stage, file))

// Only the bundled packages go into the tarball: the copied npm dependencies leave the stage
// (npm would otherwise pack every dependency it finds there).
for (const dep of external.keys()) rmSync(join(stage, 'node_modules', dep), { recursive: true, force: true })
for (const entry of readdirSync(join(stage, 'node_modules'))) {
  if (entry.startsWith('@') && readdirSync(join(stage, 'node_modules', entry)).length === 0)
    rmSync(join(stage, 'node_modules', entry), { recursive: true })
}

mkdirSync(outDir, { recursive: true })
if (!existsSync(join(outDir, '.gitignore')) && outDir === join(root, 'dist-pack'))
  writeFileSync(join(outDir, '.gitignore'), '*\n')
const packed = run('npm', ['pack', '--json', '--pack-destination', outDir, '--loglevel=error'], {
  cwd: stage,
  stdio: ['ignore', 'pipe', 'inherit'],
  maxBuffer: 256 * 1024 * 1024,
})
const info = JSON.parse(packed.stdout)[0]
const tarball = join(outDir, info.filename)
rmSync(stageBase, { recursive: true, force: true })
const result = {
  tarball,
  bytes: statSync(tarball).size,
  files: info.entryCount,
  unpackedBytes: info.unpackedSize,
  version,
  workspacePackages: wanted.size,
  copied,
  seconds: (Date.now() - started) / 1000,
}
log(
  `${basename(tarball)}: ${(result.bytes / 1024 / 1024).toFixed(2)} MB, ${result.files} files, ${result.seconds.toFixed(1)} s`,
)
process.stdout.write(`${JSON.stringify(result)}\n`)
