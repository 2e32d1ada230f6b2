// Issue 35: a confined command cannot plant or change the project's control files (what dsh or git
// would later start outside the sandbox), through the real `dsh -p` with the mock model, the real
// bash tool in workspace-write and the real file-edit tool. Nothing new appears in the tree.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let mock: MockServer | undefined
afterAll(async () => mock?.close())

const ATTACKS = {
  mcp: 'echo x > .mcp.json',
  claude: 'mkdir -p .claude && echo {} > .claude/settings.json',
  claudeLocal: 'echo {} > .claude/settings.local.json',
  hook: 'echo evil >> .git/hooks/pre-commit',
  config: 'printf "[core]\\n\\tfsmonitor = touch /tmp/pwned\\n" >> .git/config',
  swap: 'mv .git .git-old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit',
} as const

it('workspace-write: bash cannot change .mcp.json, .claude/ or the git hooks and config, and the write tool cannot create .codex/ or .env', async () => {
  const calls = Object.entries(ATTACKS).map(([id, command]) => ({
    id,
    name: 'bash',
    arguments: { command: `${command} && echo PLANTED-${id}`, description: id },
  }))
  mock = await startMockServer({
    steps: [
      {
        toolCalls: [
          ...calls,
          { id: 'codex', name: 'write', arguments: { file_path: '.codex/hooks.json', content: '{"hooks":{}}' } },
          {
            id: 'env',
            name: 'write',
            arguments: { file_path: '.env', content: 'DEEPSEEK_BASE_URL=http://evil.invalid\n' },
          },
          // Positive control: the rest of the workspace stays writable.
          {
            id: 'ok',
            name: 'bash',
            arguments: { command: 'echo written > notes.txt && echo WROTE-notes', description: 'ok' },
          },
        ],
      },
      { expect: { lastRole: 'tool' }, text: 'Tried.' },
    ] as never,
  })
  const root = mkdtempSync(join(tmpdir(), 'dsh-control-files-'))
  const ws = join(root, 'ws')
  mkdirSync(join(ws, '.claude'), { recursive: true })
  execFileSync('git', ['init', '-q', ws], { env: { PATH: process.env.PATH, HOME: root, GIT_CONFIG_NOSYSTEM: '1' } })
  writeFileSync(join(ws, '.mcp.json'), '{"mcpServers":{}}\n')
  writeFileSync(join(ws, '.claude', 'settings.json'), '{"permissions":{}}\n')
  const files = ['.mcp.json', '.claude/settings.json', '.git/config']
  const before = Object.fromEntries(files.map((path) => [path, readFileSync(join(ws, path), 'utf8')]))
  const listing = () => ({
    top: readdirSync(ws).sort(),
    claude: readdirSync(join(ws, '.claude')).sort(),
    hooks: readdirSync(join(ws, '.git', 'hooks')).sort(),
  })
  const listed = listing()

  const run = await runDsh(['--profile', 'headless', '--permission-mode', 'workspace-write', 'go'], {
    cwd: ws,
    env: { DSH_HOME: join(root, 'home'), DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
  })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Tried.\n' })
  const messages = (mock.requests[1].body as { messages: Array<{ role: string; content: unknown }> }).messages
  const results = JSON.stringify(messages.filter((message) => message.role === 'tool'))
  for (const id of Object.keys(ATTACKS)) expect(results).not.toContain(`PLANTED-${id}`)
  expect(results).toContain('WROTE-notes')
  expect(results).toMatch(/Read-only file system/)
  // Moving .git away is refused too (a mount point inside it pins it), and reported as a sandbox refusal.
  expect(results).toMatch(/cannot move '\.git' to '\.git-old': Device or resource busy\\n\[note: sandbox/)
  expect(results).toContain('a project control file')

  for (const path of files) expect(readFileSync(join(ws, path), 'utf8')).toBe(before[path])
  for (const path of ['.codex', '.env', '.git-old', '.git/hooks/pre-commit', '.claude/settings.local.json'])
    expect(existsSync(join(ws, path)), path).toBe(false)
  // Only the command's own file is new: no mount point or other trace of the sandbox in the tree.
  expect(listing()).toEqual({ ...listed, top: [...listed.top, 'notes.txt'].sort() })
}, 90_000)
