// End to end: a real agent loop (agent-loop-testkit) on an llm-pi-ai route served by the mock
// server, with a tool call executed by the tool registry and its result sent back.
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import * as LlmPiAi from '../src/index.ts'

const ENV = 'DSH_TEST_PI_AI_LOOP_KEY'
let server: MockServer | undefined
let harness: Harness | undefined

afterEach(async () => {
  await harness?.dispose()
  await server?.close()
  harness = undefined
  server = undefined
  delete process.env[ENV]
})

const lookupTool = {
  name: 'lookup-tool',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register<{ word: string }>({
      name: 'lookup',
      description: 'Looks a word up.',
      parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
      execute: ({ word }) => ({ content: `${word}: a small bird` }),
    })
  },
}

describe('llm-pi-ai in the agent loop', () => {
  it('answers a task with one tool call on an openai-compatible route', async () => {
    server = await startMockServer({
      steps: [
        {
          expect: { tools: ['lookup'], lastRole: 'user' },
          toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"word":"wren"}', split: 3 }],
        },
        { expect: { lastRole: 'tool', lastContains: 'a small bird' }, text: 'A wren is a small bird.' },
      ],
    })
    process.env[ENV] = 'sk-loop'
    harness = await createHarness({
      plugins: [
        [lookupTool],
        [
          LlmPiAi,
          {
            routes: {
              gateway: {
                provider: 'openai-compatible',
                baseURL: server.baseURL,
                apiKeyEnv: ENV,
                models: [{ id: 'gw-model', contextWindow: 65_536 }],
              },
            },
          },
        ],
      ],
    })
    const agent = harness.ctx.agents.create({ cwd: process.cwd(), model: { provider: 'gateway', model: 'gw-model' } })
    const result = await agent.send('What is a wren?')
    await agent.dispose()
    expect(result).toMatchObject({ reason: 'completed', text: 'A wren is a small bird.' })
    expect(server.requests.map((r) => r.outcome)).toEqual(['served', 'served'])
    const second = server.requests[1].body as { messages: { role: string; tool_call_id?: string; content?: unknown }[] }
    expect(second.messages.find((m) => m.role === 'tool')).toMatchObject({ tool_call_id: 'call_1' })
  })

  it('ends the turn with the mapped error when the key is missing, without a request', async () => {
    server = await startMockServer({ steps: [{ text: 'never' }] })
    harness = await createHarness({
      plugins: [
        [
          LlmPiAi,
          {
            routes: {
              gateway: {
                provider: 'openai-compatible',
                baseURL: server.baseURL,
                apiKeyEnv: ENV,
                models: [{ id: 'gw-model', contextWindow: 65_536 }],
              },
            },
          },
        ],
      ],
    })
    const agent = harness.ctx.agents.create({ cwd: process.cwd(), model: { provider: 'gateway', model: 'gw-model' } })
    const result = await agent.send('hi')
    await agent.dispose()
    expect(result.reason).toBe('error')
    expect(result.error).toMatchObject({ code: 'MISSING_CREDENTIAL' })
    expect(server.requests).toHaveLength(0)
  })
})
