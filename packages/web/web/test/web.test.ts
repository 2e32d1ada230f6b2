// The seam on its own: registration as effects, the explicit provider choice, and the shared
// JSON client against a real HTTP server on 127.0.0.1.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import WebRuntime, { WebError, isWebError, type WebSearchProvider, type WebFetchProvider } from '../src/index.ts'
import { keyAccess, postJson } from '../src/http.ts'

const searcher = (id: string, ready: boolean | 'throws', calls: string[] = []): WebSearchProvider => ({
  id,
  status: async () => {
    if (ready === 'throws') throw new Error(`${id} status broke`)
    return ready ? { ready } : { ready, reason: `set ${id.toUpperCase()}_KEY` }
  },
  search: async (request) => {
    calls.push(`${id}:${request.query}`)
    return { provider: id, query: request.query, hits: [] }
  },
})

async function runtime(config: object = {}) {
  const ctx = new Context()
  await ctx.plugin(WebRuntime, config)
  return ctx
}
const plugin = (register: (ctx: Context) => void) => ({ name: 'p', inject: ['web'], apply: register })
const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (e: WebError) => e.code,
  )

describe('WebRuntime', () => {
  it('auto takes the first ready provider in searchOrder, then the rest in registration order', async () => {
    const calls: string[] = []
    const ctx = await runtime({ searchOrder: ['b', 'a'] })
    await ctx.plugin(
      plugin((c) => {
        c.web.registerSearchProvider(searcher('a', true, calls))
        c.web.registerSearchProvider(searcher('b', false, calls))
        c.web.registerSearchProvider(searcher('c', true, calls))
      }),
    )
    await ctx.web.search({ query: '  q  ', maxResults: 3 })
    expect(calls).toEqual(['a:q'])
    expect(await ctx.web.searchProviders()).toEqual([
      { id: 'a', status: { ready: true } },
      { id: 'b', status: { ready: false, reason: 'set B_KEY' } },
      { id: 'c', status: { ready: true } },
    ])
  })

  it('a provider whose status throws counts as not ready, with the error as reason', async () => {
    const ctx = await runtime()
    await ctx.plugin(plugin((c) => void c.web.registerSearchProvider(searcher('x', 'throws'))))
    const error = (await ctx.web.search({ query: 'q', maxResults: 1 }).catch((e) => e)) as WebError
    expect(error.message).toBe('web search is not configured: no search provider has a key (x: x status broke).')
  })

  it('a pinned provider must be mounted and ready', async () => {
    const ctx = await runtime({ search: 'b' })
    expect(await codeOf(ctx.web.search({ query: 'q', maxResults: 1 }))).toBe('NO_PROVIDER')
    await ctx.plugin(plugin((c) => void c.web.registerSearchProvider(searcher('b', false))))
    expect(await codeOf(ctx.web.search({ query: 'q', maxResults: 1 }))).toBe('MISSING_CREDENTIAL')
  })

  it('registrations unwind with their plugin; a duplicate id throws', async () => {
    const ctx = await runtime()
    const fetcher: WebFetchProvider = {
      id: 'f',
      fetch: async () => {
        throw new WebError('TRANSPORT', 'x')
      },
    }
    const fiber = await ctx.plugin(
      plugin((c) => {
        c.web.registerSearchProvider(searcher('a', true))
        c.web.registerFetchProvider(fetcher)
      }),
    )
    expect(() => ctx.web.registerSearchProvider(searcher('a', true))).toThrow(
      'web search provider "a" is already registered',
    )
    expect(ctx.web.fetchProviderIds()).toEqual(['f'])
    await fiber.dispose()
    expect(ctx.web.fetchProviderIds()).toEqual([])
    expect(await ctx.web.searchProviders()).toEqual([])
    expect(await codeOf(ctx.web.search({ query: 'q', maxResults: 1 }))).toBe('NO_PROVIDER')
    expect(await codeOf(ctx.web.fetch({ url: 'https://e.x/' }))).toBe('NO_PROVIDER')
  })

  it('refuses an empty query and an aborted signal before any provider runs', async () => {
    const calls: string[] = []
    const ctx = await runtime()
    await ctx.plugin(plugin((c) => void c.web.registerSearchProvider(searcher('a', true, calls))))
    expect(await codeOf(ctx.web.search({ query: '   ', maxResults: 1 }))).toBe('INVALID_REQUEST')
    const aborted = new AbortController()
    aborted.abort()
    expect(await codeOf(ctx.web.search({ query: 'q', maxResults: 1 }, { signal: aborted.signal }))).toBe('ABORTED')
    expect(calls).toEqual([])
  })

  it('isWebError accepts a WebError from another copy of the package by name and code', () => {
    const foreign = Object.assign(new Error('x'), { name: 'WebError', code: 'TIMEOUT' })
    expect(isWebError(foreign)).toBe(true)
    expect(isWebError(Object.assign(new Error('x'), { name: 'WebError', code: 'NOPE' }))).toBe(false)
    expect(isWebError(new Error('x'))).toBe(false)
  })
})

describe('@dsh/web/http', () => {
  let server: Server | undefined
  afterEach(async () => {
    const open = server
    server = undefined
    if (open) {
      open.closeAllConnections()
      await new Promise((r) => open.close(r))
    }
  })
  async function serve(body: string, status = 200): Promise<string> {
    server = createServer((req, res) => {
      req.resume()
      req.on('end', () => res.writeHead(status, { 'content-type': 'application/json' }).end(body))
    })
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`
  }
  const post = (url: string, over: object = {}) =>
    postJson({
      provider: 'p',
      url,
      headers: {},
      body: {},
      timeoutMs: 5000,
      maxResponseBytes: 1000,
      secrets: ['sekrit-key'],
      ...over,
    })

  it('parses a 2xx JSON answer; bounds its size; names non-JSON', async () => {
    expect(await post(await serve('{"ok":true}'))).toEqual({ ok: true })
    await new Promise((r) => server!.close(r))
    expect(await codeOf(post(await serve(JSON.stringify({ pad: 'x'.repeat(5000) }))))).toBe('BAD_RESPONSE')
    await new Promise((r) => server!.close(r))
    expect(((await post(await serve('<html>')).catch((e) => e)) as WebError).message).toBe(
      'p: the answer is not JSON ("<html>").',
    )
  })

  it('maps statuses and scrubs secrets from the error text', async () => {
    const error = (await post(await serve('{"error":{"message":"bad key sekrit-key"}}', 500)).catch(
      (e) => e,
    )) as WebError
    expect(error).toMatchObject({ code: 'HTTP_ERROR', message: 'p: HTTP 500: bad key [redacted]' })
    expect(await codeOf(post('ftp://x/'))).toBe('INVALID_REQUEST')
    expect(await codeOf(post('http://127.0.0.1:9/x'))).toBe('TRANSPORT')
  })

  it('keyAccess reads the environment when no credentials service is mounted', async () => {
    const key = keyAccess('p', 'P_KEY', () => undefined, { P_KEY: ' k ' })
    expect(await key.status()).toEqual({ ready: true })
    expect(await key.require()).toBe('k')
    const none = keyAccess('p', 'P_KEY', () => undefined, {})
    expect(await none.status()).toEqual({ ready: false, reason: 'set P_KEY (export P_KEY=... in the environment)' })
    expect(await codeOf(none.require())).toBe('MISSING_CREDENTIAL')
  })
})
