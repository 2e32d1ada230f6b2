// The shared libraries of the page: each is served once by the app and mapped by the import map,
// so the app and every plugin's browser half use the same React, Cordis and runtime. This file is
// plain JavaScript because the build script, the Vite config and the dev server all load it.
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(fileURLToPath(new URL('../package.json', import.meta.url)))

/** Bare names a browser half must leave unbundled; the import map resolves them. */
export const SHARED = [
  'react',
  'react/jsx-runtime',
  'react/jsx-dev-runtime',
  'react-dom',
  'react-dom/client',
  'cordis',
  'schemastery',
  '@dsh/web-protocol',
  '@dsh/client-runtime',
  // the host link the runtime re-exports (ctx.remote, ctx.connection, readSse)
  '@dsh/client-connection',
  '@dsh/client-design',
  // the design system's older name, for halves built before it left the runtime
  '@dsh/client-runtime/ui',
]

/** How a shared name is re-exported: CommonJS packages need their export names listed. */
const CJS = new Set(['react', 'react/jsx-runtime', 'react/jsx-dev-runtime', 'react-dom', 'react-dom/client'])

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** The source of the module that re-exports one shared library. */
export function shimSource(name) {
  if (CJS.has(name)) {
    process.env.NODE_ENV ??= 'production'
    const keys = Object.keys(require(name)).filter((k) => IDENT.test(k) && k !== 'default' && k !== '__esModule')
    return `import m from ${JSON.stringify(name)}\nexport default m\nexport const { ${keys.join(', ')} } = m\n`
  }
  if (name === 'schemastery') return `export * from 'schemastery'\nexport { default } from 'schemastery'\n`
  return `export * from ${JSON.stringify(name)}\n`
}

/** A file-name-safe id of a shared name (`react-dom/client` -> `react-dom__client`). */
export const sharedId = (name) => name.replace(/^@/, '').replace(/\//g, '__')

export const VIRTUAL_PREFIX = '\0dsh-shared:'

/** A Vite plugin that serves `dsh-shared:<name>` virtual modules (the shims above). */
export function sharedShims() {
  return {
    name: 'dsh-shared-shims',
    resolveId(id) {
      if (id.startsWith('dsh-shared:')) return '\0' + id
      return undefined
    },
    load(id) {
      if (id.startsWith(VIRTUAL_PREFIX)) return shimSource(id.slice(VIRTUAL_PREFIX.length))
      return undefined
    },
  }
}

/** True for a shared name or a deep import of one (`react/...`). */
export function isShared(id) {
  return SHARED.includes(id)
}
