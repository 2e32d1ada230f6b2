// End-to-end: the real `dsh --profile headless` started inside a tmux pane of a private server,
// with a --patch inserting the tmux-context row, against @dsh/llm-mock-server.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { REPO, TmuxServer } from './tmux-server.ts'

const bin = join(REPO, 'packages/boot/cli/bin/dsh.mjs')
const plugin = fileURLToPath(new URL('../src/index.ts', import.meta.url))
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

let server: TmuxServer
let mock: MockServer | undefined
beforeAll(() => {
  server = new TmuxServer()
})
afterAll(async () => {
  await mock?.close()
  server?.kill()
})

it('dsh --profile headless in a tmux pane sends the tmux location with the first request', async () => {
  mock = await startMockServer({ steps: [{ text: 'You are in tmux.' }] as never })
  const dir = mkdtempSync(join(server.dir, 'e2e-'))
  const patch = join(dir, 'tmux.patch.yml')
  // bundles/base carries the row disabled (opt-in); the patch enables it.
  writeFileSync(
    patch,
    `- id: tmux-context\n  name: ${JSON.stringify(plugin)}\n  disabled: false\n  config:\n    refreshIntervalMs: 0\n`,
  )
  const out = join(dir, 'out')
  const err = join(dir, 'err')
  const rc = join(dir, 'rc')
  const command = `node ${quote(bin)} --profile headless --patch ${quote(patch)} 'where am I?' >${quote(out)} 2>${quote(err)}; echo $? >${quote(rc)}.tmp; mv ${quote(rc)}.tmp ${quote(rc)}`
  const env = {
    DSH_HOME: join(dir, 'home'),
    DEEPSEEK_BASE_URL: mock.baseURL,
    DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  }
  const paneId = server.tmux(
    'new-window',
    '-d',
    '-P',
    '-F',
    '#{pane_id}',
    '-t',
    'main:',
    '-n',
    'e2e',
    '-c',
    dir,
    ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    command,
  )
  for (let i = 0; i < 1200 && !existsSync(rc); i++) await new Promise((r) => setTimeout(r, 50))
  const stderr = existsSync(err) ? readFileSync(err, 'utf8') : ''
  expect(existsSync(rc) ? readFileSync(rc, 'utf8').trim() : 'timed out', stderr).toBe('0')
  expect(readFileSync(out, 'utf8')).toBe('You are in tmux.\n')
  const body = mock.requests[0].body as { messages: Array<{ role: string; content: unknown }> }
  const seen = JSON.stringify(body.messages)
  expect(seen).toContain('tmux location (turn 1):')
  expect(seen).toContain(`pane 0 ${paneId}`)
  expect(seen).toContain('\\"e2e\\"')
}, 90_000)
