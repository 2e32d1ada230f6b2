// End-to-end: the real `dsh --profile headless` bin with the hooks row enabled runs the project's
// Claude Code PreToolUse hook before the real bash tool: `rm` is blocked (exit 2, stderr to the
// model), `echo` runs; both runs are logged as hook/run in stream-json.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const patch = fileURLToPath(new URL('./fixtures/enable.patch.yml', import.meta.url))

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('dsh --profile headless with Claude Code hooks', () => {
  it('blocks rm through a PreToolUse hook and lets other commands run', { timeout: 60_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-hooks-'))
    const cwd = join(root, 'project')
    mkdirSync(join(cwd, '.claude'), { recursive: true })
    writeFileSync(join(cwd, 'keep.txt'), 'precious')
    const guard = join(root, 'guard.sh')
    writeFileSync(
      guard,
      '#!/bin/sh\ncase "$(cat)" in *\'"rm \'*) echo "rm is blocked by the project hook" >&2; exit 2;; esac\nexit 0\n',
    )
    chmodSync(guard, 0o755)
    writeFileSync(
      join(cwd, '.claude/settings.json'),
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: guard }] }] } }),
    )
    server = await startMockServer({
      steps: [
        { toolCalls: [{ id: 'c_rm', name: 'bash', arguments: { command: 'rm keep.txt', description: 'delete' } }] },
        { toolCalls: [{ id: 'c_echo', name: 'bash', arguments: { command: 'echo still-here', description: 'echo' } }] },
        { text: 'ok' },
      ] as never,
    })
    // The project's hooks run only once the user trusted the project.
    const trusted = await runDsh(['trust', cwd], {
      cwd: root,
      env: { DSH_HOME: join(root, 'home'), HOME: join(root, 'userhome') },
    })
    expect(trusted.code).toBe(0)
    const run = await runDsh(['--profile', 'headless', '--patch', patch, '--output-format', 'stream-json', 'tidy up'], {
      cwd,
      env: {
        DSH_HOME: join(root, 'home'),
        HOME: join(root, 'userhome'),
        DEEPSEEK_BASE_URL: server.baseURL,
        DEEPSEEK_API_KEY: 'x',
      },
    })
    expect(run.code).toBe(0)
    const toolText = (i: number) =>
      (server!.requests[i].body as { messages: { role: string; content: string }[] }).messages
        .filter((m) => m.role === 'tool')
        .at(-1)!.content
    expect(toolText(1)).toContain('a PreToolUse hook blocked it: rm is blocked by the project hook')
    expect(toolText(2)).toContain('still-here')
    expect(existsSync(join(cwd, 'keep.txt'))).toBe(true)
    const events = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.type === 'event')
      .map((l) => l.event)
    const hookRuns = events.filter((e) => e.type === 'hook/run').map((e) => e.data)
    expect(hookRuns.map((r) => [r.event, r.toolName, r.outcome])).toEqual([
      ['PreToolUse', 'Bash', 'block'],
      ['PreToolUse', 'Bash', 'ok'],
    ])
  })
})
