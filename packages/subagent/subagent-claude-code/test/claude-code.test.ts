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
      {
        toolCalls: [
          {
            name: 'subagent',
            arguments: { description: 'read the note', prompt: 'what does note.txt say?', provider: 'claude-code' },
            callId: 'c1',
          },
        ],
      },
      { text: 'done' },
    ])
    await h.prompt('delegate to claude')
    const result = h.session.events.find((e) => e.type === 'tool/result')!
    expect(JSON.stringify(result.data)).toContain('claude read the note: secret-42 (turn 1, model claude-fake)')
    const [record] = h.ctx.subagents.list(h.agent)
    expect(record).toMatchObject({
      provider: 'claude-code',
      status: 'completed',
      usage: { input: 120, output: 30, cacheRead: 50, cacheWrite: 7 },
    })
  })

  it('passes --model and --permission-mode from the row', async () => {
    const h = await boot({ model: 'claude-sonnet-x', permissionMode: 'acceptEdits', maxTurns: 4 })
    const record = await h.ctx.subagents.run({
      parent: h.agent,
      provider: 'claude-code',
      description: 'd',
      prompt: 'read it',
    })
    expect(record.text).toContain('model claude-sonnet-x')
    expect(
      ClaudeCode.claudeArgs({ ...ClaudeCode.Config({}), model: 'm', permissionMode: 'plan', maxTurns: 4 }),
    ).toEqual([
      '-p',
      '--output-format',
      'stream-json',
      '--input-format',
      'stream-json',
      '--verbose',
      '--model',
      'm',
      '--max-turns',
      '4',
      '--permission-mode',
      'plan',
    ])
  })

  it('an error result fails the child with its subtype; a crash fails it with the stderr line', async () => {
    const h = await boot()
    const failed = await h.ctx.subagents.run({
      parent: h.agent,
      provider: 'claude-code',
      description: 'd',
      prompt: 'FAKE:fail',
    })
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'CLAUDE_ERROR_MAX_TURNS' }, usage: { input: 120 } })
    const crashed = await h.ctx.subagents.run({
      parent: h.agent,
      provider: 'claude-code',
      description: 'd',
      prompt: 'FAKE:crash',
    })
    expect(crashed).toMatchObject({ status: 'failed', error: { code: 'CHILD_EXITED' } })
    expect(crashed.error!.message).toContain('crashed on purpose')
  })

  it('a result flagged is_error fails the child even when its subtype says success', async () => {
    const h = await boot()
    const record = await h.ctx.subagents.run({
      parent: h.agent,
      provider: 'claude-code',
      description: 'd',
      prompt: 'FAKE:api-error',
    })
    expect(record).toMatchObject({
      status: 'failed',
      error: { code: 'CLAUDE_ERROR', message: 'API Error: 401 invalid x-api-key' },
    })
  })

  it('interrupting a running child ends it cancelled and ends the process', async () => {
    const h = await boot({ closeTimeoutMs: 500 })
    const started = await h.ctx.subagents.start({
      parent: h.agent,
      provider: 'claude-code',
      description: 'd',
      prompt: 'FAKE:hang',
    })
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    expect(await started.finished).toMatchObject({ status: 'cancelled', error: { code: 'INTERRUPTED' } })
  })

  it('a missing executable is a START_FAILED refusal naming the command', async () => {
    const h = await boot({ command: '/nonexistent/claude' })
    const error = await h.ctx.subagents
      .start({ parent: h.agent, provider: 'claude-code', description: 'd', prompt: 'p' })
      .catch((e: unknown) => e)
    expect(SubagentError.is(error)).toBe(true)
    expect(error).toMatchObject({
      code: 'START_FAILED',
      message: expect.stringContaining('"/nonexistent/claude" was not found'),
    })
  })

  describe('a child is confined like its parent', () => {
    const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    const inherit = (mode: 'read-only' | 'workspace-write' | 'danger-full-access') => ({
      mode,
      patchFiles: [],
      depth: 1,
      maxDepth: 2,
      env: { DSH_PERMISSION_MODE: mode, DSH_SUBAGENT_DEPTH: '1', DSH_SUBAGENT_MAX_DEPTH: '2' },
    })
    const run = async (
      h: Harness,
      mode: 'read-only' | 'workspace-write' | 'danger-full-access',
      config: Partial<ClaudeCode.SubagentClaudeCodeConfig> = {},
    ) => {
      const provider = ClaudeCode.claudeCodeProvider(h.ctx, { ...ClaudeCode.Config({}), command: FAKE, ...config })
      const link = {
        id: 'sub-9',
        provider: 'claude-code',
        parentSessionId: h.session.id,
        parentAgentId: h.agent.id,
        depth: 1,
      }
      const child = await provider.start({
        parent: h.agent,
        link,
        description: 'd',
        prompt: 'FAKE:report',
        inherit: inherit(mode),
      })
      const outcome = await child.result
      await child.dispose()
      return outcome.text
    }

    it("a read-only parent's child is refused every writing tool, and bypassPermissions is lowered", async () => {
      const h = await boot()
      // Bash in Claude Code's own sandbox (never outside it) and no hooks, above the project's settings.
      const sandboxed = JSON.stringify({
        sandbox: { enabled: true, failIfUnavailable: true, allowUnsandboxedCommands: false },
        disableAllHooks: true,
      })
      expect(await run(h, 'read-only', { permissionMode: 'bypassPermissions' })).toMatch(
        new RegExp(
          `^permission-mode=default disallowed=Bash,Edit,MultiEdit,Write,NotebookEdit settings=${escapeRegExp(sandboxed)} `,
        ),
      )
      expect(await run(h, 'workspace-write', { permissionMode: 'bypassPermissions' })).toMatch(
        new RegExp(`^permission-mode=acceptEdits disallowed=- settings=${escapeRegExp(sandboxed)} `),
      )
      expect(await run(h, 'danger-full-access', { permissionMode: 'bypassPermissions' })).toMatch(
        /^permission-mode=bypassPermissions disallowed=- settings=- /,
      )
    })

    it("the child sees its own credentials and the depth, not the parent's other secrets", async () => {
      process.env.SECRET_PROBE_TOKEN = 'do-not-leak'
      process.env.ANTHROPIC_API_KEY = 'the-child-needs-this'
      try {
        const h = await boot()
        expect(await run(h, 'workspace-write')).toMatch(
          /SECRET_PROBE_TOKEN=unset ANTHROPIC_API_KEY=set DSH_SUBAGENT_DEPTH=set$/,
        )
      } finally {
        delete process.env.SECRET_PROBE_TOKEN
        delete process.env.ANTHROPIC_API_KEY
      }
    })
  })
})
