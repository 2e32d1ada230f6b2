// `ctx.webServer`: the one node:http server of the web host. Plugins add exact/prefix routes, one
// fallback and request guards; every error response is JSON `{error: {code, message, field?}}`.
// Every response carries the security headers (no framing, no sniffing, no referrer, a CSP that
// allows nothing); a route serving an HTML document sets its own CSP with `documentPolicy`.
import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/brand' // declares the app/ready and app/stopping events

declare module 'cordis' {
  interface Context {
    webServer: WebServer
  }
}

/** What every guard and handler receives next to the request. */
export interface RequestInfo {
  /** The request URL resolved against the server's own origin. */
  url: URL
  /** The socket peer is 127.0.0.0/8 or ::1 (an IPv4-mapped loopback counts). */
  loopback: boolean
}

export type Handler = (req: IncomingMessage, res: ServerResponse, info: RequestInfo) => unknown
/** Returns true to continue, false after answering the request itself. */
export type Guard = (req: IncomingMessage, res: ServerResponse, info: RequestInfo) => boolean | Promise<boolean>

export interface Route {
  path: string
  match: 'exact' | 'prefix'
  handle: Handler
}

/** A request failure with its HTTP status; `sendError` turns it into the JSON error body. */
export class HttpError extends Error {
  override name = 'HttpError'
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message)
  }
}

export interface WebServerConfig {
  host: string
  port: number
  /** Default body cap of `readJson` when the caller passes none. */
  maxBodyBytes: number
  /** Route nothing before `app/ready` (set by the dsh web glue so no request beats a guard). */
  waitForReady: boolean
  /**
   * With waitForReady: a request arriving before `app/ready` waits for it (false: 503 STARTING at
   * once). Requests an early filter admits (`serveBeforeReady`) are served without waiting.
   */
  holdBeforeReady: boolean
  /** Requests held at once before `app/ready`; past it, 503 STARTING. */
  maxHeldRequests: number
}

/** Decides which requests are served before `app/ready` (they have passed every guard). */
export type EarlyFilter = (req: IncomingMessage, info: RequestInfo, route: Route | undefined) => boolean

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/**
 * The CSP of every response that is not an HTML document (JSON, modules, styles, errors, event
 * streams): nothing may load, and nothing may frame it. Security invariants, not configuration.
 */
export const RESOURCE_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

