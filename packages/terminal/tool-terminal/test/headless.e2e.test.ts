// End-to-end: the real `dsh --profile headless` bin with the base bundle's terminal rows enabled
// by a --patch layer (the PTY program confined by the sandbox policy), and with tool-bash swapped
// for tool-bash-persistent; the model is @dsh/llm-mock-server.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const call = (id: string, name: string, args: object) => ({ toolCalls: [{ id, name, arguments: args }] })

function setup(patchText: string) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-terminal-e2e-')))
  const cwd = join(root, 'work')
  mkdirSync(cwd)
  const patch = join(root, 'layer.patch.yml')
  writeFileSync(patch, patchText)
  return { root, cwd, patch, home: join(root, 'home') }
}

function toolText(i: number, callId: string): string {
  const messages = (
    server!.requests[i].body as { messages: Array<{ role: string; content: string; tool_call_id?: string }> }
  ).messages
  return messages.find((m) => m.role === 'tool' && m.tool_call_id === callId)?.content ?? '(none)'
}

it('terminal tools: python3 -i answers 1+1 with 2, confined by the sandbox', { timeout: 90_000 }, async () => {
  const { cwd, patch, home } = setup('- id: terminals\n  disabled: false\n- id: tool-terminal\n  disabled: false\n')
  server = await startMockServer({
    steps: [
      call('o', 'terminal_open', { command: ['python3', '-i', '-q'] }),
      call('s', 'terminal_send', { id: 'term-1', input: '1+1' }),
      call('l', 'terminal_list', {}),
      { text: 'two' },
    ] as never,
  })
  const run = await runDsh(['--profile', 'headless', '--patch', patch, '--output-format', 'json', 'use python'], {
    cwd,
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
  })
  expect(run.stderr).toBe('')
  expect(JSON.parse(run.stdout)).toMatchObject({ result: 'two', reason: 'completed' })
  expect(toolText(1, 'o'), toolText(1, 'o')).toMatch(/^Opened terminal term-1 \(python3 -i -q\)\./)
  expect(toolText(2, 's')).toMatch(/\n1\+1\n2\n>>> $/)
  expect(toolText(3, 'l')).toMatch(/^term-1 {2}running {2}python3 -i -q {2}\(cwd .*, confined by (bwrap|landlock)\)$/)
})

it('tool-bash-persistent in place of tool-bash keeps cd and an exported variable between calls', {
  timeout: 90_000,
}, async () => {
  const { cwd, patch, home } = setup(
    '- id: terminals\n  disabled: false\n- id: tool-bash\n  disabled: true\n- id: tool-bash-persistent\n  disabled: false\n',
  )
  server = await startMockServer({
    steps: [
      call('a', 'bash', { command: 'mkdir -p sub && cd sub && export MARK=kept', description: 'prepare' }),
      call('b', 'bash', { command: 'echo "$MARK in $(basename "$PWD")"', description: 'check' }),
      { text: 'kept' },
    ] as never,
  })
  const run = await runDsh(['--profile', 'headless', '--patch', patch, '--output-format', 'json', 'use the shell'], {
    cwd,
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
  })
  expect(run.stderr).toBe('')
  expect(JSON.parse(run.stdout)).toMatchObject({ result: 'kept', reason: 'completed' })
  expect(toolText(2, 'b')).toBe('kept in sub\n\n[exit code 0]')
})
