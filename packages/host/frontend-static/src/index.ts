// @dsh/frontend-static: the web host's static half. It owns the webserver's fallback seat and
// serves the built browser client (hashed assets cached forever, index.html revalidated, bodies
// compressed, SPA routes answered with index.html), and serves each enabled plugin's browser
// half at `/plugins/<package-name>/<file>`.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { documentPolicy, sendError, type RequestInfo } from '@dsh/webserver'
import type { LoaderLike } from '@dsh/plugin-inventory'
import { CompressionCache, isHashedName, resolveUnder, sendFile } from './files.ts'
import { clientPlugins, splitPluginPath, type ClientPlugin } from './clients.ts'

export {
  CompressionCache,
  contentTypeOf,
  isHashedName,
  pickEncoding,
  resolveUnder,
  MIN_COMPRESS_BYTES,
} from './files.ts'
export { clientOfPackage, clientPlugins, splitPluginPath, type ClientPlugin } from './clients.ts'

declare module 'cordis' {
  interface Context {
    frontendStatic: FrontendStatic
  }
}

/** The placeholder page shipped in this package, served when no client is built. */
export const PLACEHOLDER_DIST = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'placeholder')

/** The built app of `@dsh/client-web` (its `dist-web/`), when it is installed and built. */
export function builtClientDist(): string | undefined {
  try {
    const dir = join(dirname(createRequire(import.meta.url).resolve('@dsh/client-web/package.json')), 'dist-web')
    return existsSync(join(dir, 'index.html')) ? dir : undefined
  } catch {
    return undefined
  }
}

/** What the page reads before any script runs: the browser halves to load and the launch folder. */
export interface BootManifest {
  version: 1
  /** `defer`: import after the conversation's first screen has painted (the package's `dsh.clientLoad`). */
  plugins: Array<{ package: string; url: string; defer?: true }>
  launchCwd?: string
}

export const MANIFEST_PATH = '/client-manifest.json'
const MANIFEST_SLOT = '<script type="application/json" id="dsh-boot"></script>'
/** The id of the data block that carries the opened session's replay (read by `@dsh/client-connection`). */
export const SESSION_DATA_ID = 'dsh-session'
/** The page's route of one session (`/s/<id>`), as the browser client names it. */
const SESSION_ROUTE = /^\/s\/([^/]+)\/?$/

/** What the page carries of the session its URL names: the frames its event stream would send first. */
export interface SessionData {
  version: 1
  sessionId: string
  /** `[event, data]` in stream order: the log from seq 0 (`message`), then `status`, `approval`, `question`. */
  frames: Array<[string, unknown]>
}

/** The session stream seat of the api gateway, as this package uses it (present when the gateway is). */
interface StreamSeat {
  sessionStreams?(): { attach(sessionId: string, client: unknown, after: number): Promise<void> } | undefined
}

/**
 * A session's replay as its stream would send it, or undefined (no session host, an unknown
 * session, a log over `maxBytes` of JSON, or a resync). It attaches like a stream client and
 * detaches at once, after the replay and the pending requests (all sent synchronously).
 */
export async function readSessionData(
  seat: StreamSeat | undefined,
  sessionId: string,
  maxBytes: number,
): Promise<SessionData | undefined> {
  const streams = seat?.sessionStreams?.()
  if (!streams) return undefined
  const frames: Array<[string, unknown]> = []
  let bytes = 0
  let failed = false
  const client = {
    closed: false,
    onClose: undefined as (() => void) | undefined,
    send(event: string | undefined, data: unknown): boolean {
      if (client.closed) return false
      bytes += JSON.stringify(data)?.length ?? 0
      if (bytes > maxBytes) {
        failed = true
        client.close()
        return false
      }
      frames.push([event ?? 'message', data])
      return true
    },
    resync() {
      failed = true
      client.close()
    },
    close() {
      if (client.closed) return
      client.closed = true
      client.onClose?.()
    },
  }
  try {
    await streams.attach(sessionId, client, -1)
  } catch {
    return undefined
  } finally {
    client.close()
  }
  if (failed || !frames.some(([event]) => event === 'status')) return undefined
  return { version: 1, sessionId, frames }
}

/** Where index.html's static shell takes the session's preview (inside its conversation area). */
export const PREVIEW_SLOT = '<!-- dsh:session-preview -->'

const escapeHtml = (v: string) =>
  v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/**
 * The last `maxItems` prompts and answers of a session's replay as plain-text HTML for the static
 * shell (each text cut at `maxChars`): the page shows the conversation at its first paint, before
 * any script has run; the app's conversation view replaces it on its first render. Events of other
 * types, and frames of unexpected shapes, are skipped.
 */
