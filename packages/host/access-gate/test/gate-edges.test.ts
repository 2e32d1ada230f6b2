// Edges of the access gate that mutation testing (`pnpm mutation access-gate`) showed no other test
// pinned: a refused request never reaches the route behind the gate, the login redirect cannot be
// pointed off-site, login sessions and failure counts expire, Host/Origin/Cookie parsing corner
// cases, and the login endpoint's own refusals.
import { request, type IncomingHttpHeaders } from 'node:http'
import { networkInterfaces } from 'node:os'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import WebServer, { type WebServerConfig } from '@dsh/webserver'
import * as gate from '../src/index.ts'

const SECRET = 'a-long-enough-access-secret'
const fibers: { dispose(): unknown }[] = []
let savedSecret: string | undefined
beforeEach(() => {
  savedSecret = process.env.DSH_ACCESS_SECRET
  delete process.env.DSH_ACCESS_SECRET
})
afterEach(async () => {
  vi.useRealTimers()
  for (const f of fibers.splice(0).reverse()) await f.dispose()
  if (savedSecret === undefined) delete process.env.DSH_ACCESS_SECRET
  else process.env.DSH_ACCESS_SECRET = savedSecret
})

async function boot(host = '127.0.0.1', config: Partial<gate.Config> = {}) {
  if (host !== '127.0.0.1') process.env.DSH_ACCESS_SECRET = SECRET
  const ctx = new Context()
  const server = ctx.plugin(WebServer, { host, port: 0 } as WebServerConfig)
  fibers.push(server)
  await server
  const fiber = ctx.plugin(gate, config as gate.Config)
  fibers.push(fiber)
  await fiber
  // A route that counts the requests that reached it: a refused request must never run it.
  const reached: string[] = []
  ctx.webServer.register({
    path: '/api/act',
    match: 'exact',
    handle: async (req, res) => {
      reached.push(req.method!)
      res.setHeader('content-type', 'application/json')
      res.end('{"ok":true}')
    },
  })
  return { port: ctx.webServer.port, reached }
}

interface Reply {
  status: number
  headers: IncomingHttpHeaders
  text: string
}

function send(
  port: number,
  opts: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers = { host: `127.0.0.1:${port}`, ...opts.headers }
    const req = request(
      { host: '127.0.0.1', port, method: opts.method ?? 'GET', path: opts.path ?? '/', headers },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c) => (text += c))
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }))
      },
    )
    req.on('error', reject)
    req.end(opts.body)
  })
}

const formLogin = (port: number, body: string, type = 'application/x-www-form-urlencoded') =>
  send(port, {
    method: 'POST',
    path: gate.LOGIN_PATH,
    headers: { 'content-type': type, origin: `http://127.0.0.1:${port}` },
    body,
  })
const jsonLogin = (port: number, secret: unknown) =>
  send(port, {
    method: 'POST',
    path: gate.LOGIN_PATH,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ secret }),
  })
const tokenOf = (reply: Reply) => String(reply.headers['set-cookie']).split(';')[0]!

describe('a refused request never reaches the route', () => {
  it('on loopback: bad Host, bad Origin and a non-JSON write are answered by the gate alone', async () => {
    const { port, reached } = await boot()
    const json = { 'content-type': 'application/json' }
    expect((await send(port, { path: '/api/act', headers: { host: 'evil.example' } })).status).toBe(421)
    expect(
      (
        await send(port, {
          method: 'POST',
          path: '/api/act',
          headers: { ...json, origin: 'http://evil.example' },
          body: '{}',
        })
      ).status,
    ).toBe(403)
    expect(
      (await send(port, { method: 'POST', path: '/api/act', headers: { 'content-type': 'text/plain' }, body: '{}' }))
        .status,
    ).toBe(415)
    expect(reached).toEqual([])
    // Positive control: the same route is reached by an allowed write, and by the safe methods
    // without any body type.
    expect(
      (
        await send(port, {
          method: 'POST',
          path: '/api/act',
          headers: { ...json, origin: `http://127.0.0.1:${port}` },
          body: '{}',
        })
      ).status,
    ).toBe(200)
    for (const method of ['GET', 'HEAD', 'OPTIONS'])
      expect(
        (await send(port, { method, path: '/api/act', headers: { origin: 'http://evil.example' } })).status,
        method,
      ).toBe(200)
    expect(reached).toEqual(['POST', 'GET', 'HEAD', 'OPTIONS'])
  })

  it('on a non-loopback bind: without a session neither an API call nor a page navigation runs the route', async () => {
    const { port, reached } = await boot('0.0.0.0')
    expect((await send(port, { path: '/api/act' })).status).toBe(401)
    const nav = await send(port, { method: 'HEAD', path: '/api/act?x=1', headers: { accept: 'text/html' } })
    expect(nav.status).toBe(303)
    expect(nav.headers.location).toBe('/auth/login?next=%2Fapi%2Fact%3Fx%3D1')
    expect(nav.headers['cache-control']).toBe('no-store')
    // A POST that asks for HTML is not redirected: it gets the 401.
    expect(
      (
        await send(port, {
          method: 'POST',
          path: '/api/act',
          headers: { accept: 'text/html', 'content-type': 'application/json' },
          body: '{}',
        })
      ).status,
    ).toBe(401)
    expect(reached).toEqual([])
    const token = tokenOf(await jsonLogin(port, SECRET))
    expect((await send(port, { path: '/api/act', headers: { cookie: token } })).status).toBe(200)
    expect(reached).toEqual(['GET'])
  })
})

