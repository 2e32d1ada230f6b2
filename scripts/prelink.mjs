#!/usr/bin/env node
// Prelinks the shipped plugin rows into one module file, so a boot loads one file instead of one
// per package (resolving, reading, compiling and linking ~100 files was about a third of a boot).
//
// Input: every row named in the shipped patch layers (bundles/*/cordis.patch.yml and the apps'
// own layers), resolved exactly as app-boot resolves them. Output, under <root>/prelinked/<variant>/
// (one variant per host process: `dsh`, `acp`, `jsonrpc`, see VARIANTS):
//   modules.mjs     `export const modules = { '<row url>': () => import(...) }`: one lazy thunk per
//                   row module. esbuild inlines the dynamic imports, so each package's code is
//                   evaluated only when its row is imported (a headless boot never runs web code).
//   manifest.json   { modules: [row urls], inputs: [[file, size, mtimeMs]], hostFiles }: app-boot
//                   uses the prelinked file only when every enabled row is listed and every input
//                   file is unchanged (else it imports the files as before).
//   ../rows.json    the row table: every shipped layer's row names resolved from their layer file,
//                   with what decided each answer (app-compose src/row-table.ts checks an entry before
//                   it answers a name at boot instead of reading the package's package.json).
// Early rows: a package may list row modules in its package.json `dsh.earlyRows` (export subpaths,
// "." for the main one), for rows that should start before the rest of the tree has even loaded
// (the web server's startup and the static client, so the page is served while the big files
// compile). A layer's early rows go to their own entry, `<layer>.early.mjs`, marked `early` in the
// manifest; app-boot loads those first and the rest in the background.
// Kept out of the bundle (imported from their own files, so there is one instance per process):
//   - npm packages and node: builtins (imported by absolute file URL, resolved from the importer,
//     so pnpm's strict layout still applies);
//   - every workspace file the host process loads itself before the rows (app-boot for dsh, plus
//     the dsh-acp or dsh-jsonrpc-agent app module, and what they import): a second, bundled copy
//     would break `instanceof` and module state shared with the host.
// `import.meta.url` of each bundled file is replaced by that file's own URL, so workers, assets and
// createRequire() keep resolving next to the original file.
// Runs at the end of scripts/build.mjs.   node scripts/prelink.mjs [--quiet]
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createHash } from 'node:crypto'
import { build, version as esbuildVersion } from 'esbuild'
import { toScript } from './prelink-script.mjs'

// nodeResolve() asks Node's own resolver with a parent URL, which Node 20-22 honour only under
// --experimental-import-meta-resolve (without it the parent is ignored): without that ability,
// run this script again with the flag (scripts/build.mjs and scripts/pack.mjs pass it at once).
const withParent = (() => {
  try {
    return import.meta.resolve('./probe.mjs', 'file:///prelink-probe/') === 'file:///prelink-probe/probe.mjs'
  } catch {
    return false
  }
})()
if (!withParent) {
  const { spawnSync } = await import('node:child_process')
  const again = spawnSync(
    process.execPath,
    [
      '--experimental-import-meta-resolve',
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      ...process.argv.slice(2),
    ],
    { stdio: 'inherit' },
  )
  process.exit(again.status ?? 1)
}

// `--root DIR --layout package`: prelink the layout of the published `dsh` package
// (scripts/pack.mjs), where every workspace package is a real directory under
// node_modules/@dsh/<name> instead of packages/<family>/<name> or bundles/<name>.
const argValue = (name) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? undefined : process.argv[i + 1]
}
const packageLayout = argValue('--layout') === 'package'
const root = argValue('--root') ? join(argValue('--root'), '/') : fileURLToPath(new URL('..', import.meta.url))
/** A checkout-relative path in this run's layout (`packages/boot/cli/x` -> `node_modules/@dsh/cli/x`). */
const place = (rel) => {
  const m = packageLayout && /^(bundles\/[^/]+|packages\/[^/]+\/[^/]+)\/(.*)$/.exec(rel)
  if (!m) return rel
  const dir = m[1].startsWith('bundles/')
    ? `bundle-${m[1].split('/')[1]}`
    : m[1] === 'packages/sdk/server'
      ? 'sdk-server'
      : m[1].split('/')[2]
  return `node_modules/@dsh/${dir}/${m[2]}`
}
const outDir = join(root, 'prelinked')
const quiet = process.argv.includes('--quiet')
const started = Date.now()