export function sessionPreview(data: SessionData, maxItems = 4, maxChars = 1200): string {
  const items: Array<{ who: 'user' | 'assistant'; text: string }> = []
  const textOf = (content: unknown) =>
    Array.isArray(content)
      ? content
          .map((b) =>
            b && typeof b === 'object' && (b as { type?: unknown }).type === 'text'
              ? String((b as { text?: unknown }).text ?? '')
              : '',
          )
          .join('')
      : ''
  for (const [event, frame] of data.frames) {
    if (event !== 'message' || !frame || typeof frame !== 'object') continue
    const { type, data: d } = frame as {
      type?: unknown
      data?: { source?: { kind?: unknown }; content?: unknown; message?: { content?: unknown } | null } | null
    }
    if (type === 'user/message' && d?.source?.kind === 'human') items.push({ who: 'user', text: textOf(d.content) })
    else if (type === 'assistant/message') items.push({ who: 'assistant', text: textOf(d?.message?.content) })
  }
  const shown = items.filter((i) => i.text.trim()).slice(-maxItems)
  if (!shown.length) return ''
  const cut = (t: string) => (t.length > maxChars ? `${t.slice(0, maxChars)}…` : t)
  return `<div class="boot-preview" data-session-id="${escapeHtml(data.sessionId)}">${shown
    .map((i) => `<div class="boot-msg boot-${i.who}">${escapeHtml(cut(i.text.trim()))}</div>`)
    .join('')}</div>`
}

/** `<link rel="modulepreload">` for each URL (same-origin paths), HTML-escaped, one a line. */
export function preloadLinks(urls: readonly string[]): string {
  const attr = (v: string) =>
    v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  return urls.map((url) => `<link rel="modulepreload" href="${attr(url)}">\n    `).join('')
}

export const IMMUTABLE = 'public, max-age=31536000, immutable'
export const REVALIDATE = 'no-cache'

export interface FrontendStaticConfig {
  /** The built client directory (holds index.html). Default: @dsh/client-web's dist-web/, else the placeholder page. */
  dist?: string
  /** The folder the page offers first (its first session opens there). Default: the process's working directory. */
  launchCwd?: string
  /** Serve enabled plugins' `./client` exports under `/plugins/`. */
  plugins?: boolean
  /** gzip/brotli by Accept-Encoding. */
  compress?: boolean
  /** Byte budget of the compressed-body cache. */
  cacheBytes?: number
  /** Embed the replay of the session a page URL names (`/s/<id>`) when its JSON is at most this many bytes; 0: never. */
  sessionDataBytes?: number
  /** Honour the halves' `dsh.clientLoad: "deferred"` (import them after the first screen); false: every half loads at once. */
  deferHalves?: boolean
}

/** The index taps the webserver may offer (an addition to the contract; used when present). */
interface IndexTaps {
  applyIndexTaps?(html: string): string | Promise<string>
}

export class FrontendStatic extends Service {
  static inject = ['webServer']
  static Config: Schema<FrontendStaticConfig> = Schema.object({
    dist: Schema.string().description(
      'Directory of the built browser client (holds index.html). Default: the built @dsh/client-web, else the placeholder page of @dsh/frontend-static.',
    ),
    launchCwd: Schema.string().description(
      'The folder the page opens its first session in. Default: the working directory of the process.',
    ),
    plugins: Schema.boolean()
      .default(true)
      .description("Serve each enabled plugin's ./client export at /plugins/<package-name>/."),
    compress: Schema.boolean()
      .default(true)
      .description('Compress text bodies with brotli or gzip by Accept-Encoding.'),
    cacheBytes: Schema.natural()
      .default(32 * 1024 * 1024)
      .description('Byte budget of the compressed-body cache.'),
    sessionDataBytes: Schema.natural()
      .default(512 * 1024)
      .description(
        'Embed the replay of the session a page URL names (/s/<id>) in the page when its JSON is at most this many bytes (the first paint needs no events round trip); 0: never.',
      ),
    deferHalves: Schema.boolean()
      .default(true)
      .description(
        'Load the browser halves whose package says dsh.clientLoad "deferred" after the conversation\'s first screen has painted (not preloaded); false: every half is preloaded and loaded at once.',
      ),
  })

  /** The real path of the served directory. */
  readonly root: string
  readonly cache: CompressionCache
  private readonly index: { mtimeMs: number; size: number; html?: string } = { mtimeMs: -1, size: -1 }
  private readonly clientCache = new Map<string, ClientPlugin | undefined>()
  /** Packages whose unreadable `dsh.clientLoad` was already reported (once each). */
  private readonly loadWarned = new Set<string>()
  /** `frame-src` sources plugins asked for (none: the page may frame nothing). */
  private readonly frameSources = new Map<string, number>()

