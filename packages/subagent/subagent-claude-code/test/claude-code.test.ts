// The `claude-code` provider against a fake `claude` executable that speaks the stream-json wire
// (test/fixtures/fake-claude.mjs): a real child process per run, driven exactly as the real CLI.
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import SubagentService, { SubagentError } from '@dsh/subagent'
import * as ToolSubagent from '@dsh/tool-subagent'
import * as ClaudeCode from '../src/index.ts'
import LocalSubprocess from '@dsh/subprocess-local'

const FAKE = fileURLToPath(new URL('./fixtures/fake-claude.mjs', import.meta.url))

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function boot(config: Partial<ClaudeCode.SubagentClaudeCodeConfig> = {}, script?: ScriptEntry[]) {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-claude-code-')))
  writeFileSync(join(cwd, 'note.txt'), 'secret-42\n')
  harness = await createHarness({
    cwd,
    ...(script ? { script } : {}),
    plugins: [
      [LocalSubprocess, {}],
      [SubagentService, { timeoutMs: 0 }],
      [ToolSubagent, {}],
      [ClaudeCode, { command: FAKE, ...config }],
    ],
  })
  return harness
}

describe('subagent provider claude-code', () => {
  it('the subagent tool runs a claude child in the workspace; its result and usage come back', async () => {
    const h = await boot({}, [
      { toolCalls: [{ name: 'subagent', arguments: { description: 'read the note', prompt: 'what does note.txt say?', provider: 'claude-code' }, callId: 'c1' }] },
      { text: 'done' },
    ])
    await h.prompt('delegate to claude')
    const result = h.session.events.find((e) => e.type === 'tool/result')!
    expect(JSON.stringify(result.data)).toContain('claude read the note: secret-42 (turn 1, model claude-fake)')
    const [record] = h.ctx.subagents.list(h.agent)
    expect(record).toMatchObject({ provider: 'claude-code', status: 'completed', usage: { input: 120, output: 30, cacheRead: 50, cacheWrite: 7 } })
  })

  it('passes --model and --permission-mode from the row', async () => {
    const h = await boot({ model: 'claude-sonnet-x', permissionMode: 'acceptEdits', maxTurns: 4 })
    const record = await h.ctx.subagents.run({ parent: h.agent, provider: 'claude-code', description: 'd', prompt: 'read it' })
    expect(record.text).toContain('model claude-sonnet-x')
    expect(ClaudeCode.claudeArgs({ ...ClaudeCode.Config({}), model: 'm', permissionMode: 'plan', maxTurns: 4 })).toEqual([
      '-p', '--output-format', 'stream-json', '--input-format', 'stream-json', '--verbose', '--model', 'm', '--max-turns', '4', '--permission-mode', 'plan',
    ])
  })

  it('an error result fails the child with its subtype; a crash fails it with the stderr line', async () => {
    const h = await boot()
    const failed = await h.ctx.subagents.run({ parent: h.agent, provider: 'claude-code', description: 'd', prompt: 'FAKE:fail' })
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'CLAUDE_ERROR_MAX_TURNS' }, usage: { input: 120 } })
    const crashed = await h.ctx.subagents.run({ parent: h.agent, provider: 'claude-code', description: 'd', prompt: 'FAKE:crash' })
    expect(crashed).toMatchObject({ status: 'failed', error: { code: 'CHILD_EXITED' } })
    expect(crashed.error!.message).toContain('crashed on purpose')
  })

  it('interrupting a running child ends it cancelled and ends the process', async () => {
    const h = await boot({ closeTimeoutMs: 500 })
    const started = await h.ctx.subagents.start({ parent: h.agent, provider: 'claude-code', description: 'd', prompt: 'FAKE:hang' })
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    expect(await started.finished).toMatchObject({ status: 'cancelled', error: { code: 'INTERRUPTED' } })
  })

  it('a missing executable is a START_FAILED refusal naming the command', async () => {
    const h = await boot({ command: '/nonexistent/claude' })
    const error = await h.ctx.subagents.start({ parent: h.agent, provider: 'claude-code', description: 'd', prompt: 'p' }).catch((e: unknown) => e)
    expect(SubagentError.is(error)).toBe(true)
    expect(error).toMatchObject({ code: 'START_FAILED', message: expect.stringContaining('"/nonexistent/claude" was not found') })
  })
})