/** Headers set on every response before any guard or route runs (a route may tighten the CSP). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy': RESOURCE_CSP,
})

/** `'sha256-<base64>'` of a script's or style's text, as a CSP source. */
export function cspHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`
}

/** The text of every inline element `tag` (`script` without `src`, `style`) in `html`, in order. */
export function inlineBlocks(html: string, tag: 'script' | 'style'): string[] {
  const out: string[] = []
  const pattern = new RegExp(`<${tag}\\b([^>]*)>([\\s\\S]*?)</${tag}\\s*>`, 'gi')
  for (const match of html.matchAll(pattern)) {
    if (tag === 'script' && /(?:^|\s)src\s*=/i.test(match[1])) continue
    out.push(match[2])
  }
  return out
}

export interface DocumentPolicyOptions {
  /**
   * `hashes` (default): only the document's own inline `<style>` elements, by hash. `inline`:
   * any inline style (for pages whose scripts add `<style>` elements at run time).
   */
  styles?: 'hashes' | 'inline'
  /** `form-action` sources (default `'none'`). */
  formAction?: string
}

/**
 * The CSP of an HTML document as served: scripts from this origin plus each inline script it
 * really contains (the import map, data blocks) by its sha256, nothing else inline; styles per
 * `options.styles`; fetches, images and fonts from this origin (images also `data:` and `blob:`);
 * no plugins, no `<base>`, and no framing by anyone.
 */
export function documentPolicy(html: string, options: DocumentPolicyOptions = {}): string {
  const scripts = [...new Set(inlineBlocks(html, 'script').map(cspHash))]
  const styles =
    options.styles === 'inline' ? ["'unsafe-inline'"] : [...new Set(inlineBlocks(html, 'style').map(cspHash))]
  return [
    "default-src 'none'",
    `script-src ${["'self'", ...scripts].join(' ')}`,
    `style-src ${["'self'", ...styles].join(' ')}`,
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "manifest-src 'self'",
    "media-src 'self' data: blob:",
    "worker-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    `form-action ${options.formAction ?? "'none'"}`,
    "frame-ancestors 'none'",
  ].join('; ')
}

/** `127.0.0.0/8`, `::1` and their IPv4-mapped IPv6 forms. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false
  const a = address.toLowerCase().replace(/^::ffff:/, '')
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a)
}

/** Writes `{error: {code, message, field?}}` with the status (unless headers already went out). */
export function sendError(res: ServerResponse, status: number, code: string, message: string, field?: string): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  sendJson(res, status, { error: field === undefined ? { code, message } : { code, message, field } })
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  })
  res.end(text)
}

/** True for `application/json` and `application/<x>+json`, with any parameters. */
export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false
  const type = value.split(';')[0].trim().toLowerCase()
  return type === 'application/json' || /^application\/[\w.-]+\+json$/.test(type)
}

/**
 * Reads and parses a JSON request body. Rejects with HttpError 415 (not a JSON content type),
 * 413 (larger than maxBytes; the rest of the upload is not read) or 400 (malformed JSON).
 */
export function readJson(req: IncomingMessage, options: { maxBytes?: number } = {}): Promise<unknown> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BODY_BYTES
  if (!isJsonContentType(req.headers['content-type'])) {
    return Promise.reject(new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'the request body must be application/json'))
  }
  const tooLarge = () => new HttpError(413, 'PAYLOAD_TOO_LARGE', `the request body is larger than ${maxBytes} bytes`)
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(tooLarge())
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let done = false
    const finish = (error: HttpError | undefined, value?: unknown) => {
      if (done) return
      done = true
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      if (error) {
        // Stop reading; the response closes the connection so the client stops sending.
        req.pause()
        reject(error)
      } else resolve(value)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) return finish(tooLarge())
      chunks.push(chunk)
    }
    const onEnd = () => {
      const text = Buffer.concat(chunks).toString('utf8')
      if (text.trim() === '')
        return finish(new HttpError(400, 'INVALID_JSON', 'the request body is empty; expected JSON'))
      try {
        finish(undefined, JSON.parse(text))
      } catch (error) {
        finish(new HttpError(400, 'INVALID_JSON', `the request body is not valid JSON: ${(error as Error).message}`))
      }
    }
    const onError = (error: Error) =>
      finish(new HttpError(400, 'BAD_REQUEST', `reading the request body failed: ${error.message}`))
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
  })
}

interface GuardEntry {
  guard: Guard
}

export class WebServer extends Service {
  static Config: Schema<WebServerConfig> = Schema.object({
    host: Schema.string()
      .default('127.0.0.1')
      .description('Bind address; anything but loopback needs DSH_ACCESS_SECRET (@dsh/access-gate).'),
    port: Schema.natural().max(65535).default(3080).description('TCP port; 0 lets the OS pick a free one.'),
    maxBodyBytes: Schema.natural().min(1).default(DEFAULT_MAX_BODY_BYTES).description('Default body cap of readJson.'),
    waitForReady: Schema.boolean().default(false).description('Route nothing before app/ready.'),
    holdBeforeReady: Schema.boolean()
      .default(false)
      .description('Before app/ready, hold requests until it instead of answering 503.'),
    maxHeldRequests: Schema.natural()
      .min(1)
      .default(256)
      .description('Requests held at once before app/ready; past it, 503.'),
  })

  private readonly exact = new Map<string, Route>()
  private readonly prefixes = new Map<string, Route>()
  private readonly guards: GuardEntry[] = []
  private fallback?: Handler
  private server?: Server
  private readonly sockets = new Set<Socket>()
  private isReady: boolean
  private readonly readyPromise: Promise<void>
  private markReady!: () => void
  private earlyFilter?: EarlyFilter
  private held = 0
  private wake!: () => void
  private changed = new Promise<void>((resolve) => (this.wake = resolve))
  private boundPort = 0

  constructor(
    ctx: Context,
    readonly config: WebServerConfig,
  ) {
    super(ctx, 'webServer')
    this.isReady = !config.waitForReady
    this.readyPromise = new Promise<void>((resolve) => (this.markReady = resolve))
    if (this.isReady) this.markReady()
    else {
      ctx.on(
        'app/ready' as never,
        (() => {
          this.isReady = true
          this.markReady()
          this.poke()
        }) as never,
      )
    }
    // Stop accepting at the start of the graceful stop; open connections end at dispose.
    ctx.on('app/stopping', () => void this.server?.close())
  }

  /** False until `app/ready` when configured with waitForReady (always true otherwise). */
  get ready(): boolean {
    return this.isReady
  }

  /** Resolves at `app/ready` (at once without waitForReady). */
  whenReady(): Promise<void> {
    return this.readyPromise
  }

  /**
   * Lets requests the filter admits be served before `app/ready` (every guard has run first);
   * the rest keep waiting for it. Call it only once the guards are in place: until then nothing
   * is routed. A request the filter admits but no handler matches yet waits too. One filter;
   * undone by the returned disposer or when the calling plugin unloads.
   */
  serveBeforeReady(filter: EarlyFilter): () => void {
    if (typeof filter !== 'function') throw new TypeError('webServer.serveBeforeReady: expected a function')
    if (this.earlyFilter) throw new Error('webServer.serveBeforeReady: an early filter is already set')
    const dispose = this.ctx.effect(() => {
      this.earlyFilter = filter
      this.poke()
      return () => {
        if (this.earlyFilter === filter) this.earlyFilter = undefined
      }
    }, 'webserver-early')
    return () => void dispose()
  }

  /** The configured bind host. */
  get host(): string {
    return this.config.host
  }

  /** The listening port (the OS-assigned one when configured as 0). */
  get port(): number {
    return this.boundPort
  }

  /** `http://host:port` (IPv6 hosts in brackets; 0.0.0.0 and :: shown as given). */
  get url(): string {
    const host = this.config.host.includes(':') ? `[${this.config.host}]` : this.config.host
    return `http://${host}:${this.boundPort}`
  }

  /** The origin requests are resolved against (the URL with a loopback name for wildcard binds). */
  get origin(): string {
    return this.url
  }

  async [Service.init]() {
    const server = createServer((req, res) => void this.dispatch(req, res))
    server.on('connection', (socket) => {
      this.sockets.add(socket)
      socket.once('close', () => this.sockets.delete(socket))
    })
    // A malformed request line or header: answer 400 and drop the connection.
    server.on('clientError', (_error, socket) => {
      const headers = Object.entries(SECURITY_HEADERS)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')
      if (socket.writable)
        socket.end(`HTTP/1.1 400 Bad Request\r\nconnection: close\r\n${headers}content-length: 0\r\n\r\n`)
      else socket.destroy()
    })
    // A probe (`dsh config check`, `dsh plugin add` proving a profile: app-boot's bootInfo.probe)
    // mounts the tree only to see it come up: any free port, so a running `dsh web` is no conflict.
    // bootInfo is app-boot's root value, read by name (this package does not depend on app-boot).
    const probing = (this.ctx.get('bootInfo' as never) as { probe?: boolean } | undefined)?.probe === true
    const port = probing ? 0 : this.config.port
    await new Promise<void>((resolve, reject) => {
      const onError = (error: NodeJS.ErrnoException) => reject(describeListenError(error, this.config.host, port))
      server.once('error', onError)
      server.listen(port, this.config.host, () => {
        server.off('error', onError)
        resolve()
      })
    })
    this.server = server
    const address = server.address()
    this.boundPort = typeof address === 'object' && address ? address.port : this.config.port
    this.ctx.effect(() => () => void this.close(), 'webserver:listen')
  }

  /** Stops accepting and ends every open connection (keep-alive and streams included). */
  async close(): Promise<void> {
    const server = this.server
    if (!server) return
    this.server = undefined
    const closed = new Promise<void>((resolve) => server.close(() => resolve()))
    server.closeAllConnections()
    for (const socket of this.sockets) socket.destroy()
    await closed
  }

  /**
   * Adds a route. Exact paths match the pathname exactly; a prefix matches the path itself and
   * anything below it (`/api` matches `/api` and `/api/x`, not `/apix`). A duplicate path in the
   * same table throws. Undone by the returned disposer or when the calling plugin unloads.
   */
  register(route: Route): () => void {
    if (!route || typeof route.handle !== 'function')
      throw new TypeError('webServer.register: expected {path, match, handle}')
    if (typeof route.path !== 'string' || !route.path.startsWith('/')) {
      throw new TypeError(`webServer.register: path must start with "/": ${JSON.stringify(route.path)}`)
    }
    if (route.match !== 'exact' && route.match !== 'prefix')
      throw new TypeError(`webServer.register: match must be "exact" or "prefix"`)
    const path = route.match === 'prefix' && route.path.length > 1 ? route.path.replace(/\/+$/, '') : route.path
    const table = route.match === 'exact' ? this.exact : this.prefixes
    if (table.has(path)) throw new Error(`webServer.register: ${route.match} route ${path} is already registered`)
    const entry = { ...route, path }
    const dispose = this.ctx.effect(() => {
      table.set(path, entry)
      this.poke()
      return () => {
        if (table.get(path) === entry) table.delete(path)
      }
    }, `webserver-route:${path}`)
    return () => void dispose()
  }

  /** Sets the handler for requests no route matches (one owner; a second one throws). */
  registerFallback(handler: Handler): () => void {
    if (typeof handler !== 'function') throw new TypeError('webServer.registerFallback: expected a function')
    if (this.fallback) throw new Error('webServer.registerFallback: a fallback handler is already registered')
    const dispose = this.ctx.effect(() => {
      this.fallback = handler
      this.poke()
      return () => {
        if (this.fallback === handler) this.fallback = undefined
      }
    }, 'webserver-fallback')
    return () => void dispose()
  }

  /** Adds a guard; guards run in registration order before routing. */
  addGuard(guard: Guard): () => void {
    if (typeof guard !== 'function') throw new TypeError('webServer.addGuard: expected a function')
    const guards = this.guards
    const dispose = this.ctx.effect(() => {
      const entry = { guard }
      guards.push(entry)
      return () => {
        const index = guards.indexOf(entry)
        if (index >= 0) guards.splice(index, 1)
      }
    }, 'webserver-guard')
    return () => void dispose()
  }

  /** `readJson` with this server's configured default cap. */
  readJson(req: IncomingMessage, options: { maxBytes?: number } = {}): Promise<unknown> {
    return readJson(req, { maxBytes: options.maxBytes ?? this.config.maxBodyBytes })
  }

  /** The route a pathname resolves to: exact, then the longest prefix, then undefined. */
  resolve(pathname: string): Route | undefined {
    const exact = this.exact.get(pathname)
    if (exact) return exact
    let best: Route | undefined
    for (const [path, route] of this.prefixes) {
      const hit = path === '/' || pathname === path || pathname.startsWith(path + '/')
      if (hit && (!best || path.length > best.path.length)) best = route
    }
    return best
  }

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // First, so every answer (a 503 while starting, a guard's refusal, an error) carries them.
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value)
    try {
      // Before app/ready nothing is routed until the guards are in place (an early filter is set).
      while (!this.isReady && !this.earlyFilter) if (!(await this.hold(res))) return
      let url: URL
      try {
        url = new URL(req.url ?? '/', this.origin)
      } catch {
        sendError(res, 400, 'BAD_REQUEST', 'the request target is not a valid URL')
        return
      }
      const info: RequestInfo = { url, loopback: isLoopbackAddress(req.socket.remoteAddress) }
      for (const { guard } of [...this.guards]) {
        if (!(await guard(req, res, info))) {
          if (!res.writableEnded && !res.headersSent) sendError(res, 403, 'FORBIDDEN', 'the request was refused')
          return
        }
      }
      let route = this.resolve(url.pathname)
      // Before app/ready: served now if the early filter admits it and its handler exists;
      // otherwise it waits, re-checked whenever a route or the fallback is added, until ready.
      while (!this.isReady && !((route?.handle ?? this.fallback) && this.earlyFilter?.(req, info, route))) {
        if (!(await this.hold(res))) return
        route = this.resolve(url.pathname)
      }
      const handler = route?.handle ?? this.fallback
      if (!handler) {
        sendError(res, 404, 'NOT_FOUND', `no route for ${url.pathname}`)
        return
      }
      await handler(req, res, info)
    } catch (error) {
      if (error instanceof HttpError) {
        // A body error leaves the upload half-read: close the connection after answering.
        if (error.status === 413 || error.status === 415) res.setHeader('connection', 'close')
        sendError(res, error.status, error.code, error.message, error.field)
      } else {
        this.ctx
          .logger('webserver')
          .warn('request %s %s failed: %s', req.method, req.url, (error as Error)?.stack ?? error)
        sendError(res, 500, 'INTERNAL', 'the request failed on the server')
      }
    }
  }

  /**
   * Waits for the next change that may let a held request go on (`app/ready`, the early filter,
   * a route or the fallback added). False after answering 503 STARTING (holding is off or full)
   * or when the client went away meanwhile.
   */
  private async hold(res: ServerResponse): Promise<boolean> {
    if (!this.config.holdBeforeReady || this.held >= this.config.maxHeldRequests) {
      sendError(res, 503, 'STARTING', 'the server is starting; retry in a moment', undefined)
      return false
    }
    this.held++
    let onClose!: () => void
    const gone = new Promise<void>((resolve) => res.once('close', (onClose = resolve)))
    try {
      await Promise.race([this.changed, gone])
    } finally {
      this.held--
      res.off('close', onClose)
    }
    return !res.destroyed && !res.writableEnded
  }

  /** Wakes every held request to re-check (see hold). */
  private poke(): void {
    const wake = this.wake
    this.changed = new Promise<void>((resolve) => (this.wake = resolve))
    wake()
  }
}

function describeListenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`
  let message: string
  if (error.code === 'EADDRINUSE') message = `cannot listen on ${where}: the port is already in use`
  else if (error.code === 'EACCES') message = `cannot listen on ${where}: permission denied`
  else if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND')
    message = `cannot listen on ${where}: no such local address`
  else message = `cannot listen on ${where}: ${error.message}`
  return Object.assign(new Error(message), { code: error.code })
}

export default WebServer
