// A foreground subagent seen from an ACP client: its `subagent` tool call receives in_progress
// updates that follow the child (its tool calls by title, its latest text) before the result.
import { mkdtempSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import * as acp from '@agentclientprotocol/sdk'
import { createHarness, SCRIPTED_MODEL, SCRIPTED_PROVIDER, type Harness } from '@dsh/agent-loop-testkit'
import AgentDefaultModel from '@dsh/agent-default-model'
import ApprovalService from '@dsh/user-approval'
import SubagentService from '@dsh/subagent'
import * as ToolSubagent from '@dsh/tool-subagent'
import AcpServer from '../src/index.ts'
import { progressText } from '../src/child-progress.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

it("streams a foreground child's tool calls and text into its subagent tool call, then the result", async () => {
  harness = await createHarness({
    script: [
      {
        toolCalls: [
          {
            name: 'subagent',
            arguments: { description: 'survey the agents', prompt: 'list the agents' },
            callId: 'call_sub',
          },
        ],
      },
      { toolCalls: [{ name: 'list_agents', arguments: {} }] },
      { text: 'the child found nothing to list' },
      { text: 'parent done' },
    ],
    plugins: [
      [AgentDefaultModel, { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL }],
      [ApprovalService, {}],
      [SubagentService, { timeoutMs: 0 }],
      [ToolSubagent, {}],
    ],
  })
  await harness.mount(AcpServer, { stdio: false })
  const a = new TransformStream<Uint8Array, Uint8Array>()
  const b = new TransformStream<Uint8Array, Uint8Array>()
  harness.ctx.acp.connect(acp.ndJsonStream(a.writable, b.readable))
  const updates: acp.SessionNotification[] = []
  const conn = acp
    .client({ name: 't' })
    .onNotification('session/update', ({ params }) => void updates.push(params))
    .connect(acp.ndJsonStream(b.writable, a.readable))
  await conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-sub-')))
  const { sessionId } = await conn.agent.request('session/new', { cwd, mcpServers: [] })
  expect(
    (await conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'delegate' }] }))
      .stopReason,
  ).toBe('end_turn')

  const forCall = updates.map((u) => u.update).filter((u) => 'toolCallId' in u && u.toolCallId === 'call_sub')
  const progress = forCall.filter(
    (u) => u.sessionUpdate === 'tool_call_update' && u.status === 'in_progress' && u.content,
  )
  const texts = progress.map((u) => JSON.stringify((u as { content: unknown }).content))
  expect(texts[0]).toContain('Subagent sub-1 (spawn) is working on: survey the agents')
  expect(texts.some((t) => t.includes('- list_agents'))).toBe(true)
  expect(texts.some((t) => t.includes('> the child found nothing to list'))).toBe(true)
  // The result comes last and completes the call; only the parent's session got updates.
  expect(forCall.at(-1)).toMatchObject({ sessionUpdate: 'tool_call_update', status: 'completed' })
  expect(new Set(updates.map((u) => u.sessionId))).toEqual(new Set([sessionId]))
})

it('progressText keeps the last tool calls and clips the latest text', () => {
  const lines = Array.from({ length: 12 }, (_, i) => `step ${i}`)
  const text = progressText({ id: 'sub-2', provider: 'fork', description: 'd' }, lines, 'x'.repeat(500))
  expect(text.split('\n')).toHaveLength(1 + 8 + 1)
  expect(text).toContain('- step 11')
  expect(text).not.toContain('- step 3\n')
  expect(text.endsWith('...')).toBe(true)
})
