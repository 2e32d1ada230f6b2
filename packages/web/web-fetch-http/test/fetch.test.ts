// The fetch provider against real HTTP servers on 127.0.0.1 (the guard is relaxed for 127.0.0.1/32
// only where a test needs to reach them).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import WebRuntime, { WebError, type WebFetchResult } from '@dsh/web'
import * as provider from '../src/index.ts'
import { createProvider, type Config } from '../src/index.ts'

const servers: Server[] = []
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise((r) => {
          s.closeAllConnections()
          s.close(r)
        }),
    ),
  )
})

type Handler = (req: IncomingMessage, res: ServerResponse, base: string) => void
async function serve(handler: Handler): Promise<{ base: string; hits: string[] }> {
  const hits: string[] = []
  let base = ''
  const server = createServer((req, res) => {
    hits.push(req.url ?? '')
    handler(req, res, base)
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { base, hits }
}

const config = (over: Partial<Config> = {}): Config => provider.Config({ allowedRanges: ['127.0.0.1/32'], ...over })
const fetchWith = (url: string, over: Partial<Config> = {}, signal?: AbortSignal) =>
  createProvider(config(over)).fetch({ url }, { signal })

async function failure(promise: Promise<unknown>): Promise<WebError> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(WebError)
    return error as WebError
  }
  throw new Error('expected a WebError')
}

