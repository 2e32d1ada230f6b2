// Builds the app into dist-web/: first the shared libraries (one ES module each under shared/),
// then the shell with those names left as bare imports and an import map in index.html that
// points them at the shared modules. Used by scripts/build-client.mjs.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'vite'
import react from '@vitejs/plugin-react'
import { SHARED, sharedId, sharedShims } from './shared.mjs'

export const WEB_ROOT = fileURLToPath(new URL('..', import.meta.url))
export const OUT_DIR = join(WEB_ROOT, 'dist-web')

const conditions = ['browser', 'module', 'import', 'default']

/** The import map and preload tags for index.html, from the shared build's entry files. */
export function importMapHtml(map) {
  const imports = Object.fromEntries(Object.entries(map).map(([name, file]) => [name, `/${file}`]))
  const preload = ['react', 'react-dom/client', 'react/jsx-runtime', 'cordis', '@dsh/client-runtime']
    .filter((n) => map[n])
    .map((n) => `<link rel="modulepreload" href="/${map[n]}">`)
    .join('\n    ')
  return `<script type="importmap">${JSON.stringify({ imports })}</script>\n    ${preload}`
}

export async function buildApp({ quiet = false } = {}) {
  const logLevel = quiet ? 'warn' : 'info'
  // 1. Shared libraries: every name an entry, shared code in common chunks.
  const map = {}
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
        output: { entryFileNames: 'shared/[name]-[hash].js', chunkFileNames: 'shared/lib-[hash].js', format: 'es' },
      },
    },
  })
  mkdirSync(OUT_DIR, { recursive: true })
  writeFileSync(join(OUT_DIR, 'shared.json'), JSON.stringify(map, null, 2) + '\n')
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
          handler: (html) => html.replace('<!-- dsh:import-map -->', importMapHtml(map)),
        },
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