const appBootDist = join(root, place('packages/boot/app-boot/dist/index.js'))
if (!existsSync(appBootDist)) {
  console.error('prelink: packages/boot/app-boot/dist is missing (run scripts/build.mjs first); nothing prelinked')
  rmSync(outDir, { recursive: true, force: true })
  process.exit(0)
}
const { applyLayers, layerCacheKey, parseLayer, resolveFrom } = await import(pathToFileURL(appBootDist).href)
const { buildRowTable, writeRowTable } = await import(
  pathToFileURL(join(root, place('packages/boot/app-compose/dist/row-table.js'))).href
)

/** The shipped layers: bundles and the apps' own patch files (never tests or node_modules). */
function layerFiles() {
  const files = []
  const visit = (dir, depth) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'test' || entry.name === 'dist' || entry.name.startsWith('.'))
        continue
      const path = join(dir, entry.name)
      if (entry.isDirectory() && depth < 3) visit(path, depth + 1)
      else if (entry.isFile() && entry.name.endsWith('.patch.yml')) files.push(path)
    }
  }
  if (packageLayout) visit(join(root, 'node_modules', '@dsh'), 0)
  else {
    visit(join(root, 'bundles'), 0)
    visit(join(root, 'packages'), 0)
  }
  return files.sort()
}

/** Whether a row name is one its package lists in `dsh.earlyRows` (read from its package.json). */
function isEarlyRow(name, file) {
  const parts = name.split('/')
  const pkg = name.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
  const sub = parts.slice(name.startsWith('@') ? 2 : 1).join('/')
  let manifestUrl
  try {
    manifestUrl = resolveFrom(`${pkg}/package.json`, file)
  } catch {
    return false
  }
  if (!manifestUrl) return false
  const early = JSON.parse(readFileSync(fileURLToPath(manifestUrl), 'utf8')).dsh?.earlyRows
  return Array.isArray(early) && early.includes(sub ? `./${sub}` : '.')
}

/** The row module URLs each shipped layer names (children of groups included), by layer file. */
function rowUrlsByLayer() {
  const byLayer = new Map()
  for (const file of layerFiles()) {
    const urls = new Set()
    const early = new Set()
    const addRow = (row) => {
      if (!row || typeof row !== 'object') return
      if (typeof row.name === 'string' && !row.name.startsWith('cordis:')) {
        const url = resolveFrom(row.name, file)
        if (url && /\.m?js$/.test(url)) (isEarlyRow(row.name, file) ? early : urls).add(url)
      }
      if (Array.isArray(row.config)) for (const child of row.config) addRow(child)
    }
    const layer = parseLayer(readFileSync(file, 'utf8'), file)
    for (const op of layer.ops) {
      if (op.kind === 'insert') for (const row of op.rows) addRow(row)
      else if (typeof op.fields?.name === 'string') addRow({ name: op.fields.name, config: op.fields.config })
    }
    for (const url of early) urls.delete(url)
    if (urls.size || early.size) byLayer.set(file, { urls: [...urls].sort(), early: [...early].sort() })
  }
  return byLayer
}

const isWorkspaceFile = packageLayout
  ? (file) => !relative(join(root, 'node_modules', '@dsh'), file).startsWith('..')
  : (file) => !relative(root, file).startsWith('..') && !file.includes(`${'/'}node_modules${'/'}.pnpm${'/'}`)

/**
 * Node's own ESM resolution of an `import` or `import()` (`import.meta.resolve` with a parent URL,
 * which needs --experimental-import-meta-resolve: see the top of this file): the file path, `null`
 * for a builtin, or undefined when Node cannot answer (then esbuild's resolver decides). esbuild's
 * `build.resolve()` from a plugin cost ~36 ms a call here (3,400 calls: over a minute of a CI run),
 * and Node's answer is the one that counts at run time: the bundle's external imports are loaded by
 * Node from the URLs given here. Cached per importing directory and specifier (all nine builds).
 */
