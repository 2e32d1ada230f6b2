// web_fetch and web_search on the real agent loop (scripted model), with the real seam, the real
// HTTP fetch provider against pages served on 127.0.0.1, and a seam-level search provider.
import { createServer, type Server, type ServerResponse, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context, Plugin } from 'cordis'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import WebRuntime, { WebError, type WebSearchProvider, type WebSearchRequest } from '@dsh/web'
import * as FetchHttp from '@dsh/web-fetch-http'
import SpillLocal from '@dsh/spill-local'
import * as SpillPolicy from '@dsh/spill-policy'
import * as ToolWeb from '../src/index.ts'
import { htmlToMarkdown, withScheme } from '../src/index.ts'

let harness: Harness | undefined
const servers: Server[] = []
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
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

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler)
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

type Result = {
  message: { content: { text: string }[] }
  error?: { code: string; message: string }
  meta?: Record<string, unknown>
}

const PAGE = `<!doctype html><html><head><title>Widget &amp; Co docs</title><style>.x{color:red}</style><script>alert(1)</script></head>
<body><nav><a href="/home">Home</a></nav><h1>Install</h1><p>Run <code>npm i widget</code> then see <a href="guide/start.html">the guide</a>.</p>
<ul><li>fast</li><li>small</li></ul><table><tr><th>opt</th><th>default</th></tr><tr><td>size</td><td>3</td></tr></table></body></html>`

function searchPlugin(provider: WebSearchProvider): Plugin {
  return {
    name: `fake-search-${provider.id}`,
    inject: ['web'],
    apply: (ctx: Context) => void ctx.web.registerSearchProvider(provider),
  }
}

async function run(
  calls: Array<{ name: string; args: object }>,
  options: { plugins?: Array<[Plugin, unknown?]>; config?: object; fetch?: object; extra?: ScriptEntry[] } = {},
) {
  const script: ScriptEntry[] = [
    ...calls.map((c, i) => ({ toolCalls: [{ callId: `c${i}`, name: c.name, arguments: c.args }] })),
    ...(options.extra ?? []),
    { text: 'done' },
  ]
  harness = await createHarness({
    script,
    plugins: [
      [WebRuntime, {}],
      [FetchHttp, { allowedRanges: ['127.0.0.1/32'], ...options.fetch }],
      ...(options.plugins ?? []),
      [ToolWeb, options.config ?? {}],
    ],
  })
  await harness.prompt('use the web')
  return harness.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data as Result)
}

const text = (r: Result) => r.message.content.map((b) => b.text).join('')

