// End-to-end: the real `dsh --profile headless` bin with this rows added by a --patch
// layer, the DeepSeek adapter talking to @dsh/llm-mock-server, real files, bash and ripgrep.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const patch = fileURLToPath(new URL('./fixtures/execution-world.patch.yml', import.meta.url))

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

const dsh = (args: string[], env: Record<string, string>, cwd: string): Promise<Run> => runDsh(args, { cwd, env })

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('dsh --profile headless with the execution-world rows', () => {
  it('runs write, read, edit, grep, bash, todo_write and str_replace_editor; spills, reminds and times out', {
    timeout: 60_000,
  }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-exec-'))
    const home = join(root, 'home')
    const cwd = join(root, 'work dir ü')
    const { mkdirSync } = await import('node:fs')
    mkdirSync(cwd, { recursive: true })
    const call = (id: string, name: string, args: object) => ({ toolCalls: [{ id, name, arguments: args }] })
    server = await startMockServer({
      steps: [
        call('c_write', 'write', { file_path: 'notes.txt', content: 'alpha\nbeta\n' }),
        call('c_read', 'read', { file_path: 'notes.txt' }),
        call('c_edit', 'edit', { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' }),
        call('c_grep1', 'grep', { pattern: 'gam+a' }),
        call('c_grep2', 'grep', { pattern: 'gam+a' }),
        call('c_bash', 'bash', {
          command:
            "yes 'a long line of text, repeated to make the read result large' | head -n 40000 > big.txt && wc -l < big.txt",
          description: 'make a big file',
        }),
        call('c_big', 'read', { file_path: 'big.txt' }),
        call('c_todo', 'todo_write', {
          todos: [
            { content: 'Edit notes', status: 'completed' },
            { content: 'Check the big file', status: 'in_progress' },
          ],
        }),
        call('c_todo_bad', 'todo_write', {
          todos: [
            { content: 'A', status: 'in_progress' },
            { content: 'B', status: 'in_progress' },
          ],
        }),
        call('c_view', 'str_replace_editor', { command: 'view', path: 'notes.txt', view_range: [2, 2] }),
        call('c_sre', 'str_replace_editor', {
          command: 'str_replace',
          path: 'notes.txt',
          old_str: 'gamma',
          new_str: 'delta',
        }),
        call('c_sleep', 'bash', { command: 'sleep 8', description: 'wait too long' }),
        { text: 'ok' },
      ] as never,
    })
    const run = await dsh(
      ['--profile', 'headless', '--patch', patch, '--output-format', 'stream-json', 'do the task'],
      { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
      cwd,
    )
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const result = lines.at(-1)
    expect(result).toMatchObject({ type: 'result', result: 'ok', reason: 'completed' })
    const sessionId: string = result.sessionId
    expect(typeof sessionId).toBe('string')

    // What the model saw: the last tool message of the request after each call.
    const seen = (i: number) => {
      const messages = (
        server!.requests[i].body as { messages: { role: string; content: string; tool_call_id?: string }[] }
      ).messages
      return messages.filter((m) => m.role === 'tool').at(-1)!
    }
    const text = (i: number) => seen(i).content
    expect(server.requests).toHaveLength(13)
    expect(seen(1).tool_call_id).toBe('c_write')
    expect(text(1)).toMatch(/^Created .*notes\.txt \(2 lines/)
    expect(text(2)).toContain('beta')
    expect(text(3)).toMatch(/^Edited .*notes\.txt: replaced 1 occurrence/)
    expect(text(4)).toContain('notes.txt')
    expect(text(4)).not.toContain('Reminder')
    expect(text(5)).toContain(
      '[Reminder from the harness: this is your 2nd consecutive call to grep with exactly the same arguments.',
    )
    expect(text(6)).toContain('40000')

    // The big read was spilled whole under $DSH_HOME/sessions/spill/<session>/<call>.txt.
    const spillFile = join(home, 'sessions', 'spill', sessionId, 'c_big.txt')
    expect(text(7)).toContain(spillFile)
    expect(text(7)).toMatch(/bytes omitted \(lines [\d,]+-[\d,]+ of [\d,]+\)/)
    expect(Buffer.byteLength(text(7))).toBeLessThanOrEqual(32 * 1024)
    expect(existsSync(spillFile)).toBe(true)
    const spilled = readFileSync(spillFile, 'utf8')
    expect(spilled.length).toBeGreaterThan(32 * 1024)
    expect(spilled.startsWith(text(7).slice(0, 200))).toBe(true)

    expect(text(8)).toBe(
      'Todo list saved (2 items: 1 completed, 1 in progress, 0 pending). In progress: Check the big file',
    )
    expect(text(9)).toMatch(/^Error \[INVALID_TODOS\]: the todo list was not saved: 2 items are in_progress/)
    expect(text(10)).toBe('     2\tgamma\n\n(Showing lines 2-2 of 2.)')
    expect(text(11)).toMatch(/^Replaced the text in .*notes\.txt \(now line 2\)/)
    expect(text(12)).toMatch(/^Error \[TOOL_TIMEOUT\]: tool "bash" did not finish within its 2 s time limit/)

    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\ndelta\n')

    // The todo list is in the log: exactly one todo/write (the invalid call logged nothing).
    const events = lines.filter((l) => l.type === 'event').map((l) => l.event)
    const todos = events.filter((e) => e.type === 'todo/write')
    expect(todos).toHaveLength(1)
    expect(todos[0].data).toEqual({
      todos: [
        { id: '1', content: 'Edit notes', status: 'completed' },
        { id: '2', content: 'Check the big file', status: 'in_progress' },
      ],
    })
  })
})
