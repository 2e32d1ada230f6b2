// Issue #15, end to end: what the real `dsh --profile headless` sends as its system prompt, where
// the instruction files land relative to it, that disabling a tool row removes its section, and
// that `--continue` resumes with the prompt the session was logged with.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir, type as osType } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let mock: MockServer
let root: string
let repo: string
let env: Record<string, string>

beforeAll(async () => {
  mock = await startMockServer({ steps: [{ text: 'one' }, { text: 'two' }, { text: 'three' }] as never })
  root = mkdtempSync(join(tmpdir(), 'dsh-prompt-e2e-'))
  repo = join(root, 'repo')
  mkdirSync(repo)
  execFileSync('git', ['init', '-q', repo])
  writeFileSync(join(repo, 'AGENTS.md'), 'PROJECT RULE: use pnpm')
  mkdirSync(join(root, 'home'))
  env = {
    HOME: root,
    DSH_HOME: join(root, 'home'),
    SHELL: '/bin/zsh',
    DEEPSEEK_BASE_URL: mock.baseURL,
    DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  }
})
afterAll(async () => {
  await mock?.close()
  rmSync(root, { recursive: true, force: true })
})

interface WireMessage {
  role: string
  content: unknown
}
const messagesOf = (index: number) => (mock.requests[index].body as { messages: WireMessage[] }).messages
const systemOf = (index: number) => String(messagesOf(index).find((m) => m.role === 'system')?.content ?? '')

const localDate = (now: Date) =>
  `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, '0')}-${String(now.getDate()).padStart(2, '0')}`

it('sends identity, tool guidance, environment facts and the date, stable-first, before the instruction files', async () => {
  const before = localDate(new Date())
  const run = await runDsh(['--profile', 'headless', 'hello'], { cwd: repo, env })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'one\n' })
  const system = systemOf(0)
  // The run may straddle midnight: the session's date is one of the two days.
  const after = localDate(new Date())
  const date = system.includes(`Session date: ${before}`) ? before : after
  const parts = [
    'You are dsh',
    'Working rules:',
    'Shell (bash):',
    'Files (read, write, edit):',
    'Search (glob, grep):',
    'Environment:',
    `- Working directory: ${repo}\n`,
    '- Git repository: yes\n',
    `- Platform: ${osType()} `,
    '- User shell: zsh',
    `Session date: ${date}`,
  ]
  const at = parts.map((part) => system.indexOf(part))
  expect(
    at.every((i) => i >= 0),
    JSON.stringify(Object.fromEntries(parts.map((p, i) => [p, at[i]]))),
  ).toBe(true)
  expect([...at].sort((a, b) => a - b)).toEqual(at)
  // todo_write is deferred (@dsh/tool-deferral): its section waits until the tool is loaded.
  expect(system).not.toContain('Task list (todo_write):')
  // The instruction file is history: after the system message, before the task.
  const messages = messagesOf(0)
  const agents = messages.findIndex((m) => JSON.stringify(m.content).includes('PROJECT RULE: use pnpm'))
  const task = messages.findIndex((m) => JSON.stringify(m.content).includes('hello'))
  expect(messages[0].role).toBe('system')
  expect(agents).toBeGreaterThan(0)
  expect(task).toBeGreaterThan(agents)
}, 60_000)

it('--continue resumes with the byte-identical system prompt and tool list', async () => {
  const run = await runDsh(['--profile', 'headless', '--continue', 'again'], { cwd: repo, env })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'two\n' })
  expect(systemOf(1)).toBe(systemOf(0))
  expect(JSON.stringify((mock.requests[1].body as { tools: unknown }).tools)).toBe(
    JSON.stringify((mock.requests[0].body as { tools: unknown }).tools),
  )
}, 60_000)

it('a disabled tool row takes its section with it', async () => {
  const patch = join(root, 'no-bash.patch.yml')
  writeFileSync(patch, '- id: tool-bash\n  disabled: true\n')
  const run = await runDsh(['--profile', 'headless', '--patch', patch, 'hello'], { cwd: repo, env })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'three\n' })
  const system = systemOf(2)
  expect(system).not.toContain('Shell (bash):')
  expect(system).toContain('Files (read, write, edit):')
}, 60_000)
