// The `acp` provider with the real `dsh-acp` bin as the child (its model is @dsh/llm-mock-server),
// driven through the official ACP SDK client; the parent is a real in-process agent.
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import SubagentService, { SubagentError } from '@dsh/subagent'
import * as SubagentAcp from '../src/index.ts'
import LocalSubprocess from '@dsh/subprocess-local'

const dshAcp = fileURLToPath(new URL('../node_modules/@dsh/acp-app/bin/dsh-acp.mjs', import.meta.url))
const diesMidTurn = fileURLToPath(new URL('./fixtures/dies-mid-turn.mjs', import.meta.url))

let harness: Harness | undefined
let server: MockServer | undefined
afterEach(async () => {
  await harness?.dispose()
  await server?.close()
  harness = undefined
  server = undefined
})

async function boot(steps: unknown[], command?: string[]) {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-subagent-acp-')))
  server = await startMockServer({ steps: steps as never })
  harness = await createHarness({
    cwd,
    plugins: [
      [LocalSubprocess, {}],
      [SubagentService, { timeoutMs: 0 }],
      [
        SubagentAcp,
        {
          command: command ?? [process.execPath, dshAcp],
          env: { DSH_HOME: join(cwd, 'home'), DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
          stopGraceMs: 500,
        },
      ],
    ],
  })
  return { h: harness, cwd }
}

describe('subagent provider acp', () => {
  it('a dsh-acp child runs a tool and its final answer comes back', { timeout: 60_000 }, async () => {
    const { h, cwd } = await boot([
      { text: 'Let me look.', toolCalls: [{ id: 'r1', name: 'read', arguments: { file_path: 'note.txt' } }] },
      { expect: { lastContains: 'acp-secret' }, text: 'The note says acp-secret.' },
    ])
    writeFileSync(join(cwd, 'note.txt'), 'acp-secret\n')
    const record = await h.ctx.subagents.run({
      parent: h.agent,
      provider: 'acp',
      description: 'read note',
      prompt: 'what does note.txt say?',
    })
    expect(record).toMatchObject({ provider: 'acp', status: 'completed', text: 'The note says acp-secret.', depth: 1 })
    expect(record.sessionId).toBeTypeOf('string')
    expect(server!.requests).toHaveLength(2)
    expect(h.session.events.filter((e) => e.type === 'subagent/finished').map((e) => e.data)).toEqual([
      expect.objectContaining({ status: 'completed' }),
    ])
  })

  it('interrupting a child that waits for its model cancels it through session/cancel', {
    timeout: 60_000,
  }, async () => {
    const { h } = await boot([{ events: [{ stall: true }] }])
    const started = await h.ctx.subagents.start({
      parent: h.agent,
      provider: 'acp',
      description: 'stall',
      prompt: 'wait forever',
    })
    while (server!.requests.length < 1) await new Promise((r) => setTimeout(r, 20))
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    expect(await started.finished).toMatchObject({ status: 'cancelled', error: { code: 'INTERRUPTED' } })
  })

  it('a child process that exits mid-turn fails CHILD_EXITED with its last stderr line', {
    timeout: 60_000,
  }, async () => {
    const { h } = await boot([], [process.execPath, diesMidTurn])
    const record = await h.ctx.subagents.run({ parent: h.agent, provider: 'acp', description: 'dies', prompt: 'go' })
    expect(record.status).toBe('failed')
    expect(record.error?.code).toBe('CHILD_EXITED')
    expect(record.error?.message).toBe('the ACP agent exited with code 3: fake agent: out of memory')
    expect(record.text).toBe('starting')
  })

  it('an executable that does not exist is a START_FAILED refusal', { timeout: 60_000 }, async () => {
    const { h } = await boot([], ['/nonexistent/acp-agent'])
    const error = await h.ctx.subagents
      .start({ parent: h.agent, provider: 'acp', description: 'x', prompt: 'y' })
      .catch((e: unknown) => e)
    expect(SubagentError.is(error)).toBe(true)
    expect(error).toMatchObject({ code: 'START_FAILED' })
    expect((error as Error).message).toMatch(
      /^provider "acp" could not start the child: spawn \/nonexistent\/acp-agent ENOENT/,
    )
  })

  it("passes the parent's layers only to a dsh-acp child (auto): another ACP agent gets its own argv", () => {
    expect(SubagentAcp.runsDshAcp(['dsh-acp'])).toBe(true)
    expect(SubagentAcp.runsDshAcp([process.execPath, dshAcp])).toBe(true)
    expect(SubagentAcp.runsDshAcp([process.execPath, diesMidTurn])).toBe(false)
    expect(SubagentAcp.runsDshAcp(['my-dsh-acp-wrapper', '--stdio'])).toBe(false)
  })
})