  constructor(
    ctx: Context,
    readonly config: FrontendStaticConfig,
  ) {
    super(ctx, 'frontendStatic')
    const dist = resolve(config.dist ?? builtClientDist() ?? PLACEHOLDER_DIST)
    if (!existsSync(dist) || !statSync(dist).isDirectory())
      throw new Error(`frontend-static: the client directory ${dist} does not exist or is not a directory`)
    if (!existsSync(join(dist, 'index.html')))
      throw new Error(`frontend-static: ${dist} has no index.html (is the client built?)`)
    this.root = realpathSync(dist)
    this.cache = new CompressionCache(config.cacheBytes)
    ctx.webServer.registerFallback((req, res, info) => this.handleApp(req, res, info))
    if (config.plugins !== false) {
      ctx.webServer.register({
        path: '/plugins',
        match: 'prefix',
        handle: (req, res, info) => this.handlePlugin(req, res, info),
      })
    }
    ctx.webServer.register({
      path: MANIFEST_PATH,
      match: 'exact',
      handle: (req, res) => {
        const body = JSON.stringify(this.manifest())
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
        res.end(req.method === 'HEAD' ? undefined : body)
      },
    })
  }

  /**
   * The boot manifest: enabled browser halves (with an entry file) in Loader order, and the launch
   * folder. Asked while the app is still starting (the page is served early), it lists the rows
   * on their way up too; their files are served once the app is up.
   */
  manifest(): BootManifest {
    const booting = !this.ctx.webServer.ready
    const plugins =
      this.config.plugins === false
        ? []
        : clientPlugins(this.loaderView(), this.clientCache, booting)
            .filter((c) => c.entry)
            .map((c) => {
              if (c.loadError && !this.loadWarned.has(c.package)) {
                this.loadWarned.add(c.package)
                this.ctx.logger('frontend-static').warn(c.loadError)
              }
              return {
                package: c.package,
                url: c.baseUrl + c.entry!.split('/').map(encodeURIComponent).join('/'),
                ...(c.load === 'deferred' && this.config.deferHalves !== false ? { defer: true as const } : {}),
              }
            })
    return { version: 1, plugins, launchCwd: this.config.launchCwd ?? process.cwd() }
  }

  /**
   * Lets the page frame documents from `source` (a CSP source, e.g. `'self'`) while the calling
   * plugin is active: a plugin that serves a framable document of its own (the dynamic-plugin
   * runner's sandboxed frame) asks for it. Every other response of the host refuses framing.
   */
  allowFrames(source: string): () => void {
    if (!/^('self'|https?:\/\/[^\s;,]+)$/.test(source))
      throw new TypeError(
        `frontendStatic.allowFrames: ${JSON.stringify(source)} is not a frame source ('self' or a URL)`,
      )
    const sources = this.frameSources
    const dispose = this.ctx.effect(() => {
      sources.set(source, (sources.get(source) ?? 0) + 1)
      return () => {
        const n = (sources.get(source) ?? 1) - 1
        if (n > 0) sources.set(source, n)
        else sources.delete(source)
      }
    }, 'frontend-static: frame source')
    return () => void dispose()
  }

  /** The enabled plugins that ship a browser half, in Loader order. */
  clientPlugins(): ClientPlugin[] {
    return clientPlugins(this.loaderView())
  }

  private loaderView(): LoaderLike | undefined {
    return this.ctx.get('loader') as LoaderLike | undefined
  }

  /**
   * index.html, re-read when its size or time changed. Synchronous on purpose: a few kB, and the
   * page is asked for while the rest of the app is still loading, when every event-loop turn of
   * an asynchronous read waits behind module loading; one stat per request keeps it current.
   */
  private readIndex(): string {
    const file = join(this.root, 'index.html')
    const info = statSync(file)
    if (this.index.html === undefined || info.mtimeMs !== this.index.mtimeMs || info.size !== this.index.size) {
      this.index.html = readFileSync(file, 'utf8')
      this.index.mtimeMs = info.mtimeMs
      this.index.size = info.size
    }
    return this.index.html
  }

