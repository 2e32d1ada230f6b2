#!/usr/bin/env node
// Builds every workspace package's TypeScript sources (src/**/*.ts) into dist/ with esbuild:
//  1. one file per source (dist/**/*.js, relative `.ts` specifiers rewritten to `.js`), so every
//     source has its transpiled twin;
//  2. then each entry the package exports (`default: ./dist/X.js` beside `development:
//     ./src/X.ts`) is replaced by a bundle of the package's own modules (other packages, npm
//     and node: imports stay imports; code shared by several entries of one package goes into
//     dist/chunk-*.js, so no module exists twice). A boot then loads one file per package instead
//     of one per source: module loading (resolve, read, compile, link) was ~40% of a boot.
// Package exports map the `development` condition to src/ (vitest, DSH_DEV=1) and `default`
// to dist/, so a plain `node` launch never compiles TypeScript at start-up.
// Runs from the root `prepare` script (pnpm install) and before the tests. Ends with
// scripts/prelink.mjs (the shipped rows prelinked into one module file per host process).
// `--no-bundle` writes the per-file outputs only (entries included). A package whose inputs (its
// sources, package.json, this script, esbuild's version) match dist/.build-stamp.json is skipped.
import { readdirSync, statSync, mkdirSync, writeFileSync, readFileSync, rmSync, existsSync, renameSync } from 'node:fs'
import { basename, join, dirname, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createHash } from 'node:crypto'
import { build, transform, version as esbuildVersion } from 'esbuild'

const root = fileURLToPath(new URL('..', import.meta.url))
const bundling = !process.argv.includes('--no-bundle')
const roots = []
for (const group of ['packages', 'bundles']) {
  const base = join(root, group)
  if (!existsSync(base)) continue
  for (const a of readdirSync(base)) {
    const dir = join(base, a)
    if (existsSync(join(dir, 'package.json'))) roots.push(dir)
    else if (statSync(dir).isDirectory()) {
      for (const b of readdirSync(dir)) if (existsSync(join(dir, b, 'package.json'))) roots.push(join(dir, b))
    }
  }
}

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* walk(path)
    else if (/\.(m?ts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path
  }
}

function* walkAll(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* walkAll(path)
    else yield path
  }
}

