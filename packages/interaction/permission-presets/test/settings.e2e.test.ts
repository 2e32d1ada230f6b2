// `$DSH_HOME/settings.yaml` drives what the root README documents, through the real headless bin:
// `model:` picks the model and reasoning effort of the request, `permissions:` the sandbox preset.
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let mock: MockServer | undefined
afterAll(async () => mock?.close())

it('settings.yaml sets the default model, reasoning effort and permission mode', async () => {
  mock = await startMockServer({
    steps: [
      { toolCalls: [{ id: 'c1', name: 'bash', arguments: { command: 'echo x > made.txt', description: 'write' } }] },
      { expect: { lastRole: 'tool' }, text: 'Done.' },
    ] as never,
  })
  const root = mkdtempSync(join(tmpdir(), 'dsh-settings-e2e-'))
  const home = join(root, '.home')
  mkdirSync(home, { recursive: true })
  writeFileSync(
    join(home, 'settings.yaml'),
    'model:\n  model: deepseek-v4-pro\n  reasoningEffort: high\npermissions:\n  default: read-only\n',
  )
  const run = await runDsh(['--profile', 'headless', 'try'], {
    cwd: root,
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
  })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Done.\n' })
  const body = mock.requests[0].body as Record<string, unknown>
  expect(body.model).toBe('deepseek-v4-pro')
  expect(JSON.stringify(body)).toMatch(/"reasoning_effort":"high"|"thinking":\{"type":"enabled"/)
  expect(existsSync(join(root, 'made.txt'))).toBe(false)
}, 90_000)