  private async sendIndex(req: IncomingMessage, res: ServerResponse, pathname = '/'): Promise<void> {
    let html = this.readIndex()
    if (html.includes(MANIFEST_SLOT)) {
      // The session the URL names, replayed into the page: its first render needs no events round
      // trip (the connection takes these frames once, then streams after their last seq). The
      // page is served only past every guard of the webserver, the same fence as the events API.
      const route = SESSION_ROUTE.exec(pathname)
      let sessionId: string | undefined
      try {
        sessionId = route ? decodeURIComponent(route[1]) : undefined
      } catch {
        sessionId = undefined
      }
      const limit = this.config.sessionDataBytes ?? 512 * 1024
      const data =
        sessionId && limit > 0 && req.method === 'GET'
          ? await readSessionData(this.ctx.get('api') as StreamSeat | undefined, sessionId, limit)
          : undefined
      const block = data
        ? `<script type="application/json" id="${SESSION_DATA_ID}">${JSON.stringify(data).replace(/</g, '\\u003c')}</script>`
        : ''
      const manifest = this.manifest()
      // `<` escaped so no value can close the script element.
      const json = JSON.stringify(manifest).replace(/</g, '\\u003c')
      // Each browser half's entry preloaded beside the boot data (after the import map, which must
      // come before any module fetch): the browser fetches them in parallel with the app's entry
      // instead of one round trip after it, and the runtime's `import(url)` finds them in the
      // module map. Their lazily imported chunks stay lazy.
      // Deferred halves are not preloaded: the page asks for them after the conversation's first
      // screen, so nothing of theirs competes with (or is counted in) that paint.
      html = html.replace(
        MANIFEST_SLOT,
        () =>
          `${preloadLinks(manifest.plugins.filter((p) => !p.defer).map((p) => p.url))}<script type="application/json" id="dsh-boot">${json}</script>${block}`,
      )
      // The same replay as text in the static shell: the conversation shows before any script runs.
      if (data && html.includes(PREVIEW_SLOT)) html = html.replace(PREVIEW_SLOT, () => sessionPreview(data))
    }
    const taps = this.ctx.webServer as unknown as IndexTaps
    if (typeof taps.applyIndexTaps === 'function') html = await taps.applyIndexTaps(html)
    const body = Buffer.from(html, 'utf8')
    // The page's CSP from the page as served: its import map and boot data by hash, nothing else
    // inline. Browser halves add <style> elements at run time, so inline styles are allowed.
    // Frames only from the sources a plugin asked for (allowFrames); none by default.
    const frames = this.frameSources.size ? `; frame-src ${[...this.frameSources.keys()].join(' ')}` : ''
    res.setHeader('content-security-policy', documentPolicy(html, { styles: 'inline' }) + frames)
    await sendFile(
      req,
      res,
      { path: join(this.root, 'index.html'), size: body.length, mtimeMs: 0 },
      {
        cacheControl: REVALIDATE,
        body,
        cache: this.cache,
        compress: this.config.compress !== false,
      },
    )
  }

  /** The fallback: files of the client directory, index.html for every other GET. */
  async handleApp(req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD')
      sendError(
        res,
        405,
        'METHOD_NOT_ALLOWED',
        `${req.method} ${info.url.pathname}: no such method; static files answer GET and HEAD`,
      )
      return
    }
    // The page itself, with no file look-up (SPA routes below resolve to it as well).
    if (info.url.pathname === '/' || info.url.pathname === '/index.html') {
      await this.sendIndex(req, res, info.url.pathname)
      return
    }
    const found = await resolveUnder(this.root, info.url.pathname)
    if (found.kind === 'outside') {
      sendError(res, 403, 'FORBIDDEN_PATH', 'the path leads outside the client directory')
      return
    }
    if (found.kind === 'missing' || found.path === join(this.root, 'index.html')) {
      await this.sendIndex(req, res, info.url.pathname)
      return
    }
    await sendFile(req, res, found, {
      cacheControl: isHashedName(found.path) ? IMMUTABLE : REVALIDATE,
      cache: this.cache,
      compress: this.config.compress !== false,
    })
  }

  /** `/plugins/<package-name>/<file>`: a file of an enabled plugin's browser half. */
  async handlePlugin(req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD')
      sendError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} ${info.url.pathname}: plugin files answer GET and HEAD`)
      return
    }
    const parts = splitPluginPath(info.url.pathname)
    if (!parts) {
      sendError(res, 404, 'NOT_FOUND', 'expected /plugins/<package-name>/<file>')
      return
    }
    const client = this.findClient(parts.package)
    if (!client) {
      sendError(res, 404, 'PLUGIN_NOT_FOUND', `no enabled plugin ${JSON.stringify(parts.package)} ships a browser half`)
      return
    }
    const found = await resolveUnder(client.dir, parts.file)
    if (found.kind === 'outside') {
      sendError(res, 403, 'FORBIDDEN_PATH', "the path leads outside the plugin's client directory")
      return
    }
    if (found.kind === 'missing') {
      sendError(res, 404, 'NOT_FOUND', `${parts.package} has no client file ${parts.file}`)
      return
    }
    await sendFile(req, res, found, {
      cacheControl: isHashedName(found.path) ? IMMUTABLE : REVALIDATE,
      cache: this.cache,
      compress: this.config.compress !== false,
    })
  }

  /** The browser half of `pkg` if a row of it is enabled and active now (enablement is read per request). */
  private findClient(pkg: string): ClientPlugin | undefined {
    for (const client of clientPlugins(this.loaderView(), this.clientCache)) {
      if (client.package === pkg) return client
    }
    return undefined
  }
}

export const name = 'frontend-static'
export default FrontendStatic
