// The incremental body encoder (body.ts) against a fresh full serialisation, on the paths
// body-loop.test.ts does not take: a failed request retried by @dsh/llm-retry (the same history
// sent again), a compaction's summary request (the surface prefix as the last request carried it,
// plus the instruction, through ctx.llm.complete, as compaction-basic sends it), the replacement
// that follows, and a fork of the session (the same frozen messages in another session). Every
// body the server received must equal JSON.stringify(buildRequestBody(request)) of the request
// the adapter was given, byte for byte.
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { LlmRequest, Message, StreamChunk } from '@dsh/llm'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import * as Retry from '@dsh/llm-retry'
import * as DeepSeek from '../src/index.ts'
import { buildRequestBody, defaultEffortTable } from '../src/index.ts'

const ENV = 'DSH_TEST_BODY_RETRY_KEY'
const MODEL = { provider: 'deepseek-official', model: 'deepseek-v4-flash' }
const read = (path: string): MockStep => ({ toolCalls: [{ name: 'read', arguments: { file_path: path } }] })

let server: MockServer
let harness: Harness
const captured: LlmRequest[] = []

beforeAll(async () => {
  server = await startMockServer({
    steps: [
      // turn 1: two reads, then a server error in the middle of the turn, retried
      read('a.ts'),
      read('b.ts'),
      { error: { status: 500, message: 'upstream overloaded' } },
      read('c.ts'),
      { text: 'read three files' },
      // the summary request
      { text: 'Summary: a, b and c were read; each holds quoted text.' },
      // turn 2, on the compacted surface
      read('d.ts'),
      { text: 'read d' },
      // turn 3, in a fork taken after turn 1 (before the compaction)
      read('e.ts'),
      { text: 'read e' },
    ],
  })
  process.env[ENV] = 'sk-body-retry'
  harness = await createHarness({
    plugins: [
      [DeepSeek, { baseURL: server.baseURL, apiKeyEnv: ENV }],
      [Retry, { initialDelayMs: 1, maxDelayMs: 2, jitter: 0 }],
    ],
  })
  await harness.mount({
    name: 'read-tool',
    inject: ['tools'],
    apply(ctx) {
      ctx.tools.register({
        name: 'read',
        description: 'reads a file',
        parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
        concurrencySafe: true,
        execute: (args: { file_path: string }) => ({
          content: `${args.file_path}: "quoted" \\ 日本語 🙂 ${'x'.repeat(200)}\n`.repeat(20),
        }),
      })
    },
  })
  harness.ctx.on('llm/stream', (request: LlmRequest, next: () => AsyncIterable<StreamChunk>) => {
    captured.push(request)
    return next()
  })
})

afterAll(async () => {
  await harness?.dispose()
  await server?.close()
  delete process.env[ENV]
})

it('sends bytes equal to a fresh serialisation across a retry, a summary request, its replacement and a fork', async () => {
  const agent = harness.ctx.agents.create({ cwd: process.cwd(), model: MODEL })
  const session = agent.session
  expect(await agent.send('read the files')).toMatchObject({ reason: 'completed', text: 'read three files' })
  const turnOneEnd = session.length

  // The summary request as compaction-basic builds it: the surface prefix, then the instruction.
  const cut = session.surface.nodes.length
  const messages: Message[] = session.surface.messages().slice(0, cut)
  messages.push({ role: 'user', content: [{ type: 'text', text: 'Summarise the conversation so far.' }] })
  const header = session.last('request/header')!.data
  const response = await harness.ctx.llm.complete({
    provider: MODEL.provider,
    model: MODEL.model,
    system: header.system,
    messages,
    tools: header.tools,
    metadata: { sessionId: session.id, purpose: 'compaction' },
  })
  const summary = response.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  const first = session.surface.nodes[1]
  session.surface.replaceRange(first.seq, session.length, [
    { role: 'user', content: [{ type: 'text', text: `[Context compacted]\n\n${summary}` }] },
  ])
  expect(await agent.send('read d')).toMatchObject({ reason: 'completed', text: 'read d' })
  await agent.dispose()

  // A fork after turn 1: the same frozen events, another session and surface.
  const fork = harness.ctx.sessions.fork(session, turnOneEnd)
  const forked = harness.ctx.agents.create({ cwd: process.cwd(), model: MODEL, session: fork })
  expect(await forked.send('read e')).toMatchObject({ reason: 'completed', text: 'read e' })
  await forked.dispose()

  expect(server.requests.map((r) => r.outcome)).toEqual(Array(10).fill('served'))
  expect(captured).toHaveLength(10)
  const options = { efforts: defaultEffortTable() }
  for (const [i, recorded] of server.requests.entries()) {
    const fresh = JSON.stringify(buildRequestBody(captured[i], options))
    expect(recorded.rawBody, `request ${i}`).toBe(fresh)
    expect(Number(recorded.headers['content-length']), `request ${i}`).toBe(Buffer.byteLength(fresh))
  }
  // The retry resent the same history; the summary request ends with the instruction; after the
  // replacement the old results are gone; the fork carries turn 1 whole and nothing of turn 2.
  expect(server.requests[3].rawBody).toBe(server.requests[2].rawBody)
  expect(server.requests[5].rawBody).toContain('Summarise the conversation so far.')
  expect(server.requests[6].rawBody).toContain('[Context compacted]')
  expect(server.requests[6].rawBody).not.toContain('a.ts: ')
  expect(server.requests[8].rawBody).toContain('a.ts: ')
  expect(server.requests[8].rawBody).not.toContain('[Context compacted]')
})
