#!/usr/bin/env node
// Builds the browser side: the app (packages/client/web -> dist-web/, with the shared libraries
// and the import map) and every workspace package's browser half (src/client/index.ts(x) ->
// dist-client/index.js, the shared libraries left as bare imports). A package whose output is
// newer than its inputs is skipped, so running this before every test run costs little.
// A failed build prints one line naming the package and leaves its previous output in place; the
// exit status stays 0 (so one broken half cannot stop an install or every test run) unless
// --strict is given.
// usage: node scripts/build-client.mjs [--quiet] [--force] [--strict] [extra package dirs...]
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = process.argv.slice(2)
const quiet = args.includes('--quiet')
const force = args.includes('--force')
const strict = args.includes('--strict')
const fail = (what, error) => {
  console.error(`build-client: ${what}: ${String(error?.message ?? error).split('\n')[0]}`)
  if (strict) process.exitCode = 1
}
const extra = args.filter((a) => !a.startsWith('--')).map((a) => resolve(a))
const webDir = join(root, 'packages/client/web')
const log = (...m) => quiet || console.log('build-client:', ...m)
// Production builds only (React's production runtime; its JSX runtime has no jsxDEV).
process.env.NODE_ENV = 'production'

if (!existsSync(join(webDir, 'build/app.mjs'))) process.exit(0)
// Workspace packages resolve to their transpiled dist/ (the `default` export condition), so bring
// those up to date first (a no-op when they are).
execFileSync(process.execPath, [join(root, 'scripts/build.mjs'), '--quiet'], { stdio: 'inherit' })
// vite is a dependency of @dsh/client-web, not of the root: load it (and our helpers) from there.
const requireWeb = createRequire(join(webDir, 'package.json'))
let vite
try {
  vite = await import(pathToFileURL(requireWeb.resolve('vite')).href)
} catch {
  console.error('build-client: vite is not installed (run pnpm install); the browser client is not built')
  process.exit(0)
}
const { SHARED } = await import(pathToFileURL(join(webDir, 'build/shared.mjs')).href)
const { swapDir } = await import(pathToFileURL(join(webDir, 'build/app.mjs')).href)

function newest(paths) {
  let max = 0
  const visit = (p) => {
    if (!existsSync(p)) return
    const info = statSync(p)
    if (info.isDirectory()) {
      for (const name of readdirSync(p)) if (name !== 'node_modules' && !name.startsWith('dist')) visit(join(p, name))
    } else max = Math.max(max, info.mtimeMs)
  }
  for (const p of paths) visit(p)
  return max
}

const stampOf = (dir) => join(dir, '.built')
function fresh(outDir, inputs) {
  if (force || !existsSync(stampOf(outDir))) return false
  return statSync(stampOf(outDir)).mtimeMs >= newest(inputs)
}
function stamp(outDir) {
  mkdirSync(outDir, { recursive: true })
  writeFileSync(join(outDir, '.gitignore'), '*\n')
  writeFileSync(stampOf(outDir), new Date().toISOString() + '\n')
}

const started = Date.now()
let built = 0

// 1. The app.
{
  const out = join(webDir, 'dist-web')
  const inputs = [
    join(webDir, 'src'),
    join(webDir, 'index.html'),
    join(webDir, 'build'),
    join(webDir, 'package.json'),
    join(root, 'packages/client/runtime/dist'),
    join(root, 'packages/client/connection/dist'),
    join(root, 'packages/client/design/dist'),
    join(root, 'packages/api/web-protocol/dist'),
    join(root, 'packages/workspace/workspace/dist'),
    join(root, 'packages/api/api-settings/dist'),
    // The shared libraries (react, cordis, ...) are bundled from node_modules: a new lockfile
    // (a version or a patch) rebuilds the app.
    join(root, 'pnpm-lock.yaml'),
  ]
  if (!fresh(out, inputs)) {
    try {
      const { buildApp } = await import(pathToFileURL(join(webDir, 'build/app.mjs')).href)
      await buildApp({ quiet: true })
      stamp(out)
      built++
      log('app -> ' + relative(root, out))
    } catch (error) {
      fail(relative(root, webDir), error)
    }
  }
}

// 2. Browser halves.
const dirs = []
for (const group of ['packages', 'bundles']) {
  const base = join(root, group)
  if (!existsSync(base)) continue
  for (const a of readdirSync(base)) {
    const dir = join(base, a)
    if (existsSync(join(dir, 'package.json'))) dirs.push(dir)
    else if (statSync(dir).isDirectory())
      for (const b of readdirSync(dir)) if (existsSync(join(dir, b, 'package.json'))) dirs.push(join(dir, b))
  }
}
dirs.push(...extra)
// A half bundles the workspace packages it imports that are not shared (in the import map), and
// theirs in turn: their sources are inputs of the half too, or a change to, say, the conversation
// model would leave ui-conversation's old bundle in place.
const manifestOf = (dir) => {
  try {
    return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  } catch {
    return {}
  }
}
const dirByName = new Map(dirs.map((dir) => [manifestOf(dir).name, dir]))
const shared = new Set(SHARED)
function bundledInputs(dir) {
  const inputs = []
  const seen = new Set([dir])
  const visit = (d) => {
    inputs.push(join(d, 'src'), join(d, 'package.json'))
    for (const name of Object.keys(manifestOf(d).dependencies ?? {})) {
      const dep = dirByName.get(name)
      if (!dep || shared.has(name) || seen.has(dep)) continue
      seen.add(dep)
      visit(dep)
    }
  }
  visit(dir)
  return inputs
}
for (const dir of dirs) {
  const entry = ['src/client/index.tsx', 'src/client/index.ts'].map((e) => join(dir, e)).find((e) => existsSync(e))
  if (!entry) continue
  const out = join(dir, 'dist-client')
  if (fresh(out, bundledInputs(dir))) continue
  try {
    const staging = `${out}.tmp-${process.pid}`
    await buildHalf(dir, entry, staging)
    swapDir(staging, out)
  } catch (error) {
    fail(relative(root, dir), error)
    continue
  }
  stamp(out)
  built++
  log(relative(root, dir) + ' -> dist-client/')
}
log(`${built} built in ${Date.now() - started} ms`)

async function buildHalf(dir, entry, out) {
  await vite.build({
    configFile: false,
    root: dir,
    logLevel: 'warn',
    mode: 'production',
    resolve: { conditions: ['browser', 'module', 'import', 'default'] },
    define: { 'process.env.NODE_ENV': JSON.stringify('production') },
    oxc: { jsx: { runtime: 'automatic', importSource: 'react', development: false } },
    build: {
      outDir: out,
      emptyOutDir: true,
      target: 'es2022',
      minify: true,
      sourcemap: false,
      reportCompressedSize: false,
      copyPublicDir: false,
      lib: { entry, formats: ['es'], fileName: () => 'index.js' },
      rollupOptions: {
        external: (id) => SHARED.includes(id) || SHARED.some((n) => id.startsWith(n + '/')),
        output: { chunkFileNames: 'chunk-[hash].js', assetFileNames: '[name][extname]' },
      },
    },
  })
}
