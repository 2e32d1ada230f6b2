// The web host's browser-facing fence, a guard on ctx.webServer: Host header allow-list (DNS
// rebinding), Origin + JSON content type on state-changing requests (CSRF), and on a non-loopback
// bind a shared secret (DSH_ACCESS_SECRET) exchanged for an HttpOnly SameSite=Strict cookie.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { documentPolicy, isJsonContentType, sendError, sendJson, type RequestInfo } from '@dsh/webserver'

export const name = 'access-gate'
export const inject = ['webServer']

export const SECRET_ENV = 'DSH_ACCESS_SECRET'
export const MIN_SECRET_LENGTH = 16
export const COOKIE_NAME = 'dsh_access'
export const LOGIN_PATH = '/auth/login'

export interface Config {
  /** Extra names (or name:port) the Host header may carry, e.g. a reverse proxy's public name. */
  trustedHosts: string[]
  /** Failed logins a client may make within `failureWindowMs` before it gets 429. */
  maxFailures: number
  failureWindowMs: number
  /** Lifetime of a login cookie; 0 keeps it for the life of the process. */
  sessionTtlMs: number
}

export const Config: Schema<Config> = Schema.object({
  trustedHosts: Schema.array(String).default([]).description('Host names besides loopback that may reach the server.'),
  maxFailures: Schema.natural().min(1).default(5).description('Failed logins per client per window before 429.'),
  failureWindowMs: Schema.natural().min(1).default(60_000),
  sessionTtlMs: Schema.natural().default(12 * 60 * 60 * 1000),
})

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** `localhost`, `*.localhost`, 127.0.0.0/8 and ::1. */
export function isLoopbackHostname(hostname: string): boolean {
  const h = hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
  if (h === 'localhost' || h.endsWith('.localhost')) return true
  if (h === '::1') return true
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h.replace(/^::ffff:/, ''))
}

/** Splits a Host header value into its lower-cased name and port (`[::1]:80` -> `::1`, `80`). */
export function splitHost(value: string): { hostname: string; port?: string } | undefined {
  const v = value.trim().toLowerCase()
  if (!v) return undefined
  const bracket = /^\[([0-9a-f:.]+)\](?::(\d+))?$/.exec(v)
  if (bracket) return { hostname: bracket[1], port: bracket[2] }
  const plain = /^([^:\s/@]+)(?::(\d+))?$/.exec(v)
  if (plain) return { hostname: plain[1].replace(/\.$/, ''), port: plain[2] }
  return undefined
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest()

/** Compares two secrets in time independent of where they differ (hashes have equal length). */
export function secretsMatch(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected))
}

function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>()
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0) out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim())
  }
  return out
}

