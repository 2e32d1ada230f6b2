// Builds the app into dist-web/: first the shared libraries (one ES module each under shared/),
// then the shell with those names left as bare imports and an import map in index.html that
// points them at the shared modules. Used by scripts/build-client.mjs.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'vite'
import react from '@vitejs/plugin-react'
import { SHARED, sharedId, sharedShims } from './shared.mjs'

export const WEB_ROOT = fileURLToPath(new URL('..', import.meta.url))
export const OUT_DIR = join(WEB_ROOT, 'dist-web')

const conditions = ['browser', 'module', 'import', 'default']

/** The import map and preload tags for index.html, from the shared build's entry files. */
export function importMapHtml(map, preloadFiles = []) {
  const imports = Object.fromEntries(Object.entries(map).map(([name, file]) => [name, `/${file}`]))
  // Every file the shell's imports reach, so the browser fetches them in one round instead of
  // discovering the shared chunks only after the entries arrive.
  const preload = preloadFiles.map((file) => `<link rel="modulepreload" href="/${file}">`).join('\n    ')
  return `<script type="importmap">${JSON.stringify({ imports })}</script>\n    ${preload}`
}

/** Moves the page's `<link rel="stylesheet">` elements to the top of `<head>` (after its meta and title). */
export function stylesheetFirst(html) {
  const links = html.match(/<link rel="stylesheet"[^>]*>\s*/g) ?? []
  if (links.length === 0) return html
  let out = html
  for (const link of links) out = out.replace(link, '')
  const at = out.indexOf('</title>')
  if (at === -1) return html
  const end = at + '</title>'.length
  return `${out.slice(0, end)}\n    ${links.map((l) => l.trim()).join('\n    ')}${out.slice(end)}`
}

const BOOT_SLOT = '<script type="application/json" id="dsh-boot"></script>'

/**
 * The boot data's slot after the app's entry script. The host fills the slot with the boot data
 * and a modulepreload of every browser half (@dsh/frontend-static); after the entry, the page's
 * own modules are asked for before the ~25 halves, which a browser with a few connections per
 * host would otherwise fetch first (and a half is imported only once the entry has run).
 */
export function entryBeforeHalves(html) {
  const entry = /<script type="module"[^>]*\ssrc="[^"]+"[^>]*><\/script>/.exec(html)
  if (!entry || !html.includes(BOOT_SLOT)) return html
  const out = html.replace(new RegExp(`\\s*${BOOT_SLOT.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`), '')
  return out.replace(entry[0], `${entry[0]}\n    ${BOOT_SLOT}`)
}

/**
 * Builds into a fresh directory and swaps it in at the end, so a host serving dist-web/ meanwhile
 * never sees a half-written tree (and files of older builds do not pile up).
 */
export async function buildApp({ quiet = false } = {}) {
  // Production React (and its production JSX runtime), whatever the caller's environment says.
  process.env.NODE_ENV = 'production'
  const final = OUT_DIR
  const staging = `${OUT_DIR}.tmp-${process.pid}`
  rmSync(staging, { recursive: true, force: true })
  const map = await buildInto(staging, quiet)
  swapDir(staging, final)
  return map
}

/**
 * Puts `staging` in place of `final`. Two builds may finish at once (parallel test runs share the
 * checkout): whichever renames last wins, the other's output is dropped; both are complete trees.
 */
export function swapDir(staging, final) {
  const old = `${final}.old-${process.pid}`
  for (let attempt = 0; ; attempt++) {
    try {
      if (existsSync(final)) renameSync(final, old)
      renameSync(staging, final)
      break
    } catch (error) {
      if (attempt >= 5) {
        rmSync(staging, { recursive: true, force: true })
        if (!existsSync(final)) throw error
        break
      }
    }
  }
  rmSync(old, { recursive: true, force: true })
}

/** Modules of the shared libraries (npm packages and the workspace's shared packages). */
const START_CODE = /[\\/](node_modules|packages)[\\/]/
/** What @dsh/client-design imports only lazily (its `overlays.ts`, and the Radix parts only it uses). */
const LAZY_CODE =
  /[\\/]design[\\/](src[\\/]overlays\.ts|dist[\\/]overlays[\w-]*\.js)$|[\\/]@radix-ui[\\/]react-(select|popover|tabs|number|use-previous)[\\/]/

