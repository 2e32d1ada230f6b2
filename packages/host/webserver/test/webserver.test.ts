import { request as httpRequest } from 'node:http'
import { createServer } from 'node:net'
import { Context } from 'cordis'
import { afterEach, describe, expect, it, vi } from 'vitest'
import WebServer, { HttpError, isLoopbackAddress, type WebServerConfig } from '../src/index.ts'

const fibers: { dispose(): unknown }[] = []
afterEach(async () => {
  for (const f of fibers.splice(0)) await f.dispose()
})

async function start(config: Partial<WebServerConfig> = {}) {
  const ctx = new Context()
  const fiber = ctx.plugin(WebServer, { host: '127.0.0.1', port: 0, ...config } as WebServerConfig)
  fibers.push(fiber)
  await fiber
  return { ctx, fiber, server: ctx.webServer, base: ctx.webServer.url }
}

/** Requests the server holds right now (before app/ready): what the hold tests wait on instead of time. */
const holding = (ctx: Context) => (ctx.webServer as unknown as { held: number }).held

async function json(res: Response) {
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    body: (await res.json()) as { error: { code: string } } & Record<string, unknown>,
  }
}

describe('@dsh/webserver', () => {
  it('listens on port 0, reports the chosen port and url, and answers 404 JSON without a fallback', async () => {
    const { server, base } = await start()
    expect(server.port).toBeGreaterThan(0)
    expect(base).toBe(`http://127.0.0.1:${server.port}`)
    const r = await json(await fetch(`${base}/nothing`))
    expect(r.status).toBe(404)
    expect(r.type).toMatch(/^application\/json/)
    expect(r.body).toEqual({ error: { code: 'NOT_FOUND', message: 'no route for /nothing' } })
  })

  it('matches exact first, then the longest prefix, then the fallback', async () => {
    const { ctx, base } = await start()
    const reply = (name: string) => (_req: unknown, res: import('node:http').ServerResponse) => res.end(name)
    ctx.webServer.register({ path: '/api', match: 'prefix', handle: reply('api-prefix') })
    ctx.webServer.register({ path: '/api/events', match: 'prefix', handle: reply('events-prefix') })
    ctx.webServer.register({ path: '/api/events/host', match: 'exact', handle: reply('host-exact') })
    ctx.webServer.registerFallback(reply('fallback'))
    const text = async (p: string) => (await fetch(base + p)).text()
    expect(await text('/api/events/host')).toBe('host-exact')
    expect(await text('/api/events/session/1')).toBe('events-prefix')
    expect(await text('/api/events')).toBe('events-prefix')
    expect(await text('/api/x')).toBe('api-prefix')
    expect(await text('/apix')).toBe('fallback')
    expect(await text('/')).toBe('fallback')
  })

  it('throws on a duplicate path or a second fallback; disposers and plugin unload remove registrations', async () => {
    const { ctx, base } = await start()
    const off = ctx.webServer.register({ path: '/a', match: 'exact', handle: (_q, res) => res.end('a') })
    expect(() => ctx.webServer.register({ path: '/a', match: 'exact', handle: () => {} })).toThrow(/already registered/)
    // The same path in the other table is a different route.
    ctx.webServer.register({ path: '/a', match: 'prefix', handle: (_q, res) => res.end('a-prefix') })
    ctx.webServer.registerFallback((_q, res) => res.writeHead(299).end('fallback'))
    expect(() => ctx.webServer.registerFallback(() => {})).toThrow(/already registered/)
    off()
    expect(await (await fetch(`${base}/a`)).text()).toBe('a-prefix')

    const child = ctx.plugin({
      name: 'child',
      inject: ['webServer'],
      apply(c: Context) {
        c.webServer.register({ path: '/child', match: 'exact', handle: (_q, res) => res.end('child') })
        c.webServer.addGuard((_q, res) => {
          res.statusCode = 418
          res.end('guarded')
          return false
        })
      },
    })
    await child
    expect((await fetch(`${base}/child`)).status).toBe(418)
    await child.dispose()
    expect((await fetch(`${base}/child`)).status).toBe(299)
  })

  it('runs guards in order before routing and gives them the URL and loopback flag', async () => {
    const { ctx, base } = await start()
    const seen: string[] = []
    ctx.webServer.addGuard((_req, _res, info) => {
      seen.push(`first ${info.url.pathname} ${info.loopback}`)
      return true
    })
    ctx.webServer.addGuard(async (req, res) => {
      seen.push('second')
      if (req.url === '/blocked') {
        res.writeHead(451).end('no')
        return false
      }
      return true
    })
    ctx.webServer.register({ path: '/ok', match: 'exact', handle: (_q, res) => res.end('ok') })
    expect(await (await fetch(`${base}/ok`)).text()).toBe('ok')
    const blocked = await fetch(`${base}/blocked`)
    expect(blocked.status).toBe(451)
    expect(seen).toEqual(['first /ok true', 'second', 'first /blocked true', 'second'])
  })

  it('readJson: parses JSON, refuses a non-JSON type (415), malformed JSON (400) and an oversized body (413)', async () => {
    const { ctx, base } = await start({ maxBodyBytes: 1000 })
    ctx.webServer.register({
      path: '/echo',
      match: 'exact',
      handle: async (req, res) => {
        const body = await ctx.webServer.readJson(req)
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify({ got: body }))
      },
    })
    const post = (body: string, type = 'application/json') =>
      fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': type }, body })
    expect(await json(await post('{"a":1}'))).toMatchObject({ status: 200, body: { got: { a: 1 } } })
    expect(await json(await post('{"a":1}', 'application/json; charset=utf-8'))).toMatchObject({ status: 200 })
    expect(await json(await post('a=1', 'application/x-www-form-urlencoded'))).toMatchObject({
      status: 415,
      body: { error: { code: 'UNSUPPORTED_MEDIA_TYPE' } },
    })
    expect(await json(await post('{"a":'))).toMatchObject({ status: 400, body: { error: { code: 'INVALID_JSON' } } })
    expect(await json(await post(JSON.stringify({ big: 'x'.repeat(2000) })))).toMatchObject({
      status: 413,
      body: { error: { code: 'PAYLOAD_TOO_LARGE', message: 'the request body is larger than 1000 bytes' } },
    })
    // A chunked upload with no content-length is cut off at the cap as well.
    const chunked = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        `${base}/echo`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          let body = ''
          res.on('data', (c) => (body += c))
          res.on('end', () => resolve({ status: res.statusCode, body }))
        },
      )
      req.on('error', reject)
      req.write('"' + 'y'.repeat(600))
      req.end('y'.repeat(600) + '"')
    })
    expect(chunked.status).toBe(413)
  })

  it('a handler throwing HttpError answers its JSON error with the field; any other throw is a 500 JSON', async () => {
    const { ctx, base } = await start()
    ctx.webServer.register({
      path: '/bad',
      match: 'exact',
      handle: () => {
        throw new HttpError(422, 'INVALID_PARAMS', 'name: expected string', 'name')
      },
    })
    ctx.webServer.register({
      path: '/boom',
      match: 'exact',
      handle: () => {
        throw new Error('kaput')
      },
    })
    ctx.logger('webserver').level = 0
    expect(await json(await fetch(`${base}/bad`))).toMatchObject({
      status: 422,
      body: { error: { code: 'INVALID_PARAMS', message: 'name: expected string', field: 'name' } },
    })
    const boom = await json(await fetch(`${base}/boom`))
    expect(boom.status).toBe(500)
    expect(boom.body.error.code).toBe('INTERNAL')
    expect(JSON.stringify(boom.body)).not.toContain('kaput')
  })

  it('waitForReady answers 503 STARTING until app/ready', async () => {
    const { ctx, base } = await start({ waitForReady: true })
    ctx.webServer.register({ path: '/x', match: 'exact', handle: (_q, res) => res.end('x') })
    expect(await json(await fetch(`${base}/x`))).toMatchObject({ status: 503, body: { error: { code: 'STARTING' } } })
    await (ctx.parallel as (name: string) => Promise<void>)('app/ready')
    expect(await (await fetch(`${base}/x`)).text()).toBe('x')
  })

  it('holdBeforeReady: requests wait for app/ready; the early filter serves what it admits once guards and a handler exist', async () => {
    const { ctx, base } = await start({ waitForReady: true, holdBeforeReady: true })
    const order: string[] = []
    const ready = () => (ctx.parallel as (name: string) => Promise<void>)('app/ready')
    const text = (p: string) =>
      fetch(base + p).then(async (r) => {
        const t = `${r.status} ${await r.text()}`
        order.push(`${p} ${t}`)
        return t
      })
    // Before any early filter nothing is routed, not even past the guards.
    let guarded = 0
    ctx.webServer.addGuard(() => (guarded++, true))
    const held = text('/page')
    // Wait for the request to reach the hold (the server's count of held requests), not for time.
    await vi.waitFor(() => expect(holding(ctx)).toBe(1), { timeout: 10_000, interval: 5 })
    expect(order).toEqual([])
    expect(guarded).toBe(0)
    ctx.webServer.serveBeforeReady(
      (req, info, route) => req.method === 'GET' && !route && !info.url.pathname.startsWith('/api'),
    )
    // Admitted but no handler yet: past the guards, then held again; the fallback appearing releases it.
    await vi.waitFor(() => expect([guarded, holding(ctx)]).toEqual([1, 1]), { timeout: 10_000, interval: 5 })
    expect(order).toEqual([])
    ctx.webServer.registerFallback((_q, res) => res.end('page'))
    expect(await held).toBe('200 page')
    expect(guarded).toBe(1)
    // Not admitted (a route of its own, or a reserved path): held until app/ready.
    ctx.webServer.register({ path: '/api/x', match: 'exact', handle: (_q, res) => res.end('api') })
    const api = text('/api/x')
    const other = text('/api/missing')
    expect(await text('/other')).toBe('200 page')
    await vi.waitFor(() => expect(holding(ctx)).toBe(2), { timeout: 10_000, interval: 5 })
    expect(order.map((o) => o.split(' ')[0])).toEqual(['/page', '/other'])
    await ready()
    expect(await api).toBe('200 api')
    // After app/ready the usual routing applies (here: the fallback).
    expect(await other).toBe('200 page')
    expect(ctx.webServer.ready).toBe(true)
    await ctx.webServer.whenReady()
  })

  it('holdBeforeReady: past maxHeldRequests a request gets 503 STARTING; a held request whose server stops is closed', async () => {
    const { ctx, fiber, base } = await start({ waitForReady: true, holdBeforeReady: true, maxHeldRequests: 1 })
    ctx.webServer.registerFallback((_q, res) => res.end('page'))
    const first = fetch(`${base}/a`).then(
      (r) => r.status,
      (e: Error) => e.name,
    )
    await vi.waitFor(() => expect(holding(ctx)).toBe(1), { timeout: 10_000, interval: 5 })
    expect(await json(await fetch(`${base}/b`))).toMatchObject({ status: 503, body: { error: { code: 'STARTING' } } })
    await fiber.dispose()
    expect(await first).toBe('TypeError')
  })

  it('a port in use fails the start with one message naming host and port', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as { port: number }).port
    try {
      const ctx = new Context()
      const fiber = ctx.plugin(WebServer, { host: '127.0.0.1', port } as WebServerConfig)
      fibers.push(fiber)
      await expect(fiber).rejects.toThrow(`cannot listen on 127.0.0.1:${port}: the port is already in use`)
    } finally {
      blocker.close()
    }
  })

  it('dispose closes keep-alive connections and open streams, and frees the port', async () => {
    const { ctx, fiber, server, base } = await start()
    ctx.webServer.register({ path: '/ka', match: 'exact', handle: (_q, res) => res.end('ka') })
    ctx.webServer.register({
      path: '/stream',
      match: 'exact',
      handle: (_q, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.write(': open\n\n')
      },
    })
    const port = server.port
    // A keep-alive connection that stays open after its response.
    let kaSocketClosed!: Promise<void>
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${base}/ka`, { headers: { connection: 'keep-alive' } }, (res) => {
        const socket = res.socket
        kaSocketClosed = new Promise<void>((done) => socket.once('close', () => done()))
        res.resume()
        res.on('end', () => resolve())
      })
      req.on('error', reject)
      req.end()
    })
    let streamClosed!: Promise<void>
    await new Promise<void>((resolve, reject) => {
      httpRequest(`${base}/stream`, (res) => {
        streamClosed = new Promise<void>((done) => res.on('close', () => done()))
        res.once('data', () => resolve())
      })
        .on('error', reject)
        .end()
    })
    await fiber.dispose()
    await kaSocketClosed
    await streamClosed
    // The port is free again.
    const again = createServer()
    await new Promise<void>((resolve, reject) => {
      again.once('error', reject)
      again.listen(port, '127.0.0.1', resolve)
    })
    again.close()
  })

  it('isLoopbackAddress covers 127/8, ::1 and mapped forms only', () => {
    for (const a of ['127.0.0.1', '127.9.8.7', '::1', '::ffff:127.0.0.1']) expect(isLoopbackAddress(a)).toBe(true)
    for (const a of ['10.0.0.1', '::ffff:192.168.1.2', '0.0.0.0', '', undefined, '128.0.0.1'])
      expect(isLoopbackAddress(a)).toBe(false)
  })
})
