// The persistent `bash` through the real loop and a real PTY shell: state carries over between
// calls, exit codes, a timeout that leaves the shell usable, `exit`, and one shell per agent.
import { mkdtempSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import type { LlmRequest } from '@dsh/llm'
import LocalSubprocessService from '@dsh/subprocess-local'
import TerminalService from '@dsh/terminal'
import * as ToolBashPersistent from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.ctx.parallel('app/stopping' as never, {} as never)
  await harness?.dispose()
  harness = undefined
})

async function boot(script: ScriptEntry[]) {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-bash-persistent-')))
  harness = await createHarness({
    cwd,
    script,
    plugins: [
      [LocalSubprocessService, {}],
      [TerminalService, {}],
      [ToolBashPersistent, {}],
    ],
  })
  return { h: harness, cwd }
}

const bash = (command: string, callId: string, extra: object = {}) => ({
  toolCalls: [{ name: 'bash', arguments: { command, description: 'x', ...extra }, callId }],
})

function lastTool(request: LlmRequest): string {
  const m = request.messages.filter((x) => x.role === 'tool').at(-1)
  return m && m.role === 'tool' ? m.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : ''
}

describe('tool-bash-persistent', () => {
  it('cd, exported variables and functions persist between calls; exit codes and timeouts are reported', {
    timeout: 60_000,
  }, async () => {
    const { h, cwd } = await boot([
      bash('mkdir -p deep/er && cd deep/er && export KEEP=persisted && greet() { echo "hi $1"; }', 'c1'),
      bash('pwd; echo "$KEEP"; greet there', 'c2'),
      bash('ls /nonexistent-dir', 'c3'),
      bash('sleep 30', 'c4', { timeoutMs: 300 }),
      bash('echo "still $KEEP"', 'c5'),
      bash('exit 4', 'c6'),
      bash('pwd', 'c7'),
      { text: 'done' },
    ])
    expect((await h.prompt('use the shell')).text).toBe('done')
    const seen = (i: number) => lastTool(h.model.requests[i])
    expect(seen(1)).toBe('(no output)\n\n[exit code 0]')
    expect(seen(2)).toBe(`${cwd}/deep/er\npersisted\nhi there\n\n[exit code 0]`)
    expect(seen(3)).toMatch(/No such file or directory\n\n\[exit code 2\]$/)
    expect(seen(4)).toMatch(
      /Error \[TIMEOUT\]: the command was interrupted after 300 ms; the shell and its state remain\.$/,
    )
    expect(seen(5)).toBe('still persisted\n\n[exit code 0]')
    expect(seen(6)).toMatch(/Error \[SHELL_EXITED\]/)
    // A new shell starts in the working directory.
    expect(seen(7)).toBe(`${cwd}\n\n[exit code 0]`)
  })

  it('each agent has its own shell', { timeout: 60_000 }, async () => {
    const { h } = await boot([
      bash('export WHO=first', 'c1'),
      { text: 'set' },
      bash('echo "[$WHO]"', 'c2'),
      { text: 'read' },
    ])
    await h.prompt('set it')
    const other = h.ctx.agents.create({ cwd: h.agent.cwd, model: h.agent.model })
    await other.send('read it')
    expect(lastTool(h.model.requests[3])).toBe('[]\n\n[exit code 0]')
  })
})
