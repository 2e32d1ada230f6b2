import { request, type IncomingHttpHeaders } from 'node:http'
import { connect } from 'node:net'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import WebServer, { type WebServerConfig } from '@dsh/webserver'
import * as gate from '../src/index.ts'

const fibers: { dispose(): unknown }[] = []
let savedSecret: string | undefined
beforeEach(() => {
  savedSecret = process.env.DSH_ACCESS_SECRET
  delete process.env.DSH_ACCESS_SECRET
})
afterEach(async () => {
  for (const f of fibers.splice(0).reverse()) await f.dispose()
  if (savedSecret === undefined) delete process.env.DSH_ACCESS_SECRET
  else process.env.DSH_ACCESS_SECRET = savedSecret
})

async function boot(host = '127.0.0.1', config: Partial<gate.Config> = {}) {
  const ctx = new Context()
  const server = ctx.plugin(WebServer, { host, port: 0 } as WebServerConfig)
  fibers.push(server)
  await server
  const fiber = ctx.plugin(gate, config as gate.Config)
  fibers.push(fiber)
  await fiber
  // A JSON echo route and a page, standing in for the API and the static client.
  ctx.webServer.register({
    path: '/api/echo',
    match: 'exact',
    handle: async (req, res) => {
      const body = req.method === 'POST' ? await ctx.webServer.readJson(req, { maxBytes: 1024 * 1024 }) : null
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ result: body }))
    },
  })
  ctx.webServer.registerFallback((_req, res) => res.end('page'))
  return { ctx, port: ctx.webServer.port }
}

interface Reply {
  status: number
  headers: IncomingHttpHeaders
  text: string
  json(): { error?: { code: string; message: string; field?: string }; result?: unknown }
}

function send(
  port: number,
  opts: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers = { host: `127.0.0.1:${port}`, ...opts.headers }
    const req = request(
      { host: '127.0.0.1', port, method: opts.method ?? 'GET', path: opts.path ?? '/', headers },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c) => (text += c))
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, text, json: () => JSON.parse(text) }),
        )
      },
    )
    req.on('error', reject)
    req.end(opts.body)
  })
}

const postJson = (port: number, body: unknown, headers: Record<string, string> = {}) =>
  send(port, {
    method: 'POST',
    path: '/api/echo',
    headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${port}`, ...headers },
    body: JSON.stringify(body),
  })

describe('@dsh/access-gate on a loopback bind', () => {
  it('lets loopback Host names through and refuses any other Host with 421 BAD_HOST', async () => {
    const { port } = await boot()
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'app.localhost']) {
      expect((await send(port, { headers: { host } })).status, host).toBe(200)
    }
    for (const host of [`evil.example:${port}`, 'attacker.com', '192.168.1.10', `127.0.0.1.evil.example:${port}`]) {
      const r = await send(port, { headers: { host } })
      expect(r.status, host).toBe(421)
      expect(r.json().error?.code).toBe('BAD_HOST')
    }
    // An HTTP/1.0 request without any Host header is refused too.
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end('GET / HTTP/1.0\r\n\r\n'))
      let text = ''
      socket.on('data', (c) => (text += c))
      socket.on('end', () => resolve(text))
      socket.on('error', reject)
    })
    expect(raw).toMatch(/^HTTP\/1\.[01] 421 /)
    expect(raw).toContain('"BAD_HOST"')
  })

  it('accepts a configured trusted host, by name or name:port', async () => {
    const { port } = await boot('127.0.0.1', { trustedHosts: ['dsh.internal', 'proxy.lan:8443'] })
    expect((await send(port, { headers: { host: 'dsh.internal:9' } })).status).toBe(200)
    expect((await send(port, { headers: { host: 'proxy.lan:8443' } })).status).toBe(200)
    expect((await send(port, { headers: { host: 'proxy.lan:80' } })).status).toBe(421)
  })

  it('refuses a cross-origin POST (403 BAD_ORIGIN) and accepts a same-origin one', async () => {
    const { port } = await boot()
    expect((await postJson(port, { a: 1 })).json()).toEqual({ result: { a: 1 } })
    for (const origin of ['http://evil.example', `http://localhost:${port + 1}`, 'null']) {
      const r = await postJson(port, { a: 1 }, { origin })
      expect(r.status, origin).toBe(403)
      expect(r.json().error?.code).toBe('BAD_ORIGIN')
    }
    // A browser request without Origin but with fetch metadata is refused as well.
    const meta = await send(port, {
      method: 'POST',
      path: '/api/echo',
      headers: { 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' },
      body: '{}',
    })
    expect(meta.status).toBe(403)
    // A non-browser client (no Origin, no Sec-Fetch-*) may write.
    const cli = await send(port, {
      method: 'POST',
      path: '/api/echo',
      headers: { 'content-type': 'application/json' },
      body: '{"b":2}',
    })
    expect(cli.json()).toEqual({ result: { b: 2 } })
  })

  it('refuses a state-changing request without a JSON body type (415), even same-origin', async () => {
    const { port } = await boot()
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const r = await postJson(port, { a: 1 }, { 'content-type': type })
      expect(r.status, type).toBe(415)
      expect(r.json().error?.code).toBe('UNSUPPORTED_MEDIA_TYPE')
    }
    const del = await send(port, {
      method: 'DELETE',
      path: '/api/echo',
      headers: { origin: `http://127.0.0.1:${port}` },
    })
    expect(del.status).toBe(415)
  })

  it('a 10 MB body gets 413 PAYLOAD_TOO_LARGE as JSON', async () => {
    const { port } = await boot()
    const big = Buffer.alloc(10 * 1024 * 1024, 0x20)
    const r = await send(port, {
      method: 'POST',
      path: '/api/echo',
      headers: {
        'content-type': 'application/json',
        origin: `http://127.0.0.1:${port}`,
        'content-length': String(big.length),
      },
      body: big,
    })
    expect(r.status).toBe(413)
    expect(r.json().error?.code).toBe('PAYLOAD_TOO_LARGE')
  })

  it('needs no login on loopback: /auth/login is an ordinary path there', async () => {
    const { port } = await boot()
    expect((await send(port, { path: '/api/echo' })).status).toBe(200)
    expect((await send(port, { path: gate.LOGIN_PATH })).text).toBe('page')
  })
})

