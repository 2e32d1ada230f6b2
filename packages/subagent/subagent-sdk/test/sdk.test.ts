// The `sdk` provider with the real `dsh-jsonrpc-agent` bin as the child (its model is
// @dsh/llm-mock-server), driven through @dsh/sdk-client; the parent is a real in-process agent.
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import SubagentService, { SubagentError } from '@dsh/subagent'
import * as SubagentSdk from '../src/index.ts'
import LocalSubprocess from '@dsh/subprocess-local'

let harness: Harness | undefined
let server: MockServer | undefined
afterEach(async () => {
  await harness?.dispose()
  await server?.close()
  harness = undefined
  server = undefined
})

async function boot(steps: unknown[], extra: Partial<SubagentSdk.SubagentSdkConfig> = {}) {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-subagent-sdk-')))
  server = await startMockServer({ steps: steps as never })
  harness = await createHarness({
    cwd,
    plugins: [
      [LocalSubprocess, {}],
      [SubagentService, { timeoutMs: 0 }],
      // The parent runs on the in-process scripted model, which the child does not have.
      [
        SubagentSdk,
        {
          inheritModel: false,
          env: { DSH_HOME: join(cwd, 'home'), DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
          ...extra,
        },
      ],
    ],
  })
  return { h: harness, cwd }
}

describe('subagent provider sdk', () => {
  it('a dsh-jsonrpc-agent child runs a tool and its answer and usage come back', { timeout: 60_000 }, async () => {
    const { h, cwd } = await boot([
      {
        toolCalls: [{ id: 'r1', name: 'read', arguments: { file_path: 'note.txt' } }],
        usage: { prompt: 100, completion: 10 },
      },
      {
        expect: { lastContains: 'sdk-secret' },
        text: 'The note says sdk-secret.',
        usage: { prompt: 120, completion: 8 },
      },
    ])
    writeFileSync(join(cwd, 'note.txt'), 'sdk-secret\n')
    const record = await h.ctx.subagents.run({
      parent: h.agent,
      provider: 'sdk',
      description: 'read note',
      prompt: 'what does note.txt say?',
    })
    expect(record).toMatchObject({ provider: 'sdk', status: 'completed', text: 'The note says sdk-secret.' })
    expect(record.sessionId).toBeTypeOf('string')
    expect(record.usage).toMatchObject({ input: 220, output: 18 })
  })

  it('interrupting a child that waits for its model cancels its turn', { timeout: 60_000 }, async () => {
    const { h } = await boot([{ events: [{ stall: true }] }])
    const started = await h.ctx.subagents.start({
      parent: h.agent,
      provider: 'sdk',
      description: 'stall',
      prompt: 'wait forever',
    })
    while (server!.requests.length < 1) await new Promise((r) => setTimeout(r, 20))
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    expect(await started.finished).toMatchObject({ status: 'cancelled', error: { code: 'INTERRUPTED' } })
  })

  it('a server that cannot start is a START_FAILED refusal', { timeout: 60_000 }, async () => {
    const { h } = await boot([], { command: ['/nonexistent/dsh-jsonrpc-agent'] })
    const error = await h.ctx.subagents
      .start({ parent: h.agent, provider: 'sdk', description: 'x', prompt: 'y' })
      .catch((e: unknown) => e)
    expect(SubagentError.is(error)).toBe(true)
    expect(error).toMatchObject({ code: 'START_FAILED' })
  })
})