describe('web_fetch', () => {
  it('returns an HTML page as Markdown with absolute links, a title header and no script or style', async () => {
    const base = await serve((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE),
    )
    const [result] = await run([{ name: 'web_fetch', args: { url: `${base}/docs/index.html` } }])
    const out = text(result)
    expect(result.error).toBeUndefined()
    expect(out).toMatch(
      new RegExp(
        `^URL: ${base}/docs/index.html\nStatus: 200 OK\nContent-Type: text/html \\(converted to Markdown\\)\nTitle: Widget & Co docs\n\n`,
      ),
    )
    expect(out).toContain('# Install')
    expect(out).toContain('`npm i widget`')
    expect(out).toContain(`[the guide](${base}/docs/guide/start.html)`)
    expect(out).toMatch(/^- +fast$/m)
    expect(out).toContain('| opt | default |\n| --- | --- |\n| size | 3 |')
    expect(out).not.toContain('alert(1)')
    expect(out).not.toContain('color:red')
    expect(result.meta).toMatchObject({
      status: 200,
      mediaType: 'text/html',
      title: 'Widget & Co docs',
      truncated: false,
    })
  })

  it('passes plain text and JSON through unchanged and notes a prompt', async () => {
    const base = await serve((req, res) => {
      if (req.url === '/j') res.writeHead(200, { 'content-type': 'application/json' }).end('{"a": 1}')
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('just *text*')
    })
    const [plain, json] = await run([
      { name: 'web_fetch', args: { url: `${base}/t`, prompt: 'what does it say? $& $1' } },
      { name: 'web_fetch', args: { url: `${base}/j` } },
    ])
    expect(text(plain)).toBe(
      `URL: ${base}/t\nStatus: 200 OK\nContent-Type: text/plain\nPrompt: what does it say? $& $1\n\njust *text*`,
    )
    expect(text(json)).toMatch(/\n\n\{"a": 1\}$/)
  })

  it('reports refusals and failures as model-visible errors with stable codes', async () => {
    const base = await serve((req, res) => {
      if (req.url === '/loop') res.writeHead(302, { location: '/loop2' }).end()
      else if (req.url === '/loop2') res.writeHead(302, { location: '/loop' }).end()
      else if (req.url === '/img') res.writeHead(200, { 'content-type': 'image/png' }).end('x')
      else res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not here</h1>')
    })
    const results = await run([
      { name: 'web_fetch', args: { url: `${base}/loop` } },
      { name: 'web_fetch', args: { url: `${base}/img` } },
      { name: 'web_fetch', args: { url: `${base}/missing` } },
      { name: 'web_fetch', args: { url: base.replace('127.0.0.1', '127.0.0.9') } },
      { name: 'web_fetch', args: { url: 'gopher://x' } },
      { name: 'web_fetch', args: { url: '  ' } },
    ])
    expect(results.map((r) => r.error?.code)).toEqual([
      'TOO_MANY_REDIRECTS',
      'UNSUPPORTED_CONTENT_TYPE',
      'HTTP_ERROR',
      'BLOCKED_ADDRESS',
      'INVALID_URL',
      'INVALID_URL',
    ])
    expect(text(results[0])).toMatch(/^Error \[TOO_MANY_REDIRECTS\]: redirect loop/)
    expect(text(results[2])).toMatch(/^Error \[HTTP_ERROR\]: .* answered HTTP 404 Not Found\.\n\n[\s\S]*# Not here/)
    expect(text(results[3])).toMatch(/127\.0\.0\.9 is a loopback address/)
  })

  it('a large page spills through the spill policy; the model sees head, tail and the file', async () => {
    const big = `<html><body>${Array.from({ length: 4000 }, (_, i) => `<p>paragraph ${i} ${'lorem '.repeat(10)}</p>`).join('')}</body></html>`
    const base = await serve((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(big))
    const dir = mkdtempSync(join(tmpdir(), 'dsh-web-spill-'))
    const [result] = await run([{ name: 'web_fetch', args: { url: base } }], {
      plugins: [
        [SpillLocal, { dir }],
        [SpillPolicy, { maxInlineBytes: 8192, headBytes: 4096, tailBytes: 2048 }],
      ],
    })
    const out = text(result)
    expect(out).toContain('paragraph 0 ')
    expect(out).toContain('paragraph 3999 ')
    expect(out).not.toContain('paragraph 2000 ')
    const spill = result.meta!.spill as { locator: string }
    expect(readFileSync(spill.locator, 'utf8')).toContain('paragraph 2000 ')
  })

  it('a 20 MB body: 5 MiB are read, the rest is cut, and the result spills', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 'z\n')
    let sent = 0
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(20 * chunk.length) })
      const pump = () => {
        while (sent < 20) {
          sent++
          if (!res.write(chunk)) return void res.once('drain', pump)
        }
        res.end()
      }
      pump()
    })
    const dir = mkdtempSync(join(tmpdir(), 'dsh-web-spill-'))
    const [result] = await run([{ name: 'web_fetch', args: { url: base } }], {
      plugins: [
        [SpillLocal, { dir }],
        [SpillPolicy, {}],
      ],
    })
    expect(result.meta).toMatchObject({ truncated: true, bytes: 5 * 1024 * 1024 })
    expect(text(result)).toContain('Note: the page is larger than the 5.0 MiB read limit; only its beginning is shown.')
    expect(Buffer.byteLength(text(result))).toBeLessThan(40_000)
    expect(sent).toBeLessThan(20)
  })

  it('cancelling the turn aborts the request in flight', async () => {
    let closed = false
    let received = false
    const base = await serve((req) => {
      received = true
      req.socket.on('close', () => (closed = true))
    })
    harness = await createHarness({
      script: [{ toolCalls: [{ callId: 'f', name: 'web_fetch', arguments: { url: base } }] }, { text: 'done' }],
      plugins: [
        [WebRuntime, {}],
        [FetchHttp, { allowedRanges: ['127.0.0.1/32'] }],
        [ToolWeb, {}],
      ],
    })
    const turn = harness.prompt('fetch')
    while (!received) await new Promise((r) => setTimeout(r, 5))
    harness.agent.abort()
    await turn
    const [result] = harness.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data as Result)
    expect(result.error?.code).toBe('CANCELLED')
    while (!closed) await new Promise((r) => setTimeout(r, 5))
    expect(closed).toBe(true)
  })

  it('HTML past maxHtmlChars is not converted, and the header says so', async () => {
    const html = `<html><body>${Array.from({ length: 1000 }, (_, i) => `<p>para ${i}</p>`).join('')}</body></html>`
    const base = await serve((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html))
    const [result] = await run([{ name: 'web_fetch', args: { url: base } }], { config: { maxHtmlChars: 10_000 } })
    expect(text(result)).toContain(
      "Note: only the first 10,000 characters of the page's HTML were converted; the rest is not shown.",
    )
    expect(text(result)).toContain('para 10')
    expect(text(result)).not.toContain('para 999')
  })

  it('a page over the byte cap is cut and says so', async () => {
    const base = await serve((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/plain' }).end('y'.repeat(50_000)),
    )
    const [result] = await run([{ name: 'web_fetch', args: { url: base } }], { fetch: { maxBytes: 10_240 } })
    expect(text(result)).toContain(
      'Note: the page is larger than the 10.0 KiB read limit; only its beginning is shown.',
    )
    expect(result.meta).toMatchObject({ truncated: true, bytes: 10_240 })
  })

  it('with extractModel, a prompt is answered from the page by the helper model', async () => {
    const base = await serve((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE))
    let seen = ''
    harness = await createHarness({
      script: [
        { toolCalls: [{ callId: 'x', name: 'web_fetch', arguments: { url: base, prompt: 'How do I install it?' } }] },
        (request) => {
          seen = JSON.stringify(request.messages)
          return { text: 'Run npm i widget.' }
        },
        { text: 'done' },
      ],
      plugins: [
        [WebRuntime, {}],
        [FetchHttp, { allowedRanges: ['127.0.0.1/32'] }],
        [ToolWeb, { extractModel: 'scripted/scripted-1' }],
      ],
    })
    await harness.prompt('go')
    const result = harness.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data as Result)[0]
    expect(seen).toContain('Request: How do I install it?')
    expect(seen).toContain('# Install')
    expect(text(result)).toBe(`URL: ${base}/\nAnswer to: How do I install it?\n\nRun npm i widget.`)
    expect(result.meta).toMatchObject({ extractedBy: 'scripted/scripted-1' })
  })
})