describe('web-fetch-http', () => {
  it('fetches an HTML page and decodes its charset', async () => {
    const { base } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' })
      res.end(Buffer.from('<html><body><h1>Caf\xe9</h1></body></html>', 'latin1'))
    })
    const result = await fetchWith(`${base}/page`)
    expect(result).toMatchObject<Partial<WebFetchResult>>({
      status: 200,
      mediaType: 'text/html',
      charset: 'iso-8859-1',
      truncated: false,
      redirects: [],
      finalUrl: `${base}/page`,
    })
    expect(result.content).toContain('<h1>Café</h1>')
  })

  it('decompresses gzip and sniffs a <meta charset>', async () => {
    const { base } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' })
      res.end(
        gzipSync(
          Buffer.from('<html><head><meta charset="windows-1252"></head><body>\x93quoted\x94</body></html>', 'latin1'),
        ),
      )
    })
    const result = await fetchWith(base)
    expect(result.charset).toBe('windows-1252')
    expect(result.content).toContain('\u201cquoted\u201d')
  })

  it('follows redirects (relative and absolute) and reports each hop', async () => {
    const { base } = await serve((req, res, b) => {
      if (req.url === '/a') res.writeHead(301, { location: '/b' }).end()
      else if (req.url === '/b') res.writeHead(307, { location: `${b}/c` }).end()
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('landed')
    })
    const result = await fetchWith(`${base}/a`)
    expect(result.redirects).toEqual([`${base}/b`, `${base}/c`])
    expect(result.finalUrl).toBe(`${base}/c`)
    expect(result.content).toBe('landed')
  })

  it('stops a redirect loop', async () => {
    const { base, hits } = await serve((req, res) => {
      res.writeHead(302, { location: req.url === '/ping' ? '/pong' : '/ping' }).end()
    })
    const error = await failure(fetchWith(`${base}/ping`))
    expect(error.code).toBe('TOO_MANY_REDIRECTS')
    expect(error.message).toMatch(/redirect loop/)
    expect(hits).toEqual(['/ping', '/pong'])
  })

  it('stops after maxRedirects distinct redirects', async () => {
    const { base, hits } = await serve((req, res) => {
      const n = Number(req.url!.slice(1))
      res.writeHead(302, { location: `/${n + 1}` }).end()
    })
    const error = await failure(fetchWith(`${base}/0`, { maxRedirects: 3 }))
    expect(error.code).toBe('TOO_MANY_REDIRECTS')
    expect(error.message).toMatch(/more than 3 redirects/)
    expect(hits).toEqual(['/0', '/1', '/2', '/3'])
  })

  it('reads at most maxBytes of a 20 MB body and marks it truncated', async () => {
    const line = 'x'.repeat(1023) + '\n'
    let written = 0
    const { base } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(20 * 1024 * 1024) })
      const pump = () => {
        while (written < 20 * 1024 * 1024) {
          written += line.length
          if (!res.write(line)) return void res.once('drain', pump)
        }
        res.end()
      }
      res.on('close', () => undefined)
      pump()
    })
    const result = await fetchWith(base)
    expect(result.truncated).toBe(true)
    expect(result.bytes).toBe(5 * 1024 * 1024)
    expect(result.content.length).toBe(5 * 1024 * 1024)
    // The connection was dropped: the server did not get to write the whole body.
    expect(written).toBeLessThan(20 * 1024 * 1024)
  })

  it('refuses loopback by default, before any request reaches the server', async () => {
    const { base, hits } = await serve((_req, res) => res.end('secret'))
    const error = await failure(fetchWith(base, { allowedRanges: [] }))
    expect(error.code).toBe('BLOCKED_ADDRESS')
    expect(error.message).toMatch(/127\.0\.0\.1 is a loopback address/)
    const named = await failure(fetchWith(base.replace('127.0.0.1', 'localhost'), { allowedRanges: [] }))
    expect(named.code).toBe('BLOCKED_ADDRESS')
    expect(named.message).toMatch(/^localhost \((127\.0\.0\.1|::1)\) is a loopback address/)
    expect(hits).toEqual([])
  })

  it('refuses private, link-local and IPv4-in-IPv6 literals', async () => {
    for (const [url, kind] of [
      ['http://10.1.2.3/', 'private'],
      ['http://192.168.0.1/', 'private'],
      ['http://169.254.169.254/latest/meta-data/', 'link-local'],
      ['http://[fe80::1]/', 'link-local'],
      ['http://[fd00::1]/', 'private'],
      ['http://[::ffff:127.0.0.1]/', 'loopback'],
      ['http://0.0.0.0/', 'unspecified'],
    ]) {
      const error = await failure(fetchWith(url, { allowedRanges: [] }))
      expect(error.code, url).toBe('BLOCKED_ADDRESS')
      expect(error.message, url).toContain(kind)
    }
  })

  it('checks every redirect hop: an allowed host redirecting to a refused address fails', async () => {
    const { base, hits } = await serve((_req, res, b) =>
      res.writeHead(302, { location: b.replace('127.0.0.1', '127.0.0.2') + '/inner' }).end(),
    )
    const error = await failure(fetchWith(`${base}/outer`))
    expect(error.code).toBe('BLOCKED_ADDRESS')
    expect(error.message).toMatch(/127\.0\.0\.2 is a loopback address/)
    expect(hits).toEqual(['/outer'])
  })

  it('allowPrivateNetwork turns the guard off', async () => {
    const { base } = await serve((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('open'))
    expect((await fetchWith(base, { allowedRanges: [], allowPrivateNetwork: true })).content).toBe('open')
  })

  it('refuses a content type outside the allow list without reading the body', async () => {
    const { base } = await serve((_req, res) =>
      res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(64)),
    )
    const error = await failure(fetchWith(base))
    expect(error.code).toBe('UNSUPPORTED_CONTENT_TYPE')
    expect(error.message).toContain('image/png')
    // A wider allow list reads it.
    expect((await fetchWith(base, { allowedContentTypes: ['image/*'] })).bytes).toBe(64)
  })

  it('treats a missing content type as text unless the body looks binary', async () => {
    const { base } = await serve((req, res) => {
      res.removeHeader('content-type')
      res.writeHead(200)
      res.end(req.url === '/bin' ? Buffer.from([0x89, 0x50, 0, 0, 1]) : '<!doctype html><p>hi</p>')
    })
    expect((await fetchWith(`${base}/page`)).mediaType).toBe('text/html')
    expect((await failure(fetchWith(`${base}/bin`))).code).toBe('UNSUPPORTED_CONTENT_TYPE')
  })

  it('returns error statuses with their body (the consumer decides)', async () => {
    const { base } = await serve((_req, res) =>
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page'),
    )
    expect(await fetchWith(base)).toMatchObject({ status: 404, statusText: 'Not Found', content: 'no such page' })
  })

  it('times out a server that never answers, and stops on the caller abort', async () => {
    const { base } = await serve(() => undefined)
    const timeout = await failure(fetchWith(base, { timeoutMs: 200 }))
    expect(timeout.code).toBe('TIMEOUT')
    const controller = new AbortController()
    const pending = fetchWith(base, {}, controller.signal)
    setTimeout(() => controller.abort(), 50)
    expect((await failure(pending)).code).toBe('ABORTED')
    const pre = new AbortController()
    pre.abort()
    expect((await failure(fetchWith(base, {}, pre.signal))).code).toBe('ABORTED')
  })

  it('rejects unusable URLs with a sentence', async () => {
    expect((await failure(fetchWith('not a url'))).message).toMatch(/not an absolute URL/)
    expect((await failure(fetchWith('ftp://example.com/x'))).message).toMatch(/only http: and https:/)
    expect((await failure(fetchWith('file:///etc/passwd'))).code).toBe('INVALID_URL')
    expect((await failure(fetchWith('https://user:pw@example.com/'))).message).toMatch(/user name or password/)
  })

  it('fails loud at load on a malformed allowedRanges entry', () => {
    expect(() => createProvider(config({ allowedRanges: ['localhost'] }))).toThrow(
      /allowedRanges: "localhost" is not a CIDR range/,
    )
    expect(() => createProvider(config({ allowedRanges: ['10.0.0.0/33'] }))).toThrow(/prefix longer/)
  })

  it('registers on ctx.web and unregisters with its plugin', async () => {
    const { base } = await serve((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('via ctx.web'))
    const ctx = new Context()
    await ctx.plugin(WebRuntime, {})
    const fiber = await ctx.plugin(provider, { allowedRanges: ['127.0.0.1/32'] })
    expect(ctx.web.fetchProviderIds()).toEqual(['http'])
    expect((await ctx.web.fetch({ url: base })).content).toBe('via ctx.web')
    await fiber.dispose()
    const error = await failure(ctx.web.fetch({ url: base }))
    expect(error.code).toBe('NO_PROVIDER')
  })
})