describe('the login endpoint', () => {
  it('sends a successful form login only to a path on this server', async () => {
    const { port } = await boot('0.0.0.0')
    const cases: Array<[string | undefined, string]> = [
      ['/w/1?x=2', '/w/1?x=2'],
      ['//evil.example/x', '/'],
      ['/\\evil.example', '/'],
      ['https://evil.example/', '/'],
      ['w/1', '/'],
      [undefined, '/'],
    ]
    for (const [next, location] of cases) {
      const body = `secret=${encodeURIComponent(SECRET)}${next === undefined ? '' : `&next=${encodeURIComponent(next)}`}`
      const reply = await formLogin(port, body, 'Application/X-WWW-Form-Urlencoded; charset=utf-8')
      expect(reply.status, String(next)).toBe(303)
      expect(reply.headers.location, String(next)).toBe(location)
      expect(reply.headers['cache-control']).toBe('no-store')
    }
    // The form itself carries only a safe next, escaped.
    const page = await send(port, { path: '/auth/login?next=%2F%2Fevil.example' })
    expect(page.text).toContain('name="next" value="/"')
    const quoted = await send(port, { path: `/auth/login?next=${encodeURIComponent('/a"><script>')}` })
    expect(quoted.text).toContain('value="/a&#34;&#62;&#60;script&#62;"')
  })

  it('a wrong form login goes back to the form, which then says so; HEAD gets the form headers', async () => {
    const { port } = await boot('0.0.0.0')
    const wrong = await formLogin(port, 'secret=nope')
    expect(wrong.status).toBe(303)
    expect(wrong.headers.location).toBe('/auth/login?failed=1')
    expect(wrong.headers['set-cookie']).toBeUndefined()
    expect((await send(port, { path: wrong.headers.location! })).text).toContain('Wrong secret.')
    expect((await send(port, { path: gate.LOGIN_PATH })).text).not.toContain('Wrong secret.')
    const head = await send(port, { method: 'HEAD', path: gate.LOGIN_PATH })
    expect(head.status).toBe(200)
    expect(head.headers['content-type']).toMatch(/^text\/html/)
    expect(head.headers['cache-control']).toBe('no-store')
    expect(head.headers['referrer-policy']).toBe('same-origin')
    expect(head.headers['content-security-policy']).toContain("form-action 'self'")
  })

  it('refuses other methods, a secret that is not a string, and a body over 4 KiB', async () => {
    const { port } = await boot('0.0.0.0')
    const put = await send(port, {
      method: 'PUT',
      path: gate.LOGIN_PATH,
      headers: { 'content-type': 'application/json' },
      body: '{}',
    })
    expect(put.status).toBe(405)
    expect(JSON.parse(put.text).error.code).toBe('METHOD_NOT_ALLOWED')
    const notString = await jsonLogin(port, 12345)
    expect(notString.status).toBe(401)
    expect(JSON.parse(notString.text).error).toEqual({
      code: 'BAD_SECRET',
      message: 'the access secret is wrong',
      field: 'secret',
    })
    const big = await send(port, {
      method: 'POST',
      path: gate.LOGIN_PATH,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ secret: 'x'.repeat(5000) }),
    })
    expect(big.status).toBe(413)
    expect(JSON.parse(big.text).error.code).toBe('PAYLOAD_TOO_LARGE')
    // Just under the limit is read (and is a wrong secret).
    expect((await jsonLogin(port, 'y'.repeat(4000))).status).toBe(401)
  })

  it('a login session lasts sessionTtlMs (Max-Age says so); 0 keeps it for the process', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const start = Date.now()
    const short = await boot('0.0.0.0', { sessionTtlMs: 90_000 })
    const login = await jsonLogin(short.port, SECRET)
    expect(String(login.headers['set-cookie'])).toContain('; Max-Age=90')
    const token = tokenOf(login)
    // Cookies with spaces around the separator and other cookies beside it are read.
    expect((await send(short.port, { path: '/api/act', headers: { cookie: `a=1;  ${token} ; =x; b` } })).status).toBe(
      200,
    )
    vi.setSystemTime(start + 89_000)
    expect((await send(short.port, { path: '/api/act', headers: { cookie: token } })).status).toBe(200)
    vi.setSystemTime(start + 91_000)
    expect((await send(short.port, { path: '/api/act', headers: { cookie: token } })).status).toBe(401)

    const forever = await boot('0.0.0.0', { sessionTtlMs: 0 })
    const kept = await jsonLogin(forever.port, SECRET)
    expect(String(kept.headers['set-cookie'])).not.toContain('Max-Age')
    vi.setSystemTime(start + 10 * 365 * 24 * 3600_000)
    expect((await send(forever.port, { path: '/api/act', headers: { cookie: tokenOf(kept) } })).status).toBe(200)
  })

  it('failed logins count within failureWindowMs only; Retry-After is the time left in the window', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const start = Date.now()
    const { port } = await boot('0.0.0.0', { maxFailures: 2, failureWindowMs: 60_000 })
    await jsonLogin(port, 'wrong-1')
    vi.setSystemTime(start + 20_000)
    await jsonLogin(port, 'wrong-2')
    vi.setSystemTime(start + 30_000)
    const limited = await jsonLogin(port, SECRET)
    expect(limited.status).toBe(429)
    expect(limited.headers['retry-after']).toBe('30')
    expect(JSON.parse(limited.text).error.message).toBe('too many failed logins; retry in 30 s')
    // The first failure leaves the window at 60 s: one failure is left, below the limit.
    vi.setSystemTime(start + 60_000)
    expect((await jsonLogin(port, SECRET)).status).toBe(200)
  })
})