const rewrite = (code) =>
  code.replace(
    /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]+?)\.(m?)ts(['"])/g,
    (_, a, spec, m, q) => `${a}${spec}.${m}js${q}`,
  )

/**
 * The package's exported entries that have a TypeScript source: `{ development: './src/X.ts',
 * default: './dist/X.js' }` (written by scripts/dist-exports.mjs and new-package.mjs).
 */
function exportedEntries(pkg) {
  let exports
  try {
    exports = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')).exports
  } catch {
    return []
  }
  if (!exports || typeof exports !== 'object') return []
  const entries = []
  for (const value of Object.values(exports)) {
    if (!value || typeof value !== 'object') continue
    const { development: dev, default: out } = value
    if (typeof dev !== 'string' || typeof out !== 'string') continue
    const m = /^\.\/src\/([^/]+)\.(m?)ts$/.exec(dev)
    if (!m || out !== `./dist/${m[1]}.${m[2]}js`) continue
    if (existsSync(join(pkg, dev))) entries.push(join(pkg, dev))
  }
  return entries
}

/**
 * Bundles the package's entries (its own relative imports inlined, every bare import external).
 * Returns the output files by absolute path, or undefined when the package is not bundled.
 */
async function bundleEntries(pkg, src, out) {
  const entryPoints = exportedEntries(pkg)
  if (!entryPoints.length) return undefined
  const result = await build({
    entryPoints,
    outdir: out,
    outbase: src,
    bundle: true,
    splitting: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // The same compiler settings as the per-file transform (which reads no tsconfig).
    tsconfigRaw: {},
    // Top-level names that collide between a package's modules are renamed in the bundle; keep
    // every function's and class's `.name` what the source says (plugin names, error names).
    keepNames: true,
    sourcemap: 'linked',
    write: false,
    logLevel: 'silent',
    banner: { js: '// Bundled by scripts/build.mjs from src/ (one module per package entry).' },
  })
  return new Map(result.outputFiles.map((f) => [f.path, f.text]))
}

// What every package's outputs depend on besides its own files.
const buildKey = createHash('sha256')
  .update(readFileSync(fileURLToPath(import.meta.url)))
  .update(`\0${esbuildVersion}\0${bundling}`)
  .digest('hex')

/** Hash of the package's inputs, or undefined when one cannot be read. */
function inputsHash(pkg, src) {
  const hash = createHash('sha256').update(buildKey)
  try {
    hash.update(readFileSync(join(pkg, 'package.json')))
    for (const file of [...walkAll(src)].sort()) hash.update(`\0${relative(src, file)}\0`).update(readFileSync(file))
  } catch {
    return undefined
  }
  return hash.digest('hex')
}

/** The outputs recorded by the last build of these same inputs, if they are all still there. */
function upToDate(out, hash) {
  try {
    const stamp = JSON.parse(readFileSync(join(out, STAMP), 'utf8'))
    if (stamp.hash !== hash || !Array.isArray(stamp.files)) return undefined
    const files = stamp.files.map((f) => join(out, f))
    return files.every((f) => existsSync(f)) ? files : undefined
  } catch {
    return undefined
  }
}
const STAMP = '.build-stamp.json'

const started = Date.now()
let files = 0
await Promise.all(
  roots.map(async (pkg) => {
    const src = join(pkg, 'src')
    if (!existsSync(src)) return
    const out = join(pkg, 'dist')
    // Never delete dist/ wholesale: other processes (parallel test runs) may be importing from it.
    // Unchanged files are left alone, changed ones replaced atomically, stale ones removed.
    const hash = inputsHash(pkg, src)
    const current = hash && upToDate(out, hash)
    if (current) {
      const keep = new Set([...current, join(out, STAMP)])
      for (const stale of walkAll(out)) if (!keep.has(stale) && !stale.endsWith('.tmp')) rmSync(stale, { force: true })
      return
    }
    // Every output file, by absolute path, before anything is written.
    const outputs = new Map()
    let failed = false
    for (const file of walk(src)) {
      const code = readFileSync(file, 'utf8')
      let result
      try {
        result = await transform(code, {
          loader: 'ts',
          format: 'esm',
          target: 'node20',
          sourcefile: file,
          sourcemap: 'external',
        })
      } catch (error) {
        console.error(`build: ${relative(root, file)}: ${error.message.split('\n')[0]}`)
        process.exitCode = 1
        failed = true
        continue
      }
      const target = join(out, relative(src, file)).replace(/\.(m?)ts$/, '.$1js')
      // Linked (not inline) source maps: an inline map is read and parsed at every start-up for
      // nothing, since node only applies maps under --enable-source-maps.
      outputs.set(target, `${rewrite(result.code)}//# sourceMappingURL=${basename(target)}.map\n`)
      outputs.set(`${target}.map`, result.map)
    }
    // A package whose sources do not all compile keeps its per-file entries (the error is reported).
    // JSX packages (the browser client) are built by their own script.
    const hasJsx = [...walkAll(src)].some((f) => f.endsWith('.tsx'))
    if (bundling && !failed && !hasJsx) {
      try {
        const bundle = await bundleEntries(pkg, src, out)
        if (bundle) for (const [path, text] of bundle) outputs.set(path, text)
      } catch (error) {
        // esbuild's message is "Build failed with N error(s):" and the errors follow on the next
        // lines; print each one (file:line: text) so the cause is on screen, not only the count.
        const details = (error.errors ?? [])
          .slice(0, 5)
          .map((e) => `\n  ${e.location ? `${e.location.file}:${e.location.line}: ` : ''}${e.text}`)
          .join('')
        console.error(`build: bundling ${relative(root, pkg)}: ${String(error.message).split('\n')[0]}${details}`)
        process.exitCode = 1
        failed = true
      }
    }
    // Recorded only for a clean build: a failed file or bundle is retried next time.
    if (hash && !failed) {
      outputs.set(
        join(out, STAMP),
        `${JSON.stringify({ hash, files: [...outputs.keys()].map((f) => relative(out, f)) })}\n`,
      )
    }
    const wanted = new Set(outputs.keys())
    for (const [target, text] of outputs) {
      if (existsSync(target) && readFileSync(target, 'utf8') === text) continue
      mkdirSync(dirname(target), { recursive: true })
      const temp = `${target}.${process.pid}.tmp`
      writeFileSync(temp, text)
      renameSync(temp, target)
      if (!target.endsWith('.map') && !target.endsWith(STAMP)) files++
    }
    if (existsSync(out)) {
      for (const stale of walkAll(out))
        if (!wanted.has(stale) && !stale.endsWith('.tmp')) rmSync(stale, { force: true })
    }
  }),
)
if (!process.argv.includes('--quiet'))
  console.log(`build: ${files} files written in ${roots.length} packages, ${Date.now() - started} ms`)

// Native add-ons: each `native/<name>.c` of a package becomes `native/build/<name>.node`, compiled
// with the system C compiler (`$CC`, else `cc`). They declare the Node-API functions they use, so
// no Node headers are needed. A `native/<name>.main.c` becomes the executable `native/build/<name>`
// (a helper program, such as @dsh/posix-spawn's spawn server). Linux only (macOS's libuv already
// spawns with posix_spawn). A package must work without them: a failed compile is one warning
// line, not a failed build.
if (process.platform === 'linux') {
  const { spawnSync } = await import('node:child_process')
  const cc = process.env.CC || 'cc'
  const addonFlags = ['-O2', '-fPIC', '-shared', '-fvisibility=hidden', '-Wall']
  const programFlags = ['-O2', '-Wall']
  for (const pkg of roots) {
    const dir = join(pkg, 'native')
    if (!existsSync(dir)) continue
    for (const entry of readdirSync(dir)) {
      if (!entry.endsWith('.c')) continue
      const program = entry.endsWith('.main.c')
      const flags = program ? programFlags : addonFlags
      const source = join(dir, entry)
      const target = join(
        dir,
        'build',
        program ? entry.replace(/\.main\.c$/, '').replaceAll('_', '-') : entry.replace(/\.c$/, '.node'),
      )
      const stampFile = `${target}.stamp`
      // Headers beside the sources are part of every program of the directory.
      const hash = createHash('sha256')
        .update(readFileSync(source))
        .update(`\0${cc}\0${flags.join(' ')}`)
      for (const header of readdirSync(dir)
        .filter((name) => name.endsWith('.h'))
        .sort())
        hash.update(`\0${header}\0`).update(readFileSync(join(dir, header)))
      const digest = hash.digest('hex')
      if (existsSync(target) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === digest) continue
      mkdirSync(dirname(target), { recursive: true })
      const temp = `${target}.${process.pid}.tmp`
      const result = spawnSync(cc, [...flags, '-o', temp, source], { encoding: 'utf8' })
      if (result.status === 0) {
        renameSync(temp, target)
        writeFileSync(stampFile, digest)
      } else {
        rmSync(temp, { force: true })
        const why = result.error ? result.error.message : (result.stderr || '').trim().split('\n')[0]
        console.warn(
          `build: ${relative(root, source)} not compiled (${why}); the package falls back to its portable path`,
        )
      }
    }
  }
}
// Then the prelinked row modules (one file per host process; see scripts/prelink.mjs).
if (bundling && !process.exitCode) {
  const { spawnSync } = await import('node:child_process')
  const prelink = spawnSync(
    process.execPath,
    [
      '--experimental-import-meta-resolve',
      join(root, 'scripts/prelink.mjs'),
      ...process.argv.filter((a) => a === '--quiet'),
    ],
    { stdio: 'inherit' },
  )
  if (prelink.status !== 0) process.exitCode = prelink.status ?? 1
}
