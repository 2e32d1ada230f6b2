// Keyless end-to-end through the real `dsh` bin and the scripted model server, in workspace-write:
// the model asks the file and search tools (which run in the dsh process, outside the sandbox) for
// dsh's own environment under /proc, directly and through a link in the workspace. The key planted
// in dsh's environment must not be in any request the model server receives.
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
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

const KEY = 'sk-planted-fs-sandbox-e2e-not-a-real-key'

it('read and grep of /proc/self/environ (and links to it) are refused; the key never reaches the model', {
  timeout: 120_000,
}, async () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-proc-e2e-')))
  const home = join(root, 'home')
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  symlinkSync('/proc/self', join(cwd, 'me'))
  writeFileSync(join(cwd, 'notes.md'), 'alpha beta\n')
  const patch = join(root, 'confined.patch.yml')
  writeFileSync(
    patch,
    [
      '- id: permission-presets',
      '  config:',
      '    default: e2e',
      '    env: ""',
      '    presets:',
      '      e2e: { mode: workspace-write, approval: never, description: "confined" }',
      '',
    ].join('\n'),
  )
  const call = (id: string, name: string, args: object) => ({ id, name, arguments: args })
  server = await startMockServer({
    steps: [
      {
        toolCalls: [
          call('r1', 'read', { file_path: '/proc/self/environ' }),
          call('r2', 'read', { file_path: 'me/environ' }),
          call('r3', 'read', { file_path: '/proc/thread-self/environ' }),
          call('g1', 'grep', { pattern: 'DEEPSEEK', path: '/proc/self/environ' }),
          call('g2', 'grep', { pattern: 'DEEPSEEK', path: 'me' }),
          // The control: a search of the workspace works (rg runs inside the session's sandbox).
          call('g3', 'grep', { pattern: 'alpha', path: '.' }),
        ],
      },
      { text: 'done' },
    ] as never,
  })
  const env = { DSH_HOME: home, HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: KEY }
  const run = await runDsh(['--profile', 'headless', '--patch', patch, 'look around'], { cwd, env })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'done\n' })
  expect(server.requests).toHaveLength(2)
  expect(JSON.stringify(server.requests.map((r) => r.body))).not.toContain(KEY)
  // Each call came back refused, saying why.
  const tools = (server.requests[1].body as { messages: Array<{ role: string; content: string }> }).messages.filter(
    (m) => m.role === 'tool',
  )
  expect(tools).toHaveLength(6)
  for (const message of tools.slice(0, 5)) expect(message.content).toMatch(/SANDBOX_DENIED.*per-process \/proc entry/)
  expect(tools[5].content).toMatch(/^Found 1 matching line for "alpha"\.\nnotes\.md\n {2}1: alpha beta/)
})