const resolutions = new Map()
function nodeResolve(args) {
  if (args.kind !== 'import-statement' && args.kind !== 'dynamic-import') return undefined
  if (!args.importer || !args.resolveDir || typeof import.meta.resolve !== 'function') return undefined
  const key = `${args.resolveDir}\0${args.path}`
  if (resolutions.has(key)) return resolutions.get(key)
  let answer
  try {
    const url = import.meta.resolve(args.path, pathToFileURL(join(args.resolveDir, 'importer.mjs')).href)
    answer = url.startsWith('node:') ? null : url.startsWith('file:') ? fileURLToPath(url) : undefined
  } catch {
    answer = undefined
  }
  resolutions.set(key, answer)
  return answer
}

/**
 * Externalises npm packages, builtins and the workspace files `external(file)` names (by absolute
 * file URL); every other workspace file is bundled.
 */
function externals(external) {
  return {
    name: 'dsh-prelink-externals',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === 'inner' || args.kind === 'entry-point') return undefined
        if (args.path.startsWith('node:') || args.path.startsWith('file:')) return { external: true }
        let path = nodeResolve(args)
        if (path === null) return { external: true }
        if (path === undefined) {
          const hit = await b.resolve(args.path, {
            resolveDir: args.resolveDir,
            kind: args.kind,
            importer: args.importer,
            pluginData: 'inner',
          })
          if (hit.errors.length) return { errors: hit.errors }
          if (hit.external) return { external: true }
          path = hit.path
        }
        if (isWorkspaceFile(path) && !external(path)) return { path }
        return { path: pathToFileURL(path).href, external: true }
      })
    },
  }
}

/** Keeps each bundled file's own `import.meta.url`. */
const importMeta = {
  name: 'dsh-prelink-import-meta',
  setup(b) {
    b.onLoad({ filter: /\.m?js$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8')
      if (text.includes('import.meta')) {
        text = text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
        if (/import\.meta\.(resolve|dirname|filename)/.test(text)) {
          return {
            errors: [
              { text: `${relative(root, args.path)} uses import.meta beyond .url; prelinking cannot keep its meaning` },
            ],
          }
        }
      }
      return { contents: text, loader: 'js' }
    })
  },
}

/**
 * One variant per host process: the workspace files its host modules reach (statically) are kept
 * out, so the host and the rows share one instance of each. `dsh` is the dsh bin (app-boot only),
 * `acp` dsh-acp, `jsonrpc` dsh-jsonrpc-agent; app-boot is told which one it runs in.
 */
const VARIANTS = {
  dsh: [appBootDist],
  acp: [appBootDist, join(root, place('packages/acp/acp-app/dist/index.js'))],
  jsonrpc: [appBootDist, join(root, place('packages/sdk/server/dist/main.js'))],
}
/**
 * The layer sets each variant boots on top of the base layer (the profiles and subcommands that
 * do not serve the web client): one stack each (see stacks()).
 */
const STACKS = {
  dsh: [
    ['bundles/headless/cordis.patch.yml'],
    ['bundles/tui/cordis.patch.yml'],
    ['bundles/headless/cordis.patch.yml', 'packages/session/sessions-cli/sessions.patch.yml'], // dsh sessions
  ],
  acp: [['packages/acp/acp-app/cordis.patch.yml']],
  jsonrpc: [['packages/sdk/server/cordis.patch.yml']],
}
for (const sets of Object.values(STACKS)) {
  for (const set of sets) {
    for (const [i, file] of set.entries()) set[i] = place(file)
  }
}

const layers = rowUrlsByLayer()
/** `bundles/base/cordis.patch.yml` -> `bundles-base`: the entry file name of a layer. */
const entryName = (file) =>
  relative(root, dirname(file)).replaceAll('/', '-') +
  (file.endsWith('cordis.patch.yml') ? '' : `-${basename(file, '.patch.yml')}`)
// Up to date when this script, esbuild, the layers and every input are what the last run saw.
const stamp = createHash('sha256')
  .update(readFileSync(fileURLToPath(import.meta.url)))
  .update(readFileSync(fileURLToPath(new URL('./prelink-script.mjs', import.meta.url))))
  .update(esbuildVersion)
for (const file of layerFiles()) stamp.update(file).update(readFileSync(file))
stamp.update(JSON.stringify([...layers])) // which rows are early (package.json dsh.earlyRows)
// npm packages are imported by their resolved path (which holds the version and any patch hash):
// a changed lockfile may move them, so it re-prelinks too.
if (existsSync(join(root, 'pnpm-lock.yaml'))) stamp.update(readFileSync(join(root, 'pnpm-lock.yaml')))
const stampHex = stamp.digest('hex').slice(0, 32)