describe('Host and Origin', () => {
  it('trusted hosts are trimmed and lower-cased; Origin may name a trusted host, but only over http(s)', async () => {
    const { port, reached } = await boot('127.0.0.1', { trustedHosts: [' DSH.Internal ', '', 'proxy.lan:8443'] })
    expect((await send(port, { path: '/api/act', headers: { host: 'dsh.internal' } })).status).toBe(200)
    const post = (origin: string) =>
      send(port, {
        method: 'POST',
        path: '/api/act',
        headers: { 'content-type': 'application/json', origin },
        body: '{}',
      })
    expect((await post('http://dsh.internal')).status).toBe(200)
    expect((await post('https://proxy.lan:8443')).status).toBe(200)
    expect((await post('https://proxy.lan:9999')).status).toBe(403)
    expect((await post('http://other.internal')).status).toBe(403)
    expect((await post(`ftp://127.0.0.1:${port}`)).status).toBe(403)
    expect((await post('not a url')).status).toBe(403)
    expect(reached).toEqual(['GET', 'POST', 'POST'])
  })

  it("bound to all addresses, a Host naming one of this machine's addresses is accepted and a foreign one is not", async () => {
    const { port } = await boot('0.0.0.0')
    const own = Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .find((a) => a.family === 'IPv4' && !a.internal)
    if (own)
      expect((await send(port, { path: '/auth/login', headers: { host: `${own.address}:${port}` } })).status).toBe(200)
    expect((await send(port, { path: '/auth/login', headers: { host: `203.0.113.9:${port}` } })).status).toBe(421)
  })

  it('isLoopbackHostname and splitHost read only whole, well-formed names', () => {
    for (const name of [
      'localhost',
      'LOCALHOST.',
      'a.localhost',
      '[::1]',
      '::1',
      '127.0.0.1',
      '127.255.0.12',
      '::ffff:127.0.0.1',
      '127.0.0.1.',
    ]) {
      expect(gate.isLoopbackHostname(name), name).toBe(true)
    }
    for (const name of [
      '1127.0.0.1',
      'x127.0.0.1',
      '127.0.0.1000',
      '127.0.0',
      '127.0.0.1.evil',
      'localhost.evil',
      'fe80::ffff:127.0.0.1',
      '[::1]x',
    ]) {
      expect(gate.isLoopbackHostname(name), name).toBe(false)
    }
    expect(gate.splitHost(' Example.COM:80 ')).toEqual({ hostname: 'example.com', port: '80' })
    expect(gate.splitHost('example.com.')).toEqual({ hostname: 'example.com', port: undefined })
    expect(gate.splitHost('[::1]')).toEqual({ hostname: '::1', port: undefined })
    expect(gate.splitHost('[::1]:8080')).toEqual({ hostname: '::1', port: '8080' })
    for (const bad of ['', '   ', '[::1]x', '[::1]:80x', 'x[::1]', 'a:b:c', 'host:80x', 'user@host', 'a/b']) {
      expect(gate.splitHost(bad), bad).toBeUndefined()
    }
  })

  it('a secret of exactly the minimum length is accepted', () => {
    expect(gate.checkBind('0.0.0.0', { DSH_ACCESS_SECRET: 'x'.repeat(gate.MIN_SECRET_LENGTH) })).toBeUndefined()
    expect(gate.checkBind('0.0.0.0', { DSH_ACCESS_SECRET: 'x'.repeat(gate.MIN_SECRET_LENGTH - 1) })).toMatch(
      /needs at least 16/,
    )
  })
})
