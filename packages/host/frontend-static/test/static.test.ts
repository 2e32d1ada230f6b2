import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import WebServer from '@dsh/webserver'
import FrontendStatic, {
  builtClientDist,
  IMMUTABLE,
  isHashedName,
  pickEncoding,
  PLACEHOLDER_DIST,
  REVALIDATE,
  sessionPreview,
} from '../src/index.ts'
import { bootLoader, writePackage } from './loader.ts'

interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
}

/** A raw request: the path is sent exactly as given (no client-side normalization). */
function get(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end()
  })
}

let root: string
let dist: string
let ctx: Context
let app: { dispose(): unknown } | undefined

const BIG_JS =
  'export const words = [' + Array.from({ length: 400 }, (_, i) => JSON.stringify(`word-${i}`)).join(', ') + ']\n'
const INDEX = '<!doctype html><title>app</title><div id="root"></div>' + '<!-- padding -->'.repeat(100)

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-frontend-static-'))
  dist = join(root, 'dist')
  mkdirSync(join(dist, 'assets'), { recursive: true })
  writeFileSync(join(dist, 'index.html'), INDEX)
  writeFileSync(join(dist, 'assets', 'index-B7x9k2Qa.js'), BIG_JS)
  writeFileSync(join(dist, 'assets', 'tiny-C3d4e5f6.css'), 'body{margin:0}')
  writeFileSync(join(dist, 'favicon.ico'), Buffer.from([0, 0, 1, 0]))
  writeFileSync(join(dist, 'data.bin'), 'x')
  writeFileSync(join(root, 'secret.txt'), 'outside the dist dir')
})

afterEach(async () => {
  await app?.dispose()
  app = undefined
  rmSync(root, { recursive: true, force: true })
})

async function start(
  config: Record<string, unknown> = {},
  before?: (c: Context) => Promise<void>,
): Promise<{ port: number; fs: FrontendStatic }> {
  const fiber = new Context().plugin({ name: 'test-host', apply() {} })
  await fiber
  app = fiber
  ctx = fiber.ctx
  if (before) await before(ctx)
  await ctx.plugin(WebServer, { port: 0 } as never)
  await ctx.plugin(FrontendStatic, { dist, ...config } as never)
  const web = ctx.get('webServer') as WebServer
  return { port: web.port, fs: ctx.get('frontendStatic') as FrontendStatic }
}