function upToDate(name) {
  try {
    const manifest = JSON.parse(readFileSync(join(outDir, name, 'manifest.json'), 'utf8'))
    // Row URLs are absolute: a checkout moved or copied elsewhere prelinks again.
    if (manifest.stamp !== stampHex || manifest.root !== root) return false
    return manifest.inputs.every(([file, size, mtimeMs]) => {
      const st = statSync(join(root, file), { throwIfNoEntry: false })
      return st && st.size === size && st.mtimeMs === mtimeMs
    })
  } catch {
    return false
  }
}

async function variant(name, hostEntries) {
  if (upToDate(name)) return `${name}: up to date`
  const scan = await build({
    entryPoints: hostEntries.filter((f) => existsSync(f)),
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir: join(outDir, name, 'scan'),
    metafile: true,
    logLevel: 'silent',
    plugins: [externals(() => false)],
  })
  const hostFiles = new Set(
    Object.keys(scan.metafile.inputs)
      .map((input) => join(root, input))
      .filter(isWorkspaceFile),
  )
  const isHost = (file) => hostFiles.has(file)

  // One entry per layer, importing its row modules eagerly (a lazy wrapper cannot make the npm
  // imports of the code it wraps lazy: they would all load at once). Code shared by several
  // layers goes to chunk files, so each module exists once.
  const sources = new Map()
  const entries = []
  const entryFiles = []
  for (const [file, { urls: all, early }] of layers) {
    for (const [id, urls, isEarly] of [
      [entryName(file), all, false],
      [`${entryName(file)}.early`, early, true],
    ]) {
      if (!urls.length) continue
      entries.push(rowEntry(sources, id, urls, isHost, 'the row modules of one shipped layer'))
      entryFiles.push([id, { layer: relative(root, file), modules: urls, ...(isEarly ? { early: true } : {}) }])
    }
  }
  const dir = join(outDir, name)
  const result = await bundle(entries, sources, dir, isHost, true)
  const inputs = Object.keys(result.metafile.inputs)
    .filter((input) => !input.startsWith('prelink-entry:'))
    .map((input) => join(root, input))
    .sort()
    .map((file) => {
      const st = statSync(file)
      return [relative(root, file), st.size, st.mtimeMs]
    })
  const manifest = {
    note: 'generated by scripts/prelink.mjs; app-boot uses these files only while every input is unchanged',
    variant: name,
    stamp: stampHex,
    root,
    layers: Object.fromEntries(entryFiles),
    hostFiles: [...hostFiles].map((f) => relative(root, f)).sort(),
    inputs,
  }
  unresolvedImports(result.outputFiles)
  const stackFiles = await stacks(dir, STACKS[name], isHost)
  manifest.stacks = stackFiles.manifest
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  let bytes = 0
  for (const out of [...result.outputFiles, ...stackFiles.files]) {
    if (out.path.endsWith('.map')) continue
    writeFileSync(out.path, out.contents)
    bytes += out.contents.length
  }
  // The manifest last: a reader that sees it sees the matching files.
  const temp = join(dir, `manifest.json.${process.pid}.tmp`)
  writeFileSync(temp, `${JSON.stringify(manifest)}\n`)
  renameSync(temp, join(dir, 'manifest.json'))
  return `${name}: ${inputs.length} files into ${result.outputFiles.length} + ${stackFiles.files.length} stack files, ${(bytes / 1024).toFixed(0)} KiB, ${hostFiles.size} host files kept out`
}

/**
 * A virtual entry module (its text kept in `sources`) that imports `urls` (host files by URL, the
 * rest by path, so esbuild bundles them) and exports them as `modules`, by row URL.
 */
function rowEntry(sources, id, urls, isHost, what) {
  let text = `// Generated by scripts/prelink.mjs: ${what}.\n`
  urls.forEach((url, i) => {
    text += `import * as m${i} from ${JSON.stringify(isHost(fileURLToPath(url)) ? url : fileURLToPath(url))}\n`
  })
  text += `export const modules = {\n${urls.map((url, i) => `  ${JSON.stringify(url)}: m${i},\n`).join('')}}\n`
  const virtual = join(root, `.prelink-entry-${id}.mjs`)
  sources.set(virtual, text)
  return { in: virtual, out: id }
}

