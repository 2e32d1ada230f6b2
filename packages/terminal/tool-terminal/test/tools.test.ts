// The six terminal tools through the real loop and the real subprocess-local PTY.
import { mkdtempSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import type { LlmRequest } from '@dsh/llm'
import LocalSubprocessService from '@dsh/subprocess-local'
import TerminalService from '@dsh/terminal'
import * as ToolTerminal from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.ctx.parallel('app/stopping' as never, {} as never)
  await harness?.dispose()
  harness = undefined
})

async function boot(script: ScriptEntry[]) {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-tool-terminal-')))
  harness = await createHarness({
    cwd,
    script,
    plugins: [
      [LocalSubprocessService, {}],
      [TerminalService, {}],
      [ToolTerminal, { waitMs: 3000 }],
    ],
  })
  return harness
}

const call = (name: string, args: object, callId: string) => ({ toolCalls: [{ name, arguments: args, callId }] })

function lastTool(request: LlmRequest): string {
  const m = request.messages.filter((x) => x.role === 'tool').at(-1)
  return m && m.role === 'tool' ? m.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : ''
}

describe('tool-terminal', () => {
  it('a python3 REPL: open, send 1+1, read 2; a persistent bash keeps cd and exports; list and close', {
    timeout: 60_000,
  }, async () => {
    const h = await boot([
      call('terminal_open', { command: ['python3', '-i', '-q'] }, 'c1'),
      call('terminal_send', { id: 'term-1', input: '1+1' }, 'c2'),
      call('terminal_open', {}, 'c3'),
      call('terminal_send', { id: 'term-2', input: 'cd /tmp && export MARK=kept-between-calls' }, 'c4'),
      call('terminal_send', { id: 'term-2', input: 'echo "$MARK at $PWD"' }, 'c5'),
      call('terminal_list', {}, 'c6'),
      call('terminal_close', { id: 'term-1' }, 'c7'),
      call('terminal_send', { id: 'term-1', input: '2+2' }, 'c8'),
      { text: 'done' },
    ])
    expect((await h.prompt('use terminals')).text).toBe('done')
    const seen = (i: number) => lastTool(h.model.requests[i])
    expect(seen(1)).toMatch(
      /^Opened terminal term-1 \(python3 -i -q\)\.\nTerminal term-1 \(running\); output 0-\d+, next: \d+\.\n/,
    )
    expect(seen(2)).toMatch(/\n1\+1\n2\n>>> $/)
    expect(seen(5)).toContain('kept-between-calls at /tmp\n')
    expect(seen(6)).toMatch(
      /^term-1 {2}running {2}python3 -i -q {2}\(cwd .*, unconfined\)\nterm-2 {2}running {2}bash --noprofile --norc -i/,
    )
    expect(seen(7)).toMatch(/^Closed terminal term-1 \(exited/)
    expect(seen(8)).toBe('Error [UNKNOWN_TERMINAL]: no terminal "term-1" of this agent (open: term-2)')
  })

  it('another agent cannot use a terminal id it learned; bad arguments are one error each', {
    timeout: 60_000,
  }, async () => {
    const h = await boot([
      call('terminal_open', {}, 'c1'),
      { text: 'opened' },
      // the second agent
      call('terminal_send', { id: 'term-1', input: 'echo stolen' }, 'c2'),
      call('terminal_signal', { id: 'term-1', signal: 'SIGBOGUS' }, 'c3'),
      call('terminal_read', { id: 'term-1', since: -1 }, 'c4'),
      { text: 'refused' },
    ])
    await h.prompt('open one')
    const other = h.ctx.agents.create({ cwd: h.agent.cwd, model: h.agent.model })
    expect((await other.send('use theirs')).text).toBe('refused')
    const seen = (i: number) => lastTool(h.model.requests[i])
    expect(seen(3)).toBe('Error [UNKNOWN_TERMINAL]: no terminal "term-1" of this agent')
    expect(seen(4)).toMatch(/^Error \[INVALID_ARGUMENTS\]/)
    expect(seen(5)).toMatch(/^Error \[INVALID_ARGUMENTS\]/)
    expect(h.ctx.terminals.list({ agentId: h.agent.id }).map((t) => t.status)).toEqual(['running'])
  })
})
