// The real `dsh --profile headless` with a --patch inserting this plugin's row (as bundles/base
// will), against @dsh/llm-mock-server: the first request carries the project's AGENTS.md chain.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const plugin = fileURLToPath(new URL('../src/index.ts', import.meta.url))
let mock: MockServer | undefined
afterAll(async () => mock?.close())

it('dsh --profile headless sends the user-global and project instructions with the first request', async () => {
  mock = await startMockServer({ steps: [{ text: 'Understood.' }] as never })
  const root = mkdtempSync(join(tmpdir(), 'dsh-instructions-e2e-'))
  const home = join(root, 'home')
  const repo = join(root, 'repo')
  mkdirSync(join(repo, '.git'), { recursive: true })
  mkdirSync(join(repo, 'app'), { recursive: true })
  mkdirSync(home, { recursive: true })
  writeFileSync(join(home, 'AGENTS.md'), 'GLOBAL: answer in one sentence')
  writeFileSync(join(repo, 'AGENTS.md'), 'PROJECT: use pnpm')
  writeFileSync(join(repo, 'app', 'CLAUDE.md'), 'APP: keep components small')
  const patch = join(root, 'instructions.patch.yml')
  // bundles/base mounts the row; the patch points it at this checkout's source explicitly.
  writeFileSync(patch, `- id: agent-instructions\n  name: ${JSON.stringify(plugin)}\n`)
  const run = await runDsh(['--profile', 'headless', '--patch', patch, 'hello'], {
    cwd: join(repo, 'app'),
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: mock!.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
  })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Understood.\n' })
  const seen = JSON.stringify((mock.requests[0].body as { messages: unknown[] }).messages)
  const order = ['GLOBAL: answer', 'PROJECT: use pnpm', 'APP: keep components', 'hello'].map((s) => seen.indexOf(s))
  expect(order.every((i) => i >= 0)).toBe(true)
  expect([...order].sort((a, b) => a - b)).toEqual(order)
}, 60_000)