it('drops icon-only links and emptied list items, but not code lines', () => {
  const md = htmlToMarkdown(
    '<a href="/x"><i class="icon"></i></a><ul><li><button>Theme</button></li><li>kept</li></ul><a href="/y"><img src="/l.png" alt="logo"></a><pre><code>a\n-\nb</code></pre>',
    'https://e.x/',
  )
  expect(md).toBe('-   kept\n\n[![logo](https://e.x/l.png)](https://e.x/y)\n\n```\na\n-\nb\n```')
})

it('a bare host name gets https://; anything else is left to the URL check', () => {
  expect(withScheme('example.com/docs?q=1')).toBe('https://example.com/docs?q=1')
  expect(withScheme('docs.python.org:8443')).toBe('https://docs.python.org:8443')
  expect(withScheme('http://example.com')).toBe('http://example.com')
  expect(withScheme('localhost:3000')).toBe('localhost:3000')
  expect(withScheme('mailto:x@example.com')).toBe('mailto:x@example.com')
  expect(withScheme('not a url')).toBe('not a url')
})

describe('web_search', () => {
  const provider = (id: string, answer?: string): WebSearchProvider & { calls: WebSearchRequest[] } => {
    const calls: WebSearchRequest[] = []
    return {
      id,
      calls,
      status: async () => ({ ready: true }),
      async search(request) {
        calls.push(request)
        if (request.query === 'boom') throw new WebError('HTTP_ERROR', `${id}: HTTP 500`)
        return {
          provider: id,
          query: request.query,
          answer,
          hits: Array.from({ length: 12 }, (_, i) => ({
            title: `${request.query} result ${i + 1}`,
            url: `https://example.com/${i + 1}`,
            snippet: `snippet ${i + 1}  with   space`,
            published: i === 0 ? '2026-01-02' : undefined,
          })),
        }
      },
    }
  }

  it('runs every query and lists bounded results per query', async () => {
    const fake = provider('fake', 'An answer.')
    const [result] = await run(
      [{ name: 'web_search', args: { queries: ['alpha', 'beta', 'alpha'], max_results: 2 } }],
      { plugins: [[searchPlugin(fake)]] },
    )
    expect(fake.calls).toEqual([
      { query: 'alpha', maxResults: 2 },
      { query: 'beta', maxResults: 2 },
    ])
    expect(text(result)).toBe(
      [
        'Web search results (via fake). Cite the URLs you use; fetch a page with web_fetch for its full text.',
        '',
        '## "alpha"',
        'Answer (fake): An answer.',
        '',
        '1. alpha result 1',
        '   https://example.com/1',
        '   Published: 2026-01-02',
        '   snippet 1 with space',
        '2. alpha result 2',
        '   https://example.com/2',
        '   snippet 2 with space',
        '',
        '## "beta"',
        'Answer (fake): An answer.',
        '',
        '1. beta result 1',
        '   https://example.com/1',
        '   Published: 2026-01-02',
        '   snippet 1 with space',
        '2. beta result 2',
        '   https://example.com/2',
        '   snippet 2 with space',
      ].join('\n'),
    )
    expect(result.meta).toMatchObject({
      provider: 'fake',
      queries: [
        { query: 'alpha', hits: 12 },
        { query: 'beta', hits: 12 },
      ],
    })
    expect((result.meta!.sources as unknown[]).length).toBe(4)
  })

  it('a failing query is reported in place; all failing is an error result', async () => {
    const fake = provider('fake')
    const [partial, all] = await run(
      [
        { name: 'web_search', args: { queries: ['ok', 'boom'] } },
        { name: 'web_search', args: { queries: ['boom'] } },
      ],
      { plugins: [[searchPlugin(fake)]] },
    )
    expect(partial.error).toBeUndefined()
    expect(text(partial)).toContain('## "boom"\nSearch failed [HTTP_ERROR]: fake: HTTP 500')
    expect(all.error?.code).toBe('HTTP_ERROR')
  })

  it('no ready provider is one clear tool error naming what to set', async () => {
    const keyless: WebSearchProvider = {
      id: 'exa',
      status: async () => ({ ready: false, reason: 'set EXA_API_KEY' }),
      search: async () => {
        throw new Error('unreachable')
      },
    }
    const [none, missing] = await run(
      [
        { name: 'web_search', args: { queries: ['x'] } },
        { name: 'web_search', args: { queries: ['   '] } },
      ],
      { plugins: [[searchPlugin(keyless)]] },
    )
    expect(none.error?.code).toBe('NO_PROVIDER')
    expect(text(none)).toBe(
      'Error [NO_PROVIDER]: web search is not configured: no search provider has a key (exa: set EXA_API_KEY).',
    )
    expect(missing.error?.code).toBe('INVALID_REQUEST')
  })

  it('forwards cancellation to the provider', async () => {
    let aborted = false
    const slow: WebSearchProvider = {
      id: 'slow',
      status: async () => ({ ready: true }),
      search: (_request, options) =>
        new Promise((_resolve, reject) => {
          options?.signal?.addEventListener('abort', () => {
            aborted = true
            reject(new WebError('ABORTED', 'cancelled'))
          })
        }),
    }
    harness = await createHarness({
      script: [{ toolCalls: [{ callId: 's', name: 'web_search', arguments: { queries: ['q'] } }] }, { text: 'done' }],
      plugins: [[WebRuntime, {}], [searchPlugin(slow)], [ToolWeb, {}]],
    })
    const turn = harness.prompt('search')
    while (!harness.session.events.some((e) => e.type === 'tool/call')) await new Promise((r) => setTimeout(r, 5))
    harness.agent.abort()
    await turn
    expect(aborted).toBe(true)
  })

  it('declares timeouts, concurrency safety and a prompt section; rows can turn a tool off', async () => {
    harness = await createHarness({
      plugins: [
        [WebRuntime, {}],
        [ToolWeb, { search: false, fetchTimeoutMs: 1234 }],
      ],
    })
    expect(harness.ctx.tools.get('web_search')).toBeUndefined()
    const fetchTool = harness.ctx.tools.get('web_fetch')!
    expect(fetchTool.timeoutMs).toBe(1234)
    expect(fetchTool.concurrencySafe).toBe(true)
    const schemas = harness.ctx.tools.schemas().map((s) => s.name)
    expect(schemas).toContain('web_fetch')
  })
})