describe('@dsh/access-gate on a non-loopback bind', () => {
  it('refuses to start without DSH_ACCESS_SECRET or with a short one, naming the variable', async () => {
    const ctx = new Context()
    const server = ctx.plugin(WebServer, { host: '0.0.0.0', port: 0 } as WebServerConfig)
    fibers.push(server)
    await server
    await expect(ctx.plugin(gate, {} as gate.Config)).rejects.toThrow(
      /needs DSH_ACCESS_SECRET set to a secret of at least 16 characters; refusing to start/,
    )
    process.env.DSH_ACCESS_SECRET = 'short-secret'
    await expect(ctx.plugin(gate, {} as gate.Config)).rejects.toThrow(
      'DSH_ACCESS_SECRET has 12 characters; a non-loopback bind (0.0.0.0) needs at least 16',
    )
    expect(gate.checkBind('127.0.0.1', {})).toBeUndefined()
    expect(gate.checkBind('::1', {})).toBeUndefined()
  })

  it('with a good secret: login form, cookie HttpOnly SameSite=Strict, then requests pass', async () => {
    process.env.DSH_ACCESS_SECRET = 'correct horse battery staple'
    const { port } = await boot('0.0.0.0')
    const unauth = await send(port, { path: '/api/echo' })
    expect(unauth.status).toBe(401)
    expect(unauth.json().error?.code).toBe('UNAUTHENTICATED')
    // A browser navigation is sent to the login form, which posts back to /auth/login.
    const nav = await send(port, { path: '/w/1?x=2', headers: { accept: 'text/html' } })
    expect(nav.status).toBe(303)
    expect(nav.headers.location).toBe('/auth/login?next=%2Fw%2F1%3Fx%3D2')
    const form = await send(port, { path: '/auth/login?next=%2Fw%2F1' })
    expect(form.headers['content-type']).toMatch(/^text\/html/)
    expect(form.text).toContain('<form method="post" action="/auth/login">')
    expect(form.text).toContain('name="next" value="/w/1"')

    const ok = await send(port, {
      method: 'POST',
      path: '/auth/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: `http://127.0.0.1:${port}` },
      body: 'secret=correct+horse+battery+staple&next=%2Fw%2F1',
    })
    expect(ok.status).toBe(303)
    expect(ok.headers.location).toBe('/w/1')
    const cookie = String(ok.headers['set-cookie'])
    expect(cookie).toMatch(/^dsh_access=[\w-]{40,}; Path=\/; HttpOnly; SameSite=Strict/)
    const token = cookie.split(';')[0]
    expect((await send(port, { path: '/api/echo', headers: { cookie: token } })).status).toBe(200)
    expect((await postJson(port, { c: 3 }, { cookie: token })).json()).toEqual({ result: { c: 3 } })
    // A made-up cookie is not a session.
    expect((await send(port, { path: '/api/echo', headers: { cookie: 'dsh_access=forged' } })).status).toBe(401)
    // JSON login works too, and the login POST is still bound by the Origin rule.
    const jsonLogin = await send(port, {
      method: 'POST',
      path: '/auth/login',
      headers: { 'content-type': 'application/json' },
      body: '{"secret":"correct horse battery staple"}',
    })
    expect(jsonLogin.json()).toEqual({ result: { ok: true } })
    const crossLogin = await send(port, {
      method: 'POST',
      path: '/auth/login',
      headers: { 'content-type': 'application/json', origin: 'http://evil.example' },
      body: '{"secret":"correct horse battery staple"}',
    })
    expect(crossLogin.status).toBe(403)
  })

  it('rate-limits wrong secrets per client: 429 after maxFailures within the window, even for the right one', async () => {
    process.env.DSH_ACCESS_SECRET = 'another-long-secret-value'
    const { port } = await boot('0.0.0.0', { maxFailures: 3 })
    const attempt = (secret: string) =>
      send(port, {
        method: 'POST',
        path: '/auth/login',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ secret }),
      })
    for (let i = 0; i < 3; i++) {
      const r = await attempt(`wrong-${i}`)
      expect(r.status).toBe(401)
      expect(r.json().error).toMatchObject({ code: 'BAD_SECRET', field: 'secret' })
    }
    const limited = await attempt('another-long-secret-value')
    expect(limited.status).toBe(429)
    expect(limited.json().error?.code).toBe('TOO_MANY_ATTEMPTS')
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
    expect(limited.headers['set-cookie']).toBeUndefined()
  })

  it('compares secrets through equal-length hashes (timingSafeEqual never throws on length)', () => {
    expect(gate.secretsMatch('a', 'a-much-longer-secret')).toBe(false)
    expect(gate.secretsMatch('same-secret-value!', 'same-secret-value!')).toBe(true)
  })
})
