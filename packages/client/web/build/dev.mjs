#!/usr/bin/env node
// `pnpm dev:web`: the app from sources with hot reload (Vite dev server), talking to a running
// `dsh web`: /api, /plugins, /auth and /client-manifest.json are proxied to it. The browser half of
// a workspace package (src/client/index.ts(x)) is served from its sources too, so editing it hot
// reloads as well; other halves come from the host as built files. Every half imports the shared
// libraries through an import map pointing at this server's own copies: one React for all.
// usage: DSH_WEB_URL=http://127.0.0.1:3080 pnpm dev:web [--port 5173]
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createServer } from 'vite'
import react from '@vitejs/plugin-react'
import { SHARED, sharedShims } from './shared.mjs'
import { WEB_ROOT } from './app.mjs'

const target = (process.env.DSH_WEB_URL || 'http://127.0.0.1:3080').replace(/\/$/, '')
const portArg = process.argv.indexOf('--port')
const port = portArg > 0 ? Number(process.argv[portArg + 1]) : 5173

/** Workspace packages with a browser half in sources: package name -> entry file. */
function workspaceHalves() {
  const repo = fileURLToPath(new URL('../../../../', import.meta.url))
  const halves = new Map()
  for (const group of ['packages', 'bundles']) {
    const base = join(repo, group)
    if (!existsSync(base)) continue
    const dirs = []
    for (const a of readdirSync(base)) {
      if (existsSync(join(base, a, 'package.json'))) dirs.push(join(base, a))
      else for (const b of existsSync(join(base, a)) ? readdirSync(join(base, a)) : []) dirs.push(join(base, a, b))
    }
    for (const dir of dirs) {
      const entry = ['src/client/index.tsx', 'src/client/index.ts'].map((e) => join(dir, e)).find((e) => existsSync(e))
      if (!entry) continue
      try {
        halves.set(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name, entry)
      } catch {
        // not a package
      }
    }
  }
  return halves
}
const halves = workspaceHalves()

const proxy = Object.fromEntries(
  ['/api', '/plugins', '/auth', '/client-manifest.json'].map((path) => [
    path,
    {
      target,
      changeOrigin: true,
      // The host's access gate wants its own origin on state-changing requests.
      configure: (p) => p.on('proxyReq', (req) => req.getHeader('origin') && req.setHeader('origin', target)),
    },
  ]),
)

const server = await createServer({
  configFile: false,
  root: WEB_ROOT,
  plugins: [
    react(),
    sharedShims(),
    {
      // /plugins/<package>/index.js of a workspace package -> its source entry, through Vite.
      name: 'dsh-dev-halves',
      configureServer(server) {
        server.middlewares.use((req, res, next) => {
          const match = /^\/plugins\/((?:@[^/]+\/)?[^/]+)\/index\.js(?:\?.*)?$/.exec(req.url ?? '')
          const entry = match && halves.get(decodeURIComponent(match[1]))
          if (!entry) return next()
          res.statusCode = 302
          res.setHeader('location', `/@fs${entry}`)
          res.end()
        })
      },
    },
    {
      name: 'dsh-dev-import-map',
      // An import map must come before every module script, Vite's own included.
      transformIndexHtml: {
        order: 'post',
        handler: (html) =>
          html
            .replace('<!-- dsh:import-map -->', '')
            .replace(
              /<head>/i,
              `<head>\n    <script type="importmap">${JSON.stringify({ imports: Object.fromEntries(SHARED.map((n) => [n, `/@id/dsh-shared:${n}`])) })}</script>`,
            ),
      },
    },
  ],
  resolve: { conditions: ['development', 'browser', 'module', 'import', 'default'] },
  server: {
    port,
    strictPort: false,
    proxy,
    watch: { ignored: ['**/dist-web*/**', '**/dist-client/**', '**/dist/**'] },
  },
  clearScreen: false,
  // Tests give each dev server its own dependency cache (parallel runs would share one otherwise).
  ...(process.env.DSH_DEV_CACHE_DIR ? { cacheDir: process.env.DSH_DEV_CACHE_DIR } : {}),
})
await server.listen()
server.printUrls()
console.log(
  `  proxying /api, /plugins, /auth to ${target}; from sources: ${[...halves.keys()].join(', ') || 'no browser halves'}`,
)