/** Bundles the virtual `entries` into `dir` (in memory): with shared chunks, or each on its own. */
function bundle(entries, sources, dir, isHost, splitting) {
  return build({
    entryPoints: entries,
    bundle: true,
    splitting,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir: dir,
    entryNames: '[name]',
    ...(splitting ? { chunkNames: 'chunk-[hash]' } : {}),
    outExtension: { '.js': '.mjs' },
    metafile: true,
    logLevel: 'silent',
    legalComments: 'none',
    plugins: [
      {
        name: 'dsh-prelink-entries',
        setup(b) {
          b.onResolve({ filter: /\.prelink-entry-/ }, (args) =>
            sources.has(args.path) ? { path: args.path, namespace: 'prelink-entry' } : undefined,
          )
          b.onLoad({ filter: /.*/, namespace: 'prelink-entry' }, (args) => ({
            contents: sources.get(args.path),
            loader: 'js',
            resolveDir: root,
          }))
        },
      },
      externals(isHost),
      importMeta,
    ],
  })
}

/**
 * Stacks: the base layer together with the layers one boot adds (STACKS; the base's early rows
 * included), bundled without
 * chunks and turned into a script (`<id>.script.js`) plus a module of its static imports
 * (`<id>.imports.mjs`). A boot whose rows one stack covers compiles that script with `vm.Script`
 * and a V8 code cache (@dsh/app-prelink): Node 20 has no code cache for ES modules, and
 * compiling the layer files was a tenth of a one-shot. Layers with early rows (the web server's)
 * get no stack: their early/rest split matters more there.
 */
async function stacks(dir, wanted, isHost) {
  const base = [...layers].find(([file]) => relative(root, file) === place('bundles/base/cordis.patch.yml'))
  if (!base) return { manifest: {}, files: [] }
  const sources = new Map()
  const entries = []
  const described = {}
  for (const set of wanted) {
    const picked = set.map((file) => [file, layers.get(join(root, file))])
    // A layer with early rows (the web server's) or without rows gets no stack.
    if (picked.some(([, layer]) => !layer || layer.early.length || !layer.urls.length)) continue
    const id = `stack-${picked.map(([file]) => entryName(join(root, file))).join('+')}`
    let rows = [...new Set([...base[1].early, ...base[1].urls, ...picked.flatMap(([, layer]) => layer.urls)])]
    // A set with a `keep` operation (the sessions command's layer) disables most rows: its stack
    // holds only the modules of the rows the composition leaves enabled, so the boot evaluates
    // no code of the rows it does not mount.
    const enabled = enabledRowUrls([base[0], ...set.map((file) => join(root, file))])
    if (enabled) rows = rows.filter((url) => enabled.has(url))
    entries.push(rowEntry(sources, id, rows, isHost, 'the row modules of the base layer and the layers of one stack'))
    described[id] = { layers: [relative(root, base[0]), ...set], modules: rows, early: base[1].early }
  }
  if (!entries.length) return { manifest: {}, files: [] }
  const result = await bundle(entries, sources, dir, isHost, false)
  unresolvedImports(result.outputFiles)
  const files = []
  for (const out of result.outputFiles) {
    const id = basename(out.path, '.mjs')
    const meta =
      result.metafile.outputs[relative(process.cwd(), out.path)] ??
      Object.entries(result.metafile.outputs).find(([k]) => k.endsWith(`/${id}.mjs`))?.[1]
    const statements = meta?.imports?.filter((i) => i.kind === 'import-statement').length
    const { script, imports, warnings } = await toScript(out.text, id, statements)
    for (const warning of warnings) console.warn(warning)
    const enc = new TextEncoder()
    files.push(
      { path: join(dir, `${id}.script.js`), contents: enc.encode(script) },
      { path: join(dir, `${id}.imports.mjs`), contents: enc.encode(imports) },
    )
    described[id].script = `${id}.script.js`
    described[id].imports = `${id}.imports.mjs`
    described[id].hash = createHash('sha256').update(script).digest('hex').slice(0, 32)
  }
  return { manifest: described, files }
}

/**
 * The module URLs of the rows left enabled when `files` are applied in order, when one of them
 * holds a `keep` operation; else undefined (the stack holds every row its layers name). A row
 * disabled by a `!!js` expression counts as enabled (it is decided at boot).
 */