describe('the client directory', () => {
  it('hashed assets are immutable for a year; index.html and unhashed files revalidate (ETag, 304)', async () => {
    const { port } = await start()
    const asset = await get(port, '/assets/tiny-C3d4e5f6.css')
    expect(asset.status).toBe(200)
    expect(asset.headers['cache-control']).toBe(IMMUTABLE)
    expect(asset.headers['content-type']).toBe('text/css; charset=utf-8')
    expect(asset.body.toString()).toBe('body{margin:0}')

    const index = await get(port, '/')
    expect(index.status).toBe(200)
    expect(index.headers['cache-control']).toBe(REVALIDATE)
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(index.body.toString()).toBe(INDEX)
    expect((await get(port, '/index.html')).body.toString()).toBe(INDEX)

    const icon = await get(port, '/favicon.ico')
    expect(icon.headers['cache-control']).toBe(REVALIDATE)
    const etag = String(icon.headers.etag)
    expect(etag).toMatch(/^W\//)
    const again = await get(port, '/favicon.ico', { 'if-none-match': etag })
    expect(again.status).toBe(304)
    expect(again.body.length).toBe(0)
    // Unknown extensions ship as bytes.
    expect((await get(port, '/data.bin')).headers['content-type']).toBe('application/octet-stream')
  })

  it('compresses text by Accept-Encoding (br over gzip), caches the compressed bytes, leaves small bodies alone', async () => {
    const { port, fs } = await start()
    const br = await get(port, '/assets/index-B7x9k2Qa.js', { 'accept-encoding': 'gzip, deflate, br' })
    expect(br.headers['content-encoding']).toBe('br')
    expect(br.headers.vary).toBe('accept-encoding')
    expect(brotliDecompressSync(br.body).toString()).toBe(BIG_JS)
    expect(br.body.length).toBeLessThan(BIG_JS.length)

    const gz = await get(port, '/assets/index-B7x9k2Qa.js', { 'accept-encoding': 'gzip, br;q=0' })
    expect(gz.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(gz.body).toString()).toBe(BIG_JS)

    const plain = await get(port, '/assets/index-B7x9k2Qa.js')
    expect(plain.headers['content-encoding']).toBeUndefined()
    expect(plain.body.toString()).toBe(BIG_JS)

    const misses = fs.cache.misses
    await get(port, '/assets/index-B7x9k2Qa.js', { 'accept-encoding': 'br' })
    expect(fs.cache.misses).toBe(misses)
    expect(fs.cache.hits).toBeGreaterThan(0)

    const small = await get(port, '/assets/tiny-C3d4e5f6.css', { 'accept-encoding': 'br' })
    expect(small.headers['content-encoding']).toBeUndefined()

    const index = await get(port, '/some/route', { 'accept-encoding': 'gzip' })
    expect(index.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(index.body).toString()).toBe(INDEX)
  })

  it('serves index.html as it is on disk now (an edit is never answered from memory), plain and compressed; large bodies compress too', async () => {
    const { port } = await start()
    expect((await get(port, '/')).body.toString()).toBe(INDEX)
    expect(gunzipSync((await get(port, '/', { 'accept-encoding': 'gzip' })).body).toString()).toBe(INDEX)
    const edited = INDEX.replace('<title>app</title>', '<title>edited app, longer</title>')
    writeFileSync(join(dist, 'index.html'), edited)
    expect((await get(port, '/')).body.toString()).toBe(edited)
    expect((await get(port, '/index.html')).body.toString()).toBe(edited)
    expect(brotliDecompressSync((await get(port, '/', { 'accept-encoding': 'br' })).body).toString()).toBe(edited)
    // Past the in-place size (16 kB) compression goes through the thread pool; same bytes back.
    const large = 'export const big = ' + JSON.stringify(Array.from({ length: 6000 }, (_, i) => `entry-${i}`)) + '\n'
    writeFileSync(join(dist, 'assets', 'large-9f8e7d6c.js'), large)
    const br = await get(port, '/assets/large-9f8e7d6c.js', { 'accept-encoding': 'br' })
    expect(br.headers['content-encoding']).toBe('br')
    expect(brotliDecompressSync(br.body).toString()).toBe(large)
  })

  it('answers unknown paths with index.html (SPA routes), HEAD without a body, other methods 405 JSON', async () => {
    const { port } = await start()
    const route = await get(port, '/sessions/abc?tab=diff')
    expect(route.status).toBe(200)
    expect(route.body.toString()).toBe(INDEX)
    const missingAsset = await get(port, '/assets/gone-Z9y8x7w6.js')
    expect(missingAsset.status).toBe(200)
    expect(missingAsset.headers['cache-control']).toBe(REVALIDATE)

    const head = await get(port, '/assets/index-B7x9k2Qa.js', {}, 'HEAD')
    expect(head.status).toBe(200)
    expect(Number(head.headers['content-length'])).toBe(Buffer.byteLength(BIG_JS))
    expect(head.body.length).toBe(0)

    const post = await get(port, '/anything', { 'content-type': 'application/json' }, 'POST')
    expect(post.status).toBe(405)
    expect(post.headers.allow).toBe('GET, HEAD')
    expect(JSON.parse(post.body.toString()).error.code).toBe('METHOD_NOT_ALLOWED')
  })

  it('refuses paths leading outside the directory with 403, by encoded slashes or by symlink', async () => {
    symlinkSync(join(root, 'secret.txt'), join(dist, 'leak.txt'))
    const { port } = await start()
    for (const path of [
      '/..%2fsecret.txt',
      '/assets/..%2f..%2fsecret.txt',
      '/..%5csecret.txt',
      '/leak.txt',
      '/a%00b',
    ]) {
      const reply = await get(port, path)
      expect(reply.status, path).toBe(403)
      expect(JSON.parse(reply.body.toString()).error.code, path).toBe('FORBIDDEN_PATH')
      expect(reply.body.toString()).not.toContain('outside the dist dir')
    }
    // Plain dot segments are resolved by the URL parser before routing: they stay inside.
    const dots = await get(port, '/../../secret.txt')
    expect(dots.body.toString()).toBe(INDEX)
  })

  it('serves the built client by default (the placeholder when none is built); a missing dist fails the row with one clear error', async () => {
    const { port } = await start({ dist: undefined })
    const page = await get(port, '/')
    expect(page.status).toBe(200)
    const built = builtClientDist()
    if (built) {
      expect(page.body.toString()).toContain('<script type="importmap">')
      expect(page.body.toString()).toMatch(/<script type="application\/json" id="dsh-boot">\{"version":1,/)
    } else {
      expect(page.body.toString()).toContain('client is not built')
    }
    await app?.dispose()
    const placeholder = await start({ dist: PLACEHOLDER_DIST })
    const shipped = await get(placeholder.port, '/')
    expect(shipped.body.toString()).toContain('/api/events/host')
    expect(readFileSync(join(PLACEHOLDER_DIST, 'index.html'), 'utf8')).toBe(shipped.body.toString())

    await app?.dispose()
    const host = new Context().plugin({ name: 'test-host-2', apply() {} })
    await host
    app = host
    await host.ctx.plugin(WebServer, { port: 0 } as never)
    const fiber = host.ctx.plugin(FrontendStatic, { dist: join(root, 'nope') } as never)
    await expect(Promise.resolve(fiber)).rejects.toThrow(/client directory .*nope does not exist or is not a directory/)
  })
})

describe("the page's frame-src", () => {
  it('frames nothing until a plugin asks; only while that plugin is active; a bad source throws', async () => {
    const { port } = await start()
    const csp = async () => String((await get(port, '/')).headers['content-security-policy'])
    expect(await csp()).not.toContain('frame-src')
    const asker = ctx.plugin({
      name: 'asks-for-frames',
      inject: ['frontendStatic'],
      apply: (inner: Context) => {
        inner.frontendStatic.allowFrames("'self'")
      },
    })
    await asker
    expect(await csp()).toMatch(/; frame-src 'self'$/)
    await asker.dispose()
    expect(await csp()).not.toContain('frame-src')
    const fs = ctx.get('frontendStatic') as FrontendStatic
    expect(() => fs.allowFrames("'self'; script-src *")).toThrow(/is not a frame source/)
    expect(() => fs.allowFrames('*')).toThrow(/is not a frame source/)
  })
})

describe('plugin browser halves at /plugins/<package>/<file>', () => {
  it("serves an enabled package's ./client export directory; disabled, unknown or client-less packages are 404; traversal 403", async () => {
    const ui = writePackage(
      root,
      '@fixture/ui',
      `export const name = 'ui'; export function apply() {}`,
      { exports: { '.': './index.js', './client': { browser: './client/entry.js' } } },
      {
        'client/entry.js': 'export default function activate() {}\n',
        'client/chunk-A1b2C3d4.js': 'export const x = 1\n',
        'secret.js': 'not in the client directory',
      },
    )
    const off = writePackage(
      root,
      'fixture-off',
      `export const name = 'off'; export function apply() {}`,
      { exports: { '.': './index.js', './client/': './web/' } },
      { 'web/entry.js': '1' },
    )
    const plain = writePackage(root, 'fixture-plain', `export const name = 'plain'; export function apply() {}`, {
      exports: { '.': './index.js' },
    })
    const { port, fs } = await start({}, async (c) => {
      await bootLoader(c, [
        { id: 'ui', name: ui },
        { id: 'off', name: off, disabled: true },
        { id: 'plain', name: plain },
      ])
    })
    expect(fs.clientPlugins()).toEqual([
      expect.objectContaining({ package: '@fixture/ui', entry: 'entry.js', baseUrl: '/plugins/@fixture/ui/' }),
    ])
    const entry = await get(port, '/plugins/@fixture/ui/entry.js')
    expect(entry.status).toBe(200)
    expect(entry.headers['content-type']).toBe('text/javascript; charset=utf-8')
    expect(entry.headers['cache-control']).toBe(REVALIDATE)
    expect(entry.body.toString()).toContain('activate')
    const chunk = await get(port, '/plugins/%40fixture/ui/chunk-A1b2C3d4.js')
    expect(chunk.status).toBe(200)
    expect(chunk.headers['cache-control']).toBe(IMMUTABLE)

    const codes = async (path: string) => {
      const reply = await get(port, path)
      return [reply.status, JSON.parse(reply.body.toString()).error.code]
    }
    expect(await codes('/plugins/@fixture/ui/missing.js')).toEqual([404, 'NOT_FOUND'])
    expect(await codes('/plugins/@fixture/ui/..%2fsecret.js')).toEqual([403, 'FORBIDDEN_PATH'])
    expect(await codes('/plugins/fixture-off/entry.js')).toEqual([404, 'PLUGIN_NOT_FOUND'])
    expect(await codes('/plugins/fixture-plain/index.js')).toEqual([404, 'PLUGIN_NOT_FOUND'])
    expect(await codes('/plugins/@nobody/else/x.js')).toEqual([404, 'PLUGIN_NOT_FOUND'])
    expect(await codes('/plugins/')).toEqual([404, 'NOT_FOUND'])
  })

  it('puts the boot manifest (enabled halves, launch folder) into the index page and at /client-manifest.json', async () => {
    writeFileSync(
      join(dist, 'index.html'),
      '<!doctype html><script type="application/json" id="dsh-boot"></script><div id="root"></div>',
    )
    const ui = writePackage(
      root,
      '@fixture/ui',
      `export const name = 'ui'; export function apply() {}`,
      { exports: { '.': './index.js', './client': './client/entry.js' } },
      { 'client/entry.js': 'export default {}\n' },
    )
    const off = writePackage(
      root,
      'fixture-off',
      `export const name = 'off'; export function apply() {}`,
      { exports: { '.': './index.js', './client': './web/entry.js' } },
      { 'web/entry.js': '1' },
    )
    const { port } = await start({ launchCwd: '/work/</script>' }, async (c) => {
      await bootLoader(c, [
        { id: 'ui', name: ui },
        { id: 'off', name: off, disabled: true },
      ])
    })
    const expected = {
      version: 1,
      plugins: [{ package: '@fixture/ui', url: '/plugins/@fixture/ui/entry.js' }],
      launchCwd: '/work/</script>',
    }
    const json = await get(port, '/client-manifest.json')
    expect(json.status).toBe(200)
    expect(json.headers['cache-control']).toBe('no-store')
    expect(JSON.parse(json.body.toString())).toEqual(expected)
    const page = (await get(port, '/')).body.toString()
    const inlined = /<script type="application\/json" id="dsh-boot">(.*?)<\/script>/.exec(page)
    // The value cannot close the script element: `<` is escaped.
    expect(inlined?.[1]).not.toContain('</script>')
    expect(JSON.parse(inlined![1])).toEqual(expected)
  })
})

describe('deferred browser halves (dsh.clientLoad)', () => {
  it('marks a half whose package says "deferred" in the manifest and leaves it out of the preloads; a bad value loads eagerly with a reason', async () => {
    writeFileSync(
      join(dist, 'index.html'),
      '<!doctype html><script type="application/json" id="dsh-boot"></script><div id="root"></div>',
    )
    const half = (name: string, dsh?: unknown) =>
      writePackage(
        root,
        name,
        `export const name = '${name}'; export function apply() {}`,
        { exports: { '.': './index.js', './client': './client/entry.js' }, ...(dsh ? { dsh } : {}) },
        { 'client/entry.js': 'export default {}\n' },
      )
    const eager = half('fixture-eager')
    const later = half('fixture-later', { clientLoad: 'deferred' })
    const odd = half('fixture-odd', { clientLoad: 'later please' })
    const boot = async (c: Context) => {
      await bootLoader(c, [
        { id: 'eager', name: eager },
        { id: 'later', name: later },
        { id: 'odd', name: odd },
      ])
    }
    const { port, fs } = await start({}, boot)
    const rows = fs.clientPlugins()
    expect(rows.map((r) => [r.package, r.load])).toEqual([
      ['fixture-eager', 'eager'],
      ['fixture-later', 'deferred'],
      ['fixture-odd', 'eager'],
    ])
    expect(rows[2].loadError).toBe(
      'fixture-odd: package.json dsh.clientLoad is "later please", expected "eager" or "deferred"; loading its browser half eagerly',
    )
    const manifest = JSON.parse((await get(port, '/client-manifest.json')).body.toString())
    expect(manifest.plugins).toEqual([
      { package: 'fixture-eager', url: '/plugins/fixture-eager/entry.js' },
      { package: 'fixture-later', url: '/plugins/fixture-later/entry.js', defer: true },
      { package: 'fixture-odd', url: '/plugins/fixture-odd/entry.js' },
    ])
    const page = (await get(port, '/')).body.toString()
    const preloads = [...page.matchAll(/<link rel="modulepreload" href="([^"]+)">/g)].map((m) => m[1])
    expect(preloads).toEqual(['/plugins/fixture-eager/entry.js', '/plugins/fixture-odd/entry.js'])

    // deferHalves: false: every half is preloaded and loaded at once.
    await app?.dispose()
    const again = await start({ deferHalves: false }, boot)
    const all = JSON.parse((await get(again.port, '/client-manifest.json')).body.toString())
    expect(all.plugins.some((p: { defer?: boolean }) => p.defer)).toBe(false)
    const page2 = (await get(again.port, '/')).body.toString()
    expect(page2.match(/rel="modulepreload"/g)).toHaveLength(3)
  })
})

describe("the static shell's session preview", () => {
  it('is the last prompts and answers as escaped text; other events and odd frames are skipped', () => {
    const msg = (seq: number, type: string, data: unknown) => ['message', { seq, type, data }] as [string, unknown]
    const text = (t: string) => [{ type: 'text', text: t }]
    const html = sessionPreview({
      version: 1,
      sessionId: 'a"b',
      frames: [
        msg(0, 'user/message', { source: { kind: 'human' }, content: text('first <b>prompt</b>') }),
        msg(1, 'user/message', { source: { kind: 'system' }, content: text('a reminder') }),
        msg(2, 'assistant/chunk', { chunk: { kind: 'text-delta', text: 'partial' } }),
        msg(3, 'assistant/message', { message: { content: [...text('an answer & more'), { type: 'image' }] } }),
        msg(4, 'assistant/message', { message: null }),
        ['message', null],
        ['message', 'not an event'],
        ['status', { status: 'idle' }],
      ],
    })
    expect(html).toBe(
      '<div class="boot-preview" data-session-id="a&quot;b">' +
        '<div class="boot-msg boot-user">first &lt;b&gt;prompt&lt;/b&gt;</div>' +
        '<div class="boot-msg boot-assistant">an answer &amp; more</div></div>',
    )
    // Only the last few, each cut; nothing to show is nothing at all.
    const many = Array.from({ length: 10 }, (_, i) =>
      msg(i, 'user/message', { source: { kind: 'human' }, content: text(`p${i} ${'x'.repeat(20)}`) }),
    )
    const cut = sessionPreview({ version: 1, sessionId: 's', frames: many }, 2, 5)
    expect(cut).toBe(
      '<div class="boot-preview" data-session-id="s"><div class="boot-msg boot-user">p8 xx…</div><div class="boot-msg boot-user">p9 xx…</div></div>',
    )
    expect(sessionPreview({ version: 1, sessionId: 's', frames: [['status', {}]] })).toBe('')
  })
})

describe('helpers', () => {
  it('isHashedName and pickEncoding', () => {
    expect(isHashedName('/assets/index-B7x9k2Qa.js')).toBe(true)
    expect(isHashedName('app.3f9a1c0d.css')).toBe(true)
    expect(isHashedName('index.html')).toBe(false)
    expect(isHashedName('some-longname.js')).toBe(false)
    expect(isHashedName('v-12345678.js')).toBe(false)
    expect(pickEncoding('gzip, deflate, br')).toBe('br')
    expect(pickEncoding('br;q=0, gzip')).toBe('gzip')
    expect(pickEncoding('*')).toBe('br')
    expect(pickEncoding('identity')).toBe('identity')
    expect(pickEncoding(undefined)).toBe('identity')
  })
})
