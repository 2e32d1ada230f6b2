// The Perplexity search provider against a local fake of `POST /chat/completions` written from
// Perplexity's documented OpenAI-compatible shapes (Bearer auth; choices[].message, citations[],
// search_results[] with title, url, date, snippet), through the real ctx.web seam.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import WebRuntime, { WebError } from '@dsh/web'
import type { CredentialReader } from '@dsh/web/http'
import * as Perplexity from '../src/index.ts'
import { createProvider, mapResponse } from '../src/index.ts'

interface Received {
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

async function fakePerplexity(
  answer: (req: Received, res: ServerResponse) => void,
): Promise<{ base: string; received: Received[] }> {
  const received: Received[] = []
  server = createServer((req, res) => {
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/chat/completions') return void res.writeHead(404).end()
      const entry = { headers: req.headers, body: JSON.parse(raw || '{}') }
      received.push(entry)
      if (req.headers.authorization !== 'Bearer pplx-test')
        return void res
          .writeHead(401, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'Invalid API key provided', type: 'invalid_api_key', code: 401 } }))
      answer(entry, res)
    })
  })
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }
}

const documented = {
  id: '3c90c3cc-0d44-4b50-8888-8dd25736052a',
  model: 'sonar',
  created: 1760000000,
  object: 'chat.completion',
  choices: [
    {
      index: 0,
      finish_reason: 'stop',
      message: { role: 'assistant', content: 'TypeScript 6.0 is the last release before the Go port [1][2].' },
    },
  ],
  citations: ['https://devblogs.microsoft.com/typescript/announcing-typescript-6-0/', 'https://example.com/ts-7'],
  search_results: [
    {
      title: 'Announcing TypeScript 6.0',
      url: 'https://devblogs.microsoft.com/typescript/announcing-typescript-6-0/',
      date: '2026-03-10',
      last_updated: '2026-03-11',
      snippet: 'TypeScript 6.0 prepares for the native port.',
    },
  ],
  usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42, search_context_size: 'low' },
}

const reader = (values: Record<string, string>): CredentialReader => ({
  get: async (name) => values[name],
  describe: async () => ({ layers: [{ id: 'env', label: 'the environment', writable: false, status: 'absent' }] }),
})

describe('web-search-perplexity', () => {
  it('sends a Bearer chat completion and maps answer, search_results and the remaining citations', async () => {
    const { base, received } = await fakePerplexity((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(documented)),
    )
    const ctx = new Context()
    await ctx.plugin(WebRuntime, {})
    const provider = createProvider(Perplexity.Config({ baseURL: base }), () =>
      reader({ PERPLEXITY_API_KEY: 'pplx-test' }),
    )
    await ctx.plugin({
      name: 'pplx-under-test',
      inject: ['web'],
      apply: (c: Context) => void c.web.registerSearchProvider(provider),
    })
    const result = await ctx.web.search({ query: 'typescript 6 release', maxResults: 5 })
    expect(received[0].body).toEqual({
      model: 'sonar',
      max_tokens: 1024,
      messages: [
        { role: 'system', content: expect.any(String) },
        { role: 'user', content: 'typescript 6 release' },
      ],
    })
    expect(result).toEqual({
      provider: 'perplexity',
      query: 'typescript 6 release',
      answer: 'TypeScript 6.0 is the last release before the Go port [1][2].',
      hits: [
        {
          title: 'Announcing TypeScript 6.0',
          url: 'https://devblogs.microsoft.com/typescript/announcing-typescript-6-0/',
          published: '2026-03-10',
          snippet: 'TypeScript 6.0 prepares for the native port.',
        },
        { title: 'https://example.com/ts-7', url: 'https://example.com/ts-7' },
      ],
    })
  })

  it('a missing key fails before any request; a refused one is INVALID_CREDENTIAL', async () => {
    const { base, received } = await fakePerplexity(() => undefined)
    const none = createProvider(Perplexity.Config({ baseURL: base }), () => reader({}))
    expect(await none.status()).toEqual({
      ready: false,
      reason: 'set PERPLEXITY_API_KEY (export PERPLEXITY_API_KEY=... in the environment)',
    })
    const missing = (await none.search({ query: 'q', maxResults: 2 }).catch((e) => e)) as WebError
    expect(missing).toMatchObject({
      code: 'MISSING_CREDENTIAL',
      message:
        'perplexity web search needs an API key: set PERPLEXITY_API_KEY (export PERPLEXITY_API_KEY=... in the environment).',
    })
    expect(received).toEqual([])
    const wrong = createProvider(Perplexity.Config({ baseURL: base }), () =>
      reader({ PERPLEXITY_API_KEY: 'pplx-wrong' }),
    )
    expect((await wrong.search({ query: 'q', maxResults: 2 }).catch((e) => e)) as WebError).toMatchObject({
      code: 'INVALID_CREDENTIAL',
      message: 'perplexity: the key was refused (HTTP 401): Invalid API key provided',
    })
  })

  it('an unreachable endpoint is TRANSPORT; an answer without choices is BAD_RESPONSE', async () => {
    const closed = createProvider(Perplexity.Config({ baseURL: 'http://127.0.0.1:9' }), () =>
      reader({ PERPLEXITY_API_KEY: 'pplx-test' }),
    )
    expect(((await closed.search({ query: 'q', maxResults: 2 }).catch((e) => e)) as WebError).code).toBe('TRANSPORT')
    expect(() => mapResponse('perplexity', 'q', { citations: [] }, 3)).toThrow(WebError)
  })

  it('older answers with citations only still give hits', () => {
    expect(
      mapResponse(
        'perplexity',
        'q',
        { choices: [{ message: { content: 'x' } }], citations: ['https://a.example/', 'https://b.example/'] },
        1,
      ),
    ).toEqual({
      provider: 'perplexity',
      query: 'q',
      answer: 'x',
      hits: [{ title: 'https://a.example/', url: 'https://a.example/' }],
    })
  })
})
