// End-to-end through the real `dsh --profile headless` bin: the base bundle's web rows, with a
// --patch that lets web-fetch-http reach 127.0.0.1 (refused by default); the model is
// @dsh/llm-mock-server, which calls web_fetch on a page served locally and then web_search with
// no search key configured.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let model: MockServer | undefined
let site: Server | undefined
afterEach(async () => {
  await model?.close()
  model = undefined
  site?.closeAllConnections()
  await new Promise((r) => (site ? site.close(r) : r(undefined)))
  site = undefined
})

const call = (id: string, name: string, args: object) => ({ toolCalls: [{ id, name, arguments: args }] })

function toolText(i: number, callId: string): string {
  const messages = (
    model!.requests[i].body as { messages: Array<{ role: string; content: string; tool_call_id?: string }> }
  ).messages
  return messages.find((m) => m.role === 'tool' && m.tool_call_id === callId)?.content ?? '(none)'
}

it('the model fetches a local page through the real bin and reads it as Markdown', { timeout: 90_000 }, async () => {
  site = createServer((req, res) => {
    if (req.url === '/old') return void res.writeHead(301, { location: '/guide' }).end()
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(
      '<html><head><title>Guide</title></head><body><h2>Setup</h2><p>Use <a href="/api">the API</a> with <strong>care</strong>.</p></body></html>',
    )
  })
  await new Promise<void>((r) => site!.listen(0, '127.0.0.1', r))
  const page = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-web-e2e-')))
  const cwd = join(root, 'work')
  mkdirSync(cwd)
  const patch = join(root, 'loopback.patch.yml')
  // workerMinChars 0: the page converts in the worker thread of the built package.
  writeFileSync(
    patch,
    '- id: web-fetch-http\n  config:\n    allowedRanges: [127.0.0.1/32]\n- id: tool-web\n  config:\n    workerMinChars: 0\n',
  )
  model = await startMockServer({
    steps: [
      call('f1', 'web_fetch', { url: `${page}/old` }),
      call('s1', 'web_search', { queries: ['dsh harness'] }),
      call('f2', 'web_fetch', { url: page.replace('127.0.0.1', '127.0.0.2') }),
      { text: 'read it' },
    ] as never,
  })
  const run = await runDsh(['--profile', 'headless', '--patch', patch, '--output-format', 'json', 'read the guide'], {
    cwd,
    env: {
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: model.baseURL,
      DEEPSEEK_API_KEY: 'x',
      EXA_API_KEY: '',
      PERPLEXITY_API_KEY: '',
    },
  })
  expect(run.stderr).toBe('')
  expect(JSON.parse(run.stdout)).toMatchObject({ result: 'read it', reason: 'completed' })
  // Both tools are deferred (@dsh/tool-deferral): listed in load_tools' catalogue, called directly.
  const offered = (
    (model.requests[0].body as { tools?: Array<{ function: { name: string; description: string } }> }).tools ?? []
  ).find((t) => t.function.name === 'load_tools')?.function.description
  expect(offered).toMatch(/^- web_fetch: /m)
  expect(offered).toMatch(/^- web_search: /m)
  expect(toolText(1, 'f1')).toBe(
    `URL: ${page}/guide\nRedirected from: ${page}/old (1 redirect)\nStatus: 200 OK\nContent-Type: text/html (converted to Markdown)\nTitle: Guide\n\n## Setup\n\nUse [the API](${page}/api) with **care**.`,
  )
  expect(toolText(2, 's1')).toMatch(
    /^Error \[NO_PROVIDER\]: web search is not configured: no search provider has a key \(exa: set EXA_API_KEY .*; perplexity: set PERPLEXITY_API_KEY .*\)\.$/,
  )
  expect(toolText(3, 'f2')).toMatch(/^Error \[BLOCKED_ADDRESS\]: 127\.0\.0\.2 is a loopback address/)
})

it('web_search through the real bin: the Exa row pointed at a local fake, the key from the environment', {
  timeout: 90_000,
}, async () => {
  const seen: Array<{ key: string | undefined; body: unknown }> = []
  site = createServer((req, res) => {
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      seen.push({ key: req.headers['x-api-key'] as string | undefined, body: JSON.parse(raw) })
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          requestId: 'r1',
          results: [
            {
              id: 'a',
              title: 'Cordis 4 docs',
              url: 'https://cordis.example/docs',
              publishedDate: '2026-02-01T00:00:00.000Z',
              highlights: ['Fibers unwind every effect.'],
            },
          ],
        }),
      )
    })
  })
  await new Promise<void>((r) => site!.listen(0, '127.0.0.1', r))
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-web-e2e-')))
  const cwd = join(root, 'work')
  mkdirSync(cwd)
  const patch = join(root, 'exa.patch.yml')
  writeFileSync(
    patch,
    `- id: web-search-exa\n  config:\n    baseURL: http://127.0.0.1:${(site.address() as AddressInfo).port}\n`,
  )
  model = await startMockServer({
    steps: [call('s', 'web_search', { queries: ['cordis fibers'], max_results: 3 }), { text: 'found' }] as never,
  })
  const run = await runDsh(['--profile', 'headless', '--patch', patch, '--output-format', 'json', 'search'], {
    cwd,
    env: {
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: model.baseURL,
      DEEPSEEK_API_KEY: 'x',
      EXA_API_KEY: 'exa-e2e-key',
      PERPLEXITY_API_KEY: '',
    },
  })
  expect(run.stderr).toBe('')
  expect(JSON.parse(run.stdout)).toMatchObject({ result: 'found', reason: 'completed' })
  expect(seen).toEqual([
    { key: 'exa-e2e-key', body: expect.objectContaining({ query: 'cordis fibers', numResults: 3 }) },
  ])
  expect(toolText(1, 's')).toBe(
    'Web search results (via exa). Cite the URLs you use; fetch a page with web_fetch for its full text.\n\n## "cordis fibers"\n1. Cordis 4 docs\n   https://cordis.example/docs\n   Published: 2026-02-01\n   Fibers unwind every effect.',
  )
})
