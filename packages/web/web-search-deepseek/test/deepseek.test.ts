// The DeepSeek search provider against a local fake of the Anthropic-compatible Messages API
// (POST /anthropic/v1/messages with the web_search_20250305 server tool), written from the
// documented request and response shapes, through the real ctx.web seam.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import WebRuntime, { WebError } from '@dsh/web'
import type { CredentialReader } from '@dsh/web/http'
import * as DeepSeek from '../src/index.ts'
import { createProvider, mapResponse } from '../src/index.ts'

interface Received {
  path: string
  headers: IncomingMessage['headers']
  body: Record<string, unknown>
}

let server: Server | undefined
afterEach(async () => {
  const open = server
  server = undefined
  if (!open) return
  open.closeAllConnections()
  await new Promise((r) => open.close(r))
})

/** A fake Messages endpoint: checks the documented request, answers like the API does. */
async function fakeMessages(
  answer: (req: Received, res: ServerResponse) => void,
): Promise<{ base: string; received: Received[] }> {
  const received: Received[] = []
  server = createServer((req, res) => {
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      const entry = { path: req.url ?? '', headers: req.headers, body: JSON.parse(raw || '{}') }
      received.push(entry)
      if (req.method !== 'POST' || req.url !== '/anthropic/v1/messages') return void res.writeHead(404).end()
      if (req.headers['x-api-key'] !== 'sk-ds-test') {
        return void res.writeHead(401, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            type: 'error',
            error: { type: 'authentication_error', message: 'invalid x-api-key sk-ds-wrong' },
          }),
        )
      }
      answer(entry, res)
    })
  })
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/anthropic`, received }
}

const documented = (query: string) => ({
  id: 'msg_01',
  type: 'message',
  role: 'assistant',
  model: 'deepseek-v4-flash',
  content: [
    { type: 'text', text: 'I will search for that.' },
    { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query } },
    {
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_01',
      content: [
        {
          type: 'web_search_result',
          url: 'https://nodejs.org/en/blog/release/v22.0.0',
          title: 'Node.js 22 released',
          encrypted_content: 'EqgfCioIARgB...',
          page_age: 'April 24, 2024',
        },
        {
          type: 'web_search_result',
          url: 'https://example.org/node22',
          title: 'What is new in Node 22',
          encrypted_content: 'Eq0xCioIARgB...',
        },
      ],
    },
    {
      type: 'text',
      text: 'Node.js 22 added require(esm) behind a flag.',
      citations: [
        {
          type: 'web_search_result_location',
          url: 'https://nodejs.org/en/blog/release/v22.0.0',
          title: 'Node.js 22 released',
          encrypted_index: 'Eo8BCioIAhgB...',
          cited_text: 'Support require()ing synchronous ESM graphs behind --experimental-require-module.',
        },
      ],
    },
  ],
  stop_reason: 'end_turn',
  usage: { input_tokens: 2100, output_tokens: 120, server_tool_use: { web_search_requests: 1 } },
})

const reader = (values: Record<string, string>): CredentialReader => ({
  get: async (name) => values[name],
  describe: async () => ({
    layers: [
      { id: 'env', label: 'the environment', writable: false, status: 'absent' },
      { id: 'credentials-file', label: '/home/me/.dsh/.credentials.yaml', writable: true, status: 'absent' },
    ],
  }),
})

async function mounted(base: string, key: string | undefined) {
  const ctx = new Context()
  await ctx.plugin(WebRuntime, {})
  const provider = createProvider(DeepSeek.Config({ baseURL: base }), () =>
    reader(key ? { DEEPSEEK_API_KEY: key } : {}),
  )
  await ctx.plugin({
    name: 'deepseek-under-test',
    inject: ['web'],
    apply: (c: Context) => void c.web.registerSearchProvider(provider),
  })
  return ctx
}

describe('web-search-deepseek', () => {
  it('sends the documented Messages request with the server web search tool and maps hits, citations and the answer', async () => {
    const { base, received } = await fakeMessages((req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(documented(String((req.body.messages as Array<{ content: string }>)[0].content)))),
    )
    const ctx = await mounted(base, 'sk-ds-test')
    const result = await ctx.web.search({ query: 'node 22 release notes', maxResults: 5 })
    expect(received).toHaveLength(1)
    expect(received[0].headers['anthropic-version']).toBe('2023-06-01')
    expect(received[0].headers['content-type']).toBe('application/json')
    expect(received[0].body).toEqual({
      model: 'deepseek-v4-flash',
      max_tokens: 2048,
      system: expect.stringContaining('Search the web'),
      messages: [{ role: 'user', content: 'node 22 release notes' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
    })
    expect(result).toEqual({
      provider: 'deepseek',
      query: 'node 22 release notes',
      answer: 'I will search for that.Node.js 22 added require(esm) behind a flag.',
      hits: [
        {
          title: 'Node.js 22 released',
          url: 'https://nodejs.org/en/blog/release/v22.0.0',
          published: 'April 24, 2024',
          snippet: 'Support require()ing synchronous ESM graphs behind --experimental-require-module.',
        },
        { title: 'What is new in Node 22', url: 'https://example.org/node22' },
      ],
    })
  })

  it('is not ready without a key, and says where to set it', async () => {
    const { base, received } = await fakeMessages(() => undefined)
    const ctx = await mounted(base, undefined)
    const error = await ctx.web.search({ query: 'x', maxResults: 3 }).catch((e: WebError) => e)
    expect(error).toBeInstanceOf(WebError)
    expect((error as WebError).code).toBe('NO_PROVIDER')
    expect((error as WebError).message).toBe(
      'web search is not configured: no search provider has a key (deepseek: set DEEPSEEK_API_KEY (export DEEPSEEK_API_KEY=... in the environment; /home/me/.dsh/.credentials.yaml)).',
    )
    expect(received).toEqual([])
  })

  it('a refused key is INVALID_CREDENTIAL and the key never appears in the message', async () => {
    const { base } = await fakeMessages(() => undefined)
    const provider = createProvider(DeepSeek.Config({ baseURL: base }), () =>
      reader({ DEEPSEEK_API_KEY: 'sk-ds-wrong' }),
    )
    const error = (await provider.search({ query: 'x', maxResults: 3 }).catch((e) => e)) as WebError
    expect(error.code).toBe('INVALID_CREDENTIAL')
    expect(error.message).toBe('deepseek: the key was refused (HTTP 401): invalid x-api-key [redacted]')
  })

  it('maps a web search tool error, HTTP errors and malformed answers to stable codes', async () => {
    let mode = 'tool-error'
    const { base } = await fakeMessages((_req, res) => {
      if (mode === 'tool-error') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            type: 'message',
            content: [
              { type: 'server_tool_use', id: 's1', name: 'web_search', input: { query: 'x' } },
              {
                type: 'web_search_tool_result',
                tool_use_id: 's1',
                content: { type: 'web_search_tool_result_error', error_code: 'too_many_requests' },
              },
            ],
          }),
        )
      } else if (mode === 'overloaded')
        res
          .writeHead(529, { 'content-type': 'application/json' })
          .end(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }))
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"type":"message"}')
    })
    const provider = createProvider(DeepSeek.Config({ baseURL: base }), () =>
      reader({ DEEPSEEK_API_KEY: 'sk-ds-test' }),
    )
    const codeOf = async () => (await provider.search({ query: 'x', maxResults: 3 }).catch((e) => e)) as WebError
    expect((await codeOf()).code).toBe('RATE_LIMIT')
    mode = 'overloaded'
    expect(await codeOf()).toMatchObject({ code: 'HTTP_ERROR', message: 'deepseek: HTTP 529: Overloaded' })
    mode = 'malformed'
    expect((await codeOf()).code).toBe('BAD_RESPONSE')
  })

  it('forwards cancellation', async () => {
    const { base } = await fakeMessages(() => undefined)
    const provider = createProvider(DeepSeek.Config({ baseURL: base }), () =>
      reader({ DEEPSEEK_API_KEY: 'sk-ds-test' }),
    )
    const controller = new AbortController()
    const pending = provider.search({ query: 'slow', maxResults: 3 }, { signal: controller.signal })
    setTimeout(() => controller.abort(), 30)
    expect(((await pending.catch((e) => e)) as WebError).code).toBe('ABORTED')
  })

  it('keeps only maxResults hits', () => {
    expect(mapResponse('deepseek', 'q', documented('q'), 1).hits).toHaveLength(1)
  })

  it('the plugin reads the key through ctx.credentials when mounted, else the environment', async () => {
    const { base } = await fakeMessages((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(documented('q'))),
    )
    const ctx = new Context()
    await ctx.plugin(WebRuntime, {})
    await ctx.plugin(DeepSeek, { baseURL: base, apiKeyEnv: 'DSH_TEST_DEEPSEEK_SEARCH_KEY' })
    expect(await ctx.web.searchProviders()).toEqual([
      {
        id: 'deepseek',
        status: {
          ready: false,
          reason: 'set DSH_TEST_DEEPSEEK_SEARCH_KEY (export DSH_TEST_DEEPSEEK_SEARCH_KEY=... in the environment)',
        },
      },
    ])
    process.env.DSH_TEST_DEEPSEEK_SEARCH_KEY = 'sk-ds-test'
    try {
      expect((await ctx.web.search({ query: 'q', maxResults: 2 })).hits).toHaveLength(2)
    } finally {
      delete process.env.DSH_TEST_DEEPSEEK_SEARCH_KEY
    }
  })
})