/** The refusal a non-loopback bind gets without a usable secret; undefined when it may start. */
export function checkBind(host: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (isLoopbackHostname(host)) return undefined
  const secret = env[SECRET_ENV]
  if (!secret) {
    return `listening on ${host} (not loopback) needs ${SECRET_ENV} set to a secret of at least ${MIN_SECRET_LENGTH} characters; refusing to start`
  }
  if (secret.length < MIN_SECRET_LENGTH) {
    return `${SECRET_ENV} has ${secret.length} characters; a non-loopback bind (${host}) needs at least ${MIN_SECRET_LENGTH}; refusing to start`
  }
  return undefined
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const LOGIN_PAGE = (failed: string, next: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>dsh: sign in</title>
<style>body{font:16px system-ui,sans-serif;max-width:22rem;margin:15vh auto;padding:0 1rem}input,button{font:inherit;width:100%;box-sizing:border-box;margin:.4rem 0;padding:.5rem}p.e{color:#b00}</style>
</head><body><h1>dsh</h1>
<form method="post" action="${LOGIN_PATH}">
<label for="secret">Access secret (DSH_ACCESS_SECRET)</label>
<input id="secret" name="secret" type="password" autocomplete="current-password" autofocus required>
<input type="hidden" name="next" value="${escapeHtml(next)}">
<button type="submit">Sign in</button>
</form>${failed}
</body></html>
`

export function apply(ctx: Context, config: Config) {
  const server = ctx.webServer
  const refusal = checkBind(server.host)
  if (refusal) throw new Error(refusal)
  const requireLogin = !isLoopbackHostname(server.host)
  const secret = requireLogin ? process.env[SECRET_ENV]! : ''
  const trusted = config.trustedHosts.map((h) => h.trim().toLowerCase()).filter(Boolean)
  const wildcard = server.host === '0.0.0.0' || server.host === '::'

  /** Bound to one address: that address; bound to all: any address of this machine. */
  const localAddresses = (): Set<string> => {
    const out = new Set<string>()
    if (!wildcard) out.add(server.host.toLowerCase())
    else
      for (const list of Object.values(networkInterfaces()))
        for (const a of list ?? []) out.add(a.address.toLowerCase())
    return out
  }

  const hostAllowed = (value: string | undefined): boolean => {
    const parsed = value ? splitHost(value) : undefined
    if (!parsed) return false
    const { hostname, port } = parsed
    if (isLoopbackHostname(hostname)) return true
    for (const t of trusted) {
      if (t === hostname || (port !== undefined && t === `${hostname}:${port}`)) return true
    }
    // An address literal cannot be a rebinding name; accept this machine's own addresses.
    return isIP(hostname) !== 0 && requireLogin && localAddresses().has(hostname)
  }

  const originAllowed = (origin: string, hostHeader: string): boolean => {
    let url: URL
    try {
      url = new URL(origin)
    } catch {
      return false
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
    if (url.host.toLowerCase() === hostHeader.trim().toLowerCase()) return true
    const hostname = url.hostname.replace(/^\[|\]$/g, '').toLowerCase()
    return trusted.some((t) => t === hostname || t === url.host.toLowerCase())
  }

  // Login sessions (cookie token -> expiry) and failure counts per client address.
  const sessions = new Map<string, number>()
  const failures = new Map<string, number[]>()
  const clientKey = (req: IncomingMessage) => req.socket.remoteAddress ?? 'unknown'

  const recentFailures = (key: string, now: number): number[] => {
    const list = (failures.get(key) ?? []).filter((t) => now - t < config.failureWindowMs)
    if (list.length) failures.set(key, list)
    else failures.delete(key)
    return list
  }

  const hasSession = (req: IncomingMessage): boolean => {
    const token = parseCookies(req.headers.cookie).get(COOKIE_NAME)
    if (!token) return false
    const expires = sessions.get(token)
    if (expires === undefined) return false
    if (expires !== 0 && expires < Date.now()) {
      sessions.delete(token)
      return false
    }
    return true
  }

  const safeNext = (value: unknown): string =>
    typeof value === 'string' && value.startsWith('/') && !value.startsWith('//') && !value.startsWith('/\\')
      ? value
      : '/'

  async function readLoginBody(req: IncomingMessage): Promise<{ secret?: unknown; next?: unknown; form: boolean }> {
    const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase()
    const form = type === 'application/x-www-form-urlencoded'
    const text = await new Promise<string>((resolve, reject) => {
      let size = 0
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => {
        size += c.length
        if (size > 4096) {
          req.pause()
          reject(Object.assign(new Error('too large'), { status: 413 }))
        } else chunks.push(c)
      })
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
      req.on('error', reject)
    })
    if (form) {
      const params = new URLSearchParams(text)
      return { secret: params.get('secret') ?? undefined, next: params.get('next') ?? undefined, form }
    }
    try {
      const body = JSON.parse(text) as { secret?: unknown; next?: unknown }
      return { secret: body?.secret, next: body?.next, form }
    } catch {
      return { form }
    }
  }

  async function login(req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
    if (req.method === 'GET' || req.method === 'HEAD') {
      const page = LOGIN_PAGE(
        info.url.searchParams.has('failed') ? '<p class="e">Wrong secret.</p>' : '',
        safeNext(info.url.searchParams.get('next')),
      )
      // The page's own CSP (its one inline style by hash, its form posting here); the webserver
      // already set the other security headers. Its referrer policy is `same-origin`, not
      // `no-referrer`: under no-referrer a browser sends `Origin: null` with the form's POST,
      // which the origin check above refuses; cross-origin requests still carry no referrer.
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy': documentPolicy(page, { formAction: "'self'" }),
        'referrer-policy': 'same-origin',
      })
      res.end(page)
      return
    }
    if (req.method !== 'POST') return sendError(res, 405, 'METHOD_NOT_ALLOWED', `${LOGIN_PATH} takes GET or POST`)
    const key = clientKey(req)
    const now = Date.now()
    const recent = recentFailures(key, now)
    if (recent.length >= config.maxFailures) {
      const retry = Math.max(1, Math.ceil((recent[0] + config.failureWindowMs - now) / 1000))
      req.resume()
      return sendJson(
        res,
        429,
        { error: { code: 'TOO_MANY_ATTEMPTS', message: `too many failed logins; retry in ${retry} s` } },
        { 'retry-after': String(retry) },
      )
    }
    let body: Awaited<ReturnType<typeof readLoginBody>>
    try {
      body = await readLoginBody(req)
    } catch {
      res.setHeader('connection', 'close')
      return sendError(res, 413, 'PAYLOAD_TOO_LARGE', 'the login body is too large')
    }
    if (typeof body.secret !== 'string' || !secretsMatch(body.secret, secret)) {
      failures.set(key, [...recent, now])
      if (body.form) {
        res.writeHead(303, { location: `${LOGIN_PATH}?failed=1`, 'cache-control': 'no-store' }).end()
        return
      }
      return sendError(res, 401, 'BAD_SECRET', 'the access secret is wrong', 'secret')
    }
    failures.delete(key)
    const token = randomBytes(32).toString('base64url')
    sessions.set(token, config.sessionTtlMs ? now + config.sessionTtlMs : 0)
    const maxAge = config.sessionTtlMs ? `; Max-Age=${Math.floor(config.sessionTtlMs / 1000)}` : ''
    res.setHeader('set-cookie', `${COOKIE_NAME}=${token}; Path=/; HttpOnly; SameSite=Strict${maxAge}`)
    if (body.form) {
      res.writeHead(303, { location: safeNext(body.next), 'cache-control': 'no-store' }).end()
      return
    }
    sendJson(res, 200, { result: { ok: true } })
  }

  server.addGuard(async (req, res, info) => {
    const hostHeader = req.headers.host
    if (!hostAllowed(hostHeader)) {
      sendError(
        res,
        421,
        'BAD_HOST',
        `the Host header ${JSON.stringify(hostHeader ?? '')} is not loopback or a trusted host (add it with --trusted-host)`,
      )
      return false
    }
    const method = req.method ?? 'GET'
    const isLogin = requireLogin && info.url.pathname === LOGIN_PATH
    if (!SAFE_METHODS.has(method)) {
      const origin = req.headers.origin
      // Browsers send Origin (or at least Sec-Fetch-Site) on every cross-site write; a request
      // with neither is not from a browser page, so there is no ambient authority to forge.
      const fromBrowser = origin !== undefined || req.headers['sec-fetch-site'] !== undefined
      if (fromBrowser && (origin === undefined || !originAllowed(origin, hostHeader!))) {
        sendError(
          res,
          403,
          'BAD_ORIGIN',
          `cross-origin ${method} refused (Origin ${JSON.stringify(origin ?? '')} is not this server)`,
        )
        return false
      }
      const type = req.headers['content-type']
      const formLogin =
        isLogin && (type ?? '').split(';')[0].trim().toLowerCase() === 'application/x-www-form-urlencoded'
      if (!formLogin && !isJsonContentType(type)) {
        res.setHeader('connection', 'close')
        sendError(
          res,
          415,
          'UNSUPPORTED_MEDIA_TYPE',
          `a ${method} request needs Content-Type: application/json (got ${JSON.stringify(type ?? '')})`,
        )
        return false
      }
    }
    if (!requireLogin) return true
    if (isLogin) {
      await login(req, res, info)
      return false
    }
    if (hasSession(req)) return true
    const accept = req.headers.accept ?? ''
    if ((method === 'GET' || method === 'HEAD') && accept.includes('text/html')) {
      res
        .writeHead(303, {
          location: `${LOGIN_PATH}?next=${encodeURIComponent(info.url.pathname + info.url.search)}`,
          'cache-control': 'no-store',
        })
        .end()
      return false
    }
    sendError(
      res,
      401,
      'UNAUTHENTICATED',
      `sign in first: POST ${LOGIN_PATH} with {"secret": ...} (the value of ${SECRET_ENV})`,
    )
    return false
  })
}
