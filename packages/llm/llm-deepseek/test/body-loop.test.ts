// The bytes the adapter sends in a real agent loop (real session, surface and persistence-free
// restore) equal a fresh full serialisation of each request, across appended steps, an edited
// tool result, a compaction-style replacement and a resumed session: the incremental body
// encoder (body.ts) must never send bytes of a history the request no longer holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LlmRequest, StreamChunk } from '@dsh/llm'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import * as DeepSeek from '../src/index.ts'
import { buildRequestBody, defaultEffortTable } from '../src/index.ts'

const ENV = 'DSH_TEST_BODY_LOOP_KEY'
const MODEL = { provider: 'deepseek-official', model: 'deepseek-v4-flash' }
const read = (path: string): MockStep => ({ toolCalls: [{ name: 'read', arguments: { file_path: path } }] })

let server: MockServer
let harness: Harness
const captured: LlmRequest[] = []

beforeAll(async () => {
  server = await startMockServer({
    steps: [
      // turn 1
      read('a.ts'),
      read('b.ts'),
      read('c.ts'),
      { text: 'read three files' },
      // turn 2, after a tool result was rewritten
      read('d.ts'),
      { text: 'read d' },
      // turn 3, after turn 1 was replaced by a summary
      read('e.ts'),
      { text: 'read e' },
      // turn 4, on a session restored from a copy of the log
      read('f.ts'),
      { text: 'read f' },
    ],
  })
  process.env[ENV] = 'sk-body-loop'
  harness = await createHarness({ plugins: [[DeepSeek, { baseURL: server.baseURL, apiKeyEnv: ENV }]] })
  await harness.mount({
    name: 'read-tool',
    inject: ['tools'],
    apply(ctx) {
      ctx.tools.register({
        name: 'read',
        description: 'reads a file',
        parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
        concurrencySafe: true,
        // Non-ASCII and escapes in results, so byte offsets and string offsets differ.
        execute: (args: { file_path: string }) => ({
          content: `${args.file_path}: "quoted" \\ tab\t 日本語 🙂\n`.repeat(30),
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

describe('llm-deepseek request bodies in a long session', () => {
  it('are byte-identical to a fresh serialisation after appends, an edit, a compaction and a resume', async () => {
    const agent = harness.ctx.agents.create({ cwd: process.cwd(), model: MODEL })
    const session = agent.session
    expect(await agent.send('read the files')).toMatchObject({ reason: 'completed', text: 'read three files' })

    // A tool result rewritten on the surface (as the tool-result pruner does).
    const second = session.events.filter((e) => e.type === 'tool/result')[1]
    if (second?.type !== 'tool/result') throw new Error('expected a second tool result')
    session.surface.replaceRange(second.seq, second.seq + 1, [
      { ...second.data.message, content: [{ type: 'text', text: '[... pruned ...]' }] },
    ])
    expect(await agent.send('read d')).toMatchObject({ reason: 'completed', text: 'read d' })

    // Turn 1's work replaced by one summary message (as a compaction does).
    const firstAnswer = session.events.find((e) => e.type === 'assistant/message')!
    const firstEnd = session.events.find((e) => e.type === 'turn/end')!
    session.surface.replaceRange(firstAnswer.seq, firstEnd.seq, [
      { role: 'user', content: [{ type: 'text', text: '[Context compacted] a, b and c were read.' }] },
    ])
    expect(await agent.send('read e')).toMatchObject({ reason: 'completed', text: 'read e' })
    await agent.dispose()

    // A resumed session: the log read back (new objects, equal content), then one more turn.
    const restored = harness.ctx.sessions.create({
      cwd: process.cwd(),
      events: JSON.parse(JSON.stringify(session.events)),
    })
    const resumed = harness.ctx.agents.create({ cwd: process.cwd(), model: MODEL, session: restored })
    expect(await resumed.send('read f')).toMatchObject({ reason: 'completed', text: 'read f' })
    await resumed.dispose()

    expect(server.requests).toHaveLength(10)
    expect(captured).toHaveLength(10)
    const options = { efforts: defaultEffortTable() }
    for (const [i, recorded] of server.requests.entries()) {
      const fresh = JSON.stringify(buildRequestBody(captured[i], options))
      expect(recorded.rawBody, `request ${i}`).toBe(fresh)
      expect(Number(recorded.headers['content-length']), `request ${i}`).toBe(Buffer.byteLength(fresh))
    }
    // The edit and the compaction are visible in what was sent.
    expect(server.requests[4].rawBody).toContain('[... pruned ...]')
    expect(server.requests[6].rawBody).toContain('a, b and c were read')
    expect(server.requests[6].rawBody).not.toContain('a.ts: ')
  })
})
