#!/usr/bin/env node
// `pnpm dev:web`: the app from sources with hot reload (Vite dev server), talking to a running
// `dsh web`: /api, /plugins, /auth and /client-manifest.json are proxied to it. Browser halves
// come from the host as built files and import the shared libraries through an import map that
// points at this server's own copies, so the app and the halves still share one React.
// usage: DSH_WEB_URL=http://127.0.0.1:3080 pnpm dev:web [--port 5173]
import { createServer } from 'vite'
import react from '@vitejs/plugin-react'
import { SHARED, sharedShims } from './shared.mjs'
import { WEB_ROOT } from './app.mjs'

const target = (process.env.DSH_WEB_URL || 'http://127.0.0.1:3080').replace(/\/$/, '')
const portArg = process.argv.indexOf('--port')
const port = portArg > 0 ? Number(process.argv[portArg + 1]) : 5173

const proxy = Object.fromEntries(['/api', '/plugins', '/auth', '/client-manifest.json'].map((path) => [path, {
  target,
  changeOrigin: true,
  // The host's access gate wants its own origin on state-changing requests.
  configure: (p) => p.on('proxyReq', (req) => req.getHeader('origin') && req.setHeader('origin', target)),
}]))

const server = await createServer({
  configFile: false,
  root: WEB_ROOT,
  plugins: [
    react(),
    sharedShims(),
    {
      name: 'dsh-dev-import-map',
      // An import map must come before every module script, Vite's own included.
      transformIndexHtml: {
        order: 'post',
        handler: (html) => html.replace('<!-- dsh:import-map -->', '').replace(/<head>/i, `<head>\n    <script type="importmap">${JSON.stringify({ imports: Object.fromEntries(SHARED.map((n) => [n, `/@id/dsh-shared:${n}`])) })}</script>`),
      },
    },
  ],
  resolve: { conditions: ['development', 'browser', 'module', 'import', 'default'] },
  server: { port, strictPort: false, proxy },
  clearScreen: false,
})
await server.listen()
server.printUrls()
console.log(`  proxying /api, /plugins, /auth to ${target}`)
