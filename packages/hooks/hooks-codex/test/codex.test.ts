// Codex hooks from a project's .codex/hooks.json, as real shell scripts on the real agent loop.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import SubprocessLocal from '@dsh/subprocess-local'
import type { HookRunRecord } from '@dsh/hook-protocol'
import * as HooksCodex from '../src/index.ts'
import HomePaths from '@dsh/home-paths'
import ProjectTrust, { TrustStore, trustAll } from '@dsh/project-trust'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const FakeEdit = {
  name: 'fake-edit',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register<{ file_path: string }>({
      name: 'edit',
      description: 'Edit a file.',
      parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
      execute: (args) => ({ content: `edited ${args.file_path}` }),
    })
  },
}

describe('@dsh/hooks-codex', () => {
  it("runs the Codex home's hooks but not the project's .codex/hooks.json until the project is trusted", async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-codex-untrusted-'))
    const cwd = join(root, 'project')
    const codexHome = join(root, 'codex-home')
    mkdirSync(join(cwd, '.codex'), { recursive: true })
    mkdirSync(codexHome)
    const hook = (command: string) =>
      JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command }] }] } })
    writeFileSync(join(codexHome, 'hooks.json'), hook(`echo user >> ${join(root, 'user.log')}`))
    writeFileSync(join(cwd, '.codex/hooks.json'), hook(`echo project >> ${join(root, 'project.log')}`))
    harness = await createHarness({
      cwd,
      script: [{ text: 'ok' }] as never,
      plugins: [
        [HomePaths, { home: join(root, 'dsh-home') }],
        [ProjectTrust, {}],
        [SubprocessLocal, {}],
        [HooksCodex, { cwd, codexHome }],
      ] as never,
    })
    const skipped: string[] = []
    harness.ctx.on(
      'project-trust/skipped',
      (evaluations) =>
        void skipped.push(...evaluations.map((e) => `${e.source}: ${e.items.map((i) => i.display).join()}`)),
    )
    await harness.prompt('hello')
    expect(readFileSync(join(root, 'user.log'), 'utf8')).toBe('user\n')
    expect(existsSync(join(root, 'project.log'))).toBe(false)
    expect(skipped).toEqual([`hooks-codex: echo project >> ${join(root, 'project.log')}`])
  })

  it('runs .codex/hooks.json: an apply_patch matcher blocks an edit of a protected file, with Codex stdin', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-codex-hooks-'))
    const cwd = join(root, 'project')
    mkdirSync(join(cwd, '.codex'), { recursive: true })
    const capture = join(root, 'stdin.json')
    const hook = join(root, 'protect.sh')
    writeFileSync(
      hook,
      `#!/bin/sh\ninput=$(cat)\nprintf '%s' "$input" > ${capture}\ncase "$input" in *'.env'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"secrets stay untouched"}}';; esac\nexit 0\n`,
    )
    chmodSync(hook, 0o755)
    writeFileSync(
      join(cwd, '.codex/hooks.json'),
      JSON.stringify({
        hooks: {
          PreToolUse: [{ matcher: '^apply_patch$', hooks: [{ type: 'command', command: hook, timeout: 5 }] }],
          PermissionRequest: [],
        },
      }),
    )
    // The project's hooks run once the user trusted them, as `dsh trust` records it.
    const dshHome = join(root, 'dsh-home')
    await trustAll(
      TrustStore.inHome(dshHome),
      HooksCodex.projectTrustRequests({ cwd, codexHome: join(root, 'codex-home') }, cwd),
    )
    harness = await createHarness({
      cwd,
      script: [
        { toolCalls: [{ name: 'edit', arguments: { file_path: '.env' } }] },
        { toolCalls: [{ name: 'edit', arguments: { file_path: 'a.ts' } }] },
        { text: 'done' },
      ] as never,
      plugins: [
        [HomePaths, { home: dshHome }],
        [ProjectTrust, {}],
        [SubprocessLocal, {}],
        [FakeEdit],
        [HooksCodex, { cwd, codexHome: join(root, 'codex-home') }],
      ] as never,
    })
    await harness.prompt('edit things')
    const results = harness.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => (e.data as { message: { content: { text: string }[] } }).message.content[0].text)
    expect(results[0]).toContain('a PreToolUse hook blocked it: secrets stay untouched')
    expect(results[1]).toBe('edited a.ts')
    const stdin = JSON.parse(readFileSync(capture, 'utf8'))
    expect(stdin).toMatchObject({
      hook_event_name: 'PreToolUse',
      tool_name: 'apply_patch',
      tool_input: { file_path: 'a.ts' },
      cwd,
      model: harness.agent.model.model,
    })
    const runs = harness.session.events.filter((e) => e.type === 'hook/run').map((e) => e.data as HookRunRecord)
    expect(runs.map((r) => [r.dialect, r.toolName, r.origin])).toEqual([
      ['codex', 'apply_patch', join(cwd, '.codex/hooks.json')],
      ['codex', 'apply_patch', join(cwd, '.codex/hooks.json')],
    ])
  })
})