async function buildInto(OUT_DIR, quiet) {
  const logLevel = quiet ? 'warn' : 'info'
  // 1. Shared libraries: every name an entry, shared code in common chunks.
  const map = {}
  /** Each output file of the shared build with the files it imports statically. */
  const graph = {}
  await build({
    configFile: false,
    root: WEB_ROOT,
    logLevel,
    mode: 'production',
    resolve: { conditions },
    plugins: [
      sharedShims(),
      {
        name: 'dsh-shared-map',
        generateBundle(_options, bundle) {
          for (const chunk of Object.values(bundle)) {
            if (chunk.type === 'chunk') graph[chunk.fileName] = chunk.imports
            if (chunk.type === 'chunk' && chunk.isEntry) {
              const name = SHARED.find((n) => sharedId(n) === chunk.name)
              if (name) map[name] = chunk.fileName
            }
          }
        },
      },
    ],
    build: {
      outDir: OUT_DIR,
      emptyOutDir: true,
      target: 'es2022',
      minify: true,
      sourcemap: false,
      reportCompressedSize: false,
      rollupOptions: {
        input: Object.fromEntries(SHARED.map((n) => [sharedId(n), `dsh-shared:${n}`])),
        preserveEntrySignatures: 'strict',
        // Radix and Lucide mark their modules "use client" (a React Server Components hint that
        // means nothing in this all-client bundle).
        onwarn(warning, warn) {
          if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning)
        },
        output: {
          entryFileNames: 'shared/[name]-[hash].js',
          chunkFileNames: 'shared/lib-[hash].js',
          format: 'es',
          // The libraries' code in one chunk, not one per set of importing names (eleven): each
          // file the page asks for at start is a request, and a browser with a few connections
          // per host queues them; the names stay thin entries the import map points at. What the
          // design system imports lazily (its overlays: select, popover, tabs) stays a chunk of
          // its own, fetched when first used.
          codeSplitting: { groups: [{ name: 'lib', test: (id) => START_CODE.test(id) && !LAZY_CODE.test(id) }] },
        },
      },
    },
  })
  mkdirSync(OUT_DIR, { recursive: true })
  writeFileSync(join(OUT_DIR, 'shared.json'), JSON.stringify(map, null, 2) + '\n')
  // The closure of what the shell imports at start (everything but the unused entries).
  const wanted = [
    'react',
    'react/jsx-runtime',
    'react-dom/client',
    'cordis',
    '@dsh/client-runtime',
    '@dsh/client-design',
    // Imported by the browser halves at start (preloaded with them by the host).
    '@dsh/web-protocol',
    'schemastery',
  ]
    .map((n) => map[n])
    .filter(Boolean)
  const preloadFiles = []
  const visit = (file) => {
    if (preloadFiles.includes(file)) return
    preloadFiles.push(file)
    for (const dep of graph[file] ?? []) visit(dep)
  }
  wanted.forEach(visit)
  // 2. The shell.
  await build({
    configFile: false,
    root: WEB_ROOT,
    logLevel,
    mode: 'production',
    resolve: { conditions },
    plugins: [
      react(),
      {
        name: 'dsh-import-map',
        transformIndexHtml: {
          order: 'pre',
          handler: (html) => html.replace('<!-- dsh:import-map -->', importMapHtml(map, preloadFiles)),
        },
      },
      {
        // The stylesheet first in <head>: it is all the static shell needs to paint, and a
        // browser with a few connections per host would otherwise fetch it after every preload.
        name: 'dsh-css-first',
        transformIndexHtml: { order: 'post', handler: (html) => entryBeforeHalves(stylesheetFirst(html)) },
      },
    ],
    build: {
      outDir: OUT_DIR,
      emptyOutDir: false,
      target: 'es2022',
      sourcemap: false,
      reportCompressedSize: false,
      modulePreload: { polyfill: false },
      rollupOptions: { external: (id) => SHARED.includes(id) },
    },
  })
  writeFileSync(join(OUT_DIR, '.gitignore'), '*\n')
  return JSON.parse(readFileSync(join(OUT_DIR, 'shared.json'), 'utf8'))
}