function enabledRowUrls(files) {
  const layers = files.map((file) => parseLayer(readFileSync(file, 'utf8'), file))
  if (!layers.some((layer) => layer.ops.some((op) => op.kind === 'keep'))) return undefined
  const urls = new Set()
  const add = (row, from) => {
    if (!row || typeof row !== 'object' || row.disabled === true) return
    if (typeof row.name === 'string' && !row.name.startsWith('cordis:')) {
      const url = resolveFrom(row.name, from)
      if (url) urls.add(url)
    }
    if (Array.isArray(row.config)) for (const child of row.config) add(child, from)
  }
  for (const composed of applyLayers(layers).rows) add(composed.row, composed.nameFrom)
  return urls
}

/**
 * A dynamic import whose specifier esbuild could not resolve (a template or computed string)
 * stays as written, and a bare or relative specifier then resolves from prelinked/, not from the
 * file it came from: the row fails only when that code path runs. Such an import fails the build
 * here, naming the source, so it is rewritten with literal specifiers instead.
 */
function unresolvedImports(outputFiles) {
  const problems = []
  for (const out of outputFiles) {
    if (out.path.endsWith('.map')) continue
    const text = out.text
    for (const m of text.matchAll(/\bimport\(\s*(["'`])([^"'`]*)/g)) {
      if (/^(file|node|data):/.test(m[2]) || (m[1] !== '`' && /^\.\/chunk-\w+\.mjs$/.test(m[2]))) continue
      const before = text.slice(0, m.index)
      const source = [...before.matchAll(/^\/\/ (\S+)$/gm)].at(-1)?.[1] ?? relative(root, out.path)
      problems.push(`${source}: import(${m[1]}${m[2]}${m[1] === '`' ? '...' : m[1]})`)
    }
  }
  if (problems.length) {
    throw new Error(
      `prelink: dynamic imports that cannot be resolved once bundled (use literal specifiers):\n  ${problems.join('\n  ')}`,
    )
  }
}

// The row table: every shipped layer's row names resolved from their layer file, with what
// decided each answer, so a boot can skip the package.json reads (app-compose src/row-table.ts checks
// each entry before using it). Rebuilt every run (a few ms); written only when it changed.
function rowTable() {
  const file = join(outDir, 'rows.json')
  const table = buildRowTable(layerFiles(), root)
  const text = `${JSON.stringify(table)}\n`
  let old
  try {
    old = readFileSync(file, 'utf8')
  } catch {
    old = undefined
  }
  if (old !== text) writeRowTable(file, table)
  return `row table: ${Object.values(table.layers).reduce((n, rows) => n + Object.keys(rows).length, 0)} names`
}

/**
 * The shipped layers parsed once here (bundles, the apps' layers and the profile templates, whose
 * copies in a home have the same text): `prelinked/layers.json`, `{layers: {<key>: ops}}`, keyed as
 * app-compose's parsed-layer cache is (the text and the parser's own content), so a first boot in
 * a fresh home does not load the YAML parser for them. Written only when it changed.
 */
function shippedLayers() {
  const files = [...layerFiles()]
  const profiles = join(root, 'profiles')
  if (existsSync(profiles)) {
    for (const name of readdirSync(profiles).sort()) {
      const file = join(profiles, name, 'cordis.patch.yml')
      if (existsSync(file)) files.push(file)
    }
  }
  const table = {}
  for (const file of files) {
    const text = readFileSync(file, 'utf8')
    table[layerCacheKey(text)] = parseLayer(text, file).ops
  }
  const out = join(outDir, 'layers.json')
  const json = `${JSON.stringify({ note: 'generated by scripts/prelink.mjs: the shipped layers, parsed', layers: table })}\n`
  let old
  try {
    old = readFileSync(out, 'utf8')
  } catch {
    old = undefined
  }
  if (old !== json) {
    mkdirSync(outDir, { recursive: true })
    writeFileSync(`${out}.${process.pid}.tmp`, json)
    renameSync(`${out}.${process.pid}.tmp`, out)
  }
  return `${Object.keys(table).length} layers parsed`
}

const lines = await Promise.all(Object.entries(VARIANTS).map(([name, entries]) => variant(name, entries))).catch(
  (error) => {
    console.error(error instanceof Error ? error.message : error)
    process.exit(1)
  },
)
lines.push(rowTable(), shippedLayers())
if (!quiet) {
  console.log(`prelink: ${layers.size} layers; ${lines.join('; ')}; ${Date.now() - started} ms`)
}
