// The Exa search provider against a local fake of `POST /search` written from Exa's documented
// request (query, numResults, type, contents.highlights) and response (results[] with title, url,
// publishedDate, author, highlights, highlightScores), through the real ctx.web seam and the real
// local credentials provider.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import WebRuntime, { type WebError } from '@dsh/web'
import LocalCredentials from '@dsh/credentials-local'
import * as Exa from '../src/index.ts'
import { mapResponse } from '../src/index.ts'

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

async function fakeExa(
  answer: (req: Received, res: ServerResponse) => void,
): Promise<{ base: string; received: Received[] }> {
  const received: Received[] = []
  server = createServer((req, res) => {
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/search') return void res.writeHead(404).end()
      const entry = { headers: req.headers, body: JSON.parse(raw || '{}') }
      received.push(entry)
      if (req.headers['x-api-key'] !== 'exa-test-key')
        return void res
          .writeHead(401, { 'content-type': 'application/json' })
          .end(JSON.stringify({ requestId: 'r', error: 'Invalid API key' }))
      answer(entry, res)
    })
  })
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }
}

const documented = {
  requestId: 'b5947044c4b78efa9552a7c89b306d95',
  resolvedSearchType: 'neural',
  results: [
    {
      title: 'Vitest 4 is out',
      url: 'https://vitest.dev/blog/vitest-4',
      publishedDate: '2025-10-22T00:00:00.000Z',
      author: 'Vitest team',
      id: 'https://vitest.dev/blog/vitest-4',
      highlights: ['Vitest 4 makes browser mode stable.', 'It drops support for Node 18.'],
      highlightScores: [0.41, 0.33],
    },
    { title: null, url: 'https://example.com/no-title', id: 'x', highlights: [], text: 'Body text of the page.' },
    { title: 'no url', id: 'y' },
  ],
  costDollars: { total: 0.005 },
}

/** A DSH_HOME whose .credentials.yaml holds `values`, mounted through @dsh/credentials-local. */
async function mounted(base: string, values: Record<string, string>) {
  const home = mkdtempSync(join(tmpdir(), 'dsh-exa-home-'))
  const cwd = join(home, 'work')
  mkdirSync(cwd)
  writeFileSync(
    join(home, '.credentials.yaml'),
    Object.entries(values)
      .map(([k, v]) => `${k}: ${v}\n`)
      .join(''),
    { mode: 0o600 },
  )
  const ctx = new Context()
  await ctx.plugin(LocalCredentials, { home, cwd })
  await ctx.plugin(WebRuntime, {})
  await ctx.plugin(Exa, { baseURL: base })
  return ctx
}

describe('web-search-exa', () => {
  it('sends the documented search request and maps results with highlights as snippets', async () => {
    const { base, received } = await fakeExa((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(documented)),
    )
    const ctx = await mounted(base, { EXA_API_KEY: 'exa-test-key' })
    const result = await ctx.web.search({ query: 'vitest 4 release', maxResults: 5 })
    expect(received[0].body).toEqual({
      query: 'vitest 4 release',
      numResults: 5,
      type: 'auto',
      contents: { highlights: { numSentences: 3, highlightsPerUrl: 2 } },
    })
    expect(result).toEqual({
      provider: 'exa',
      query: 'vitest 4 release',
      hits: [
        {
          title: 'Vitest 4 is out',
          url: 'https://vitest.dev/blog/vitest-4',
          published: '2025-10-22',
          snippet: 'Vitest 4 makes browser mode stable. … It drops support for Node 18.',
        },
        {
          title: 'https://example.com/no-title',
          url: 'https://example.com/no-title',
          snippet: 'Body text of the page.',
        },
      ],
    })
  })

  it('without a key: not ready, naming EXA_API_KEY and the credentials file', async () => {
    const { base, received } = await fakeExa(() => undefined)
    const ctx = await mounted(base, {})
    const [info] = await ctx.web.searchProviders()
    expect(info.status.ready).toBe(false)
    expect(info.status.reason).toMatch(
      /^set EXA_API_KEY \(export EXA_API_KEY=\.\.\. in the environment; .*\.credentials\.yaml/,
    )
    const error = (await ctx.web.search({ query: 'q', maxResults: 2 }).catch((e) => e)) as WebError
    expect(error.code).toBe('NO_PROVIDER')
    expect(received).toEqual([])
  })

  it('with search pinned to exa, a missing key is MISSING_CREDENTIAL', async () => {
    const { base } = await fakeExa(() => undefined)
    const ctx = new Context()
    await ctx.plugin(WebRuntime, { search: 'exa' })
    await ctx.plugin(Exa, { baseURL: base, apiKeyEnv: 'DSH_TEST_NO_SUCH_EXA_KEY' })
    const error = (await ctx.web.search({ query: 'q', maxResults: 2 }).catch((e) => e)) as WebError
    expect(error.code).toBe('MISSING_CREDENTIAL')
    expect(error.message).toMatch(/^web search provider "exa" is not ready: set DSH_TEST_NO_SUCH_EXA_KEY/)
  })

  it('maps a refused key, a rate limit and a malformed body', async () => {
    let status = 200
    const { base } = await fakeExa((_req, res) => {
      if (status === 429)
        res.writeHead(429, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Rate limit exceeded' }))
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"requestId":"x"}')
    })
    const wrong = await mounted(base, { EXA_API_KEY: 'exa-wrong-key' })
    expect(((await wrong.web.search({ query: 'q', maxResults: 2 }).catch((e) => e)) as WebError).message).toBe(
      'exa: the key was refused (HTTP 401): Invalid API key',
    )
    const ctx = await mounted(base, { EXA_API_KEY: 'exa-test-key' })
    status = 429
    expect(((await ctx.web.search({ query: 'q', maxResults: 2 }).catch((e) => e)) as WebError).code).toBe('RATE_LIMIT')
    status = 200
    expect(((await ctx.web.search({ query: 'q', maxResults: 2 }).catch((e) => e)) as WebError).code).toBe(
      'BAD_RESPONSE',
    )
  })

  it('bounds the hits to maxResults', () => {
    expect(mapResponse('exa', 'q', documented, 1).hits).toHaveLength(1)
  })
})
