// The real `dsh --profile headless` with a --patch inserting this plugin's row (as bundles/base
// will), against @dsh/llm-mock-server: the first request carries the project's AGENTS.md chain.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

const bin = fileURLToPath(new URL('../../../boot/cli/bin/dsh.mjs', import.meta.url))
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
  const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, '--profile', 'headless', '--patch', patch, 'hello'], {
      cwd: join(repo, 'app'),
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DSH_HOME: home, DEEPSEEK_BASE_URL: mock!.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end('')
  })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Understood.\n' })
  const seen = JSON.stringify((mock.requests[0].body as { messages: unknown[] }).messages)
  const order = ['GLOBAL: answer', 'PROJECT: use pnpm', 'APP: keep components', 'hello'].map((s) => seen.indexOf(s))
  expect(order.every((i) => i >= 0)).toBe(true)
  expect([...order].sort((a, b) => a - b)).toEqual(order)
}, 60_000)
