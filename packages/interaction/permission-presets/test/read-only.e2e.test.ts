// `--permission-mode read-only` through the real headless bin: the model's bash command may read
// the workspace but its write is refused by the sandbox, the file tool's write is refused by the
// same mode, and nothing is created on disk.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let mock: MockServer | undefined
afterAll(async () => mock?.close())

it('--permission-mode read-only lets the agent read but not write, in bash and in the file tools', async () => {
  mock = await startMockServer({
    steps: [
      {
        toolCalls: [
          {
            id: 'c1',
            name: 'bash',
            arguments: { command: 'cat notes.txt && echo changed > made-by-bash.txt', description: 'read then write' },
          },
        ],
      },
      {
        expect: { lastRole: 'tool', lastContains: 'a note' },
        toolCalls: [{ id: 'c2', name: 'write', arguments: { file_path: 'made-by-write.txt', content: 'x' } }],
      },
      { expect: { lastRole: 'tool' }, text: 'Could only read.' },
    ] as never,
  })
  const root = mkdtempSync(join(tmpdir(), 'dsh-read-only-'))
  writeFileSync(join(root, 'notes.txt'), 'a note\n')
  const run = await runDsh(['--profile', 'headless', '--permission-mode', 'read-only', 'look around'], {
    cwd: root,
    env: { DSH_HOME: join(root, '.home'), DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
  })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Could only read.\n' })
  expect(existsSync(join(root, 'made-by-bash.txt'))).toBe(false)
  expect(existsSync(join(root, 'made-by-write.txt'))).toBe(false)
  const toolResults = mock.requests
    .slice(1)
    .map((r) => JSON.stringify((r.body as { messages: unknown[] }).messages.at(-1)))
  expect(toolResults[0]).toContain('a note')
  expect(toolResults[1]).toMatch(/read-only/i)
}, 90_000)
