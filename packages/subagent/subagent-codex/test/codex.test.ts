// The `codex` provider against a fake `codex app-server` that speaks its JSON-RPC wire
// (test/fixtures/fake-codex.mjs, which enforces the handshake order): a real child process per run.
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import SubagentService, { SubagentError } from '@dsh/subagent'
import * as ToolSubagent from '@dsh/tool-subagent'
import * as Codex from '../src/index.ts'
import LocalSubprocess from '@dsh/subprocess-local'

const FAKE = fileURLToPath(new URL('./fixtures/fake-codex.mjs', import.meta.url))

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function boot(config: Partial<Codex.SubagentCodexConfig> = {}, script?: ScriptEntry[]) {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-codex-')))
  writeFileSync(join(cwd, 'note.txt'), 'secret-77\n')
  harness = await createHarness({
    cwd,
    ...(script ? { script } : {}),
    plugins: [
      [LocalSubprocess, {}],
      [SubagentService, { timeoutMs: 0 }],
      [ToolSubagent, {}],
      [Codex, { command: FAKE, ...config }],
    ],
  })
  return harness
}

describe('subagent provider codex', () => {
  it('the subagent tool runs a codex child in the workspace; its streamed answer and usage come back', async () => {
    const h = await boot({}, [
      {
        toolCalls: [
          {
            name: 'subagent',
            arguments: { description: 'read the note', prompt: 'what does note.txt say?', provider: 'codex' },
            callId: 'c1',
          },
        ],
      },
      { text: 'done' },
    ])
    await h.prompt('delegate to codex')
    const result = h.session.events.find((e) => e.type === 'tool/result')!
    expect(JSON.stringify(result.data)).toContain('codex read the note: secret-77')
    const [record] = h.ctx.subagents.list(h.agent)
    expect(record).toMatchObject({
      provider: 'codex',
      status: 'completed',
      sessionId: 'thr_fake_1',
      usage: { input: 200, output: 40, cacheRead: 80, reasoning: 12 },
    })
  })

  it('declines the approval requests the app-server sends (nobody can answer them in a delegated run)', async () => {
    const h = await boot()
    const record = await h.ctx.subagents.run({
      parent: h.agent,
      provider: 'codex',
      description: 'd',
      prompt: 'FAKE:approve then read',
    })
    expect(record).toMatchObject({ status: 'completed', text: 'approval decline; codex read the note: secret-77' })
  })

  it('a failed turn fails the child with its message; a crash fails it with the stderr line', async () => {
    const h = await boot()
    const failed = await h.ctx.subagents.run({
      parent: h.agent,
      provider: 'codex',
      description: 'd',
      prompt: 'FAKE:fail',
    })
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'CODEX_TURN_FAILED', message: 'usage limit reached' },
    })
    const crashed = await h.ctx.subagents.run({
      parent: h.agent,
      provider: 'codex',
      description: 'd',
      prompt: 'FAKE:crash',
    })
    expect(crashed).toMatchObject({ status: 'failed', error: { code: 'CHILD_EXITED' } })
    expect(crashed.error!.message).toContain('crashed on purpose')
  })

  it('interrupting a running child sends turn/interrupt and ends it cancelled', async () => {
    const h = await boot()
    const started = await h.ctx.subagents.start({
      parent: h.agent,
      provider: 'codex',
      description: 'd',
      prompt: 'FAKE:hang',
    })
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    expect(await started.finished).toMatchObject({ status: 'cancelled', error: { code: 'INTERRUPTED' } })
  })

  it('a missing executable or a server that refuses the handshake is a START_FAILED refusal', async () => {
    const h = await boot({ command: '/nonexistent/codex' })
    const missing = await h.ctx.subagents
      .start({ parent: h.agent, provider: 'codex', description: 'd', prompt: 'p' })
      .catch((e: unknown) => e)
    expect(SubagentError.is(missing)).toBe(true)
    expect(missing).toMatchObject({
      code: 'START_FAILED',
      message: expect.stringContaining('"/nonexistent/codex" was not found'),
    })
    await harness!.dispose()
    const h2 = await boot({ args: ['serve'] })
    const refused = await h2.ctx.subagents
      .start({ parent: h2.agent, provider: 'codex', description: 'd', prompt: 'p' })
      .catch((e: unknown) => e)
    expect(refused).toMatchObject({ code: 'START_FAILED', message: expect.stringContaining('expects "app-server"') })
  })

  describe('a child is confined like its parent', () => {
    const run = async (
      h: Harness,
      mode: 'read-only' | 'workspace-write' | 'danger-full-access',
      config: Partial<Codex.SubagentCodexConfig> = {},
    ) => {
      const provider = Codex.codexProvider(h.ctx, { ...Codex.Config({}), command: FAKE, ...config })
      const link = {
        id: 'sub-9',
        provider: 'codex',
        parentSessionId: h.session.id,
        parentAgentId: h.agent.id,
        depth: 1,
      }
      const inherit = {
        mode,
        patchFiles: [],
        depth: 1,
        maxDepth: 2,
        env: { DSH_PERMISSION_MODE: mode, DSH_SUBAGENT_DEPTH: '1', DSH_SUBAGENT_MAX_DEPTH: '2' },
      }
      const child = await provider.start({ parent: h.agent, link, description: 'd', prompt: 'FAKE:report', inherit })
      const outcome = await child.result
      await child.dispose()
      return outcome.text
    }

    it("the thread's sandbox is never looser than the parent's mode", async () => {
      const h = await boot()
      expect(await run(h, 'read-only', { sandbox: 'danger-full-access' })).toMatch(/^sandbox=read-only /)
      expect(await run(h, 'workspace-write', { sandbox: 'danger-full-access' })).toMatch(/^sandbox=workspace-write /)
      expect(await run(h, 'danger-full-access', { sandbox: 'workspace-write' })).toMatch(/^sandbox=workspace-write /)
      expect(await run(h, 'danger-full-access', { sandbox: 'danger-full-access' })).toMatch(
        /^sandbox=danger-full-access /,
      )
    })

    it("the child sees its own credentials and the depth, not the parent's other secrets", async () => {
      process.env.SECRET_PROBE_TOKEN = 'do-not-leak'
      process.env.OPENAI_API_KEY = 'the-child-needs-this'
      try {
        const h = await boot()
        expect(await run(h, 'workspace-write')).toMatch(
          /SECRET_PROBE_TOKEN=unset OPENAI_API_KEY=set DSH_SUBAGENT_DEPTH=set$/,
        )
      } finally {
        delete process.env.SECRET_PROBE_TOKEN
        delete process.env.OPENAI_API_KEY
      }
    })
  })
})
