// First run in a terminal without a key, through the real bin in tmux against the scripted model:
// the terminal UI asks for the provider and the key (not echoed), checks the key by listing the
// models (the mock refuses all but one key), stores it 0600 through the credentials seam, and the
// session then runs on it. Ctrl+C at the questions quits with one line.
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, expect, it, vi } from 'vitest'
import { startMockServer } from '@dsh/llm-mock-server'
import { TuiSession, killServer, workspace } from './harness.ts'

vi.setConfig({ testTimeout: 60_000 })
let open: TuiSession[] = []
afterEach(async () => {
  for (const s of open) await s.close()
  open = []
})
afterAll(() => killServer())

it('asks for the provider and key, refuses a wrong key, stores the right one 0600, then runs on it', async () => {
  const ws = workspace()
  const server = await startMockServer({
    script: { apiKey: 'sk-right-key', steps: [{ text: 'Hello after setup.' }] },
  } as never)
  try {
    const s = await TuiSession.start({ ws, server, env: { DEEPSEEK_API_KEY: '' } })
    open.push(s)
    await s.waitFor(/1\) DeepSeek \(DEEPSEEK_API_KEY\)[\s\S]*Provider \[1-1, default 1\]/)
    s.keys('Enter')
    await s.waitFor(/DeepSeek API key \(not shown as you type\)/)
    s.type('sk-wrong-key')
    s.keys('Enter')
    await s.waitFor(/the key was refused \(HTTP 401\); try again/)
    s.type('sk-right-key')
    s.keys('Enter')
    await s.waitFor(/deepseek-official\/deepseek-v4-flash/)
    const file = join(ws.home, '.credentials.yaml')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(readFileSync(file, 'utf8')).toMatch(/DEEPSEEK_API_KEY: sk-right-key/)
    expect(s.history()).not.toMatch(/sk-(wrong|right)-key/)
    const checks = server.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/models'))
    expect(checks.map((r) => r.headers.authorization)).toEqual(['Bearer sk-wrong-key', 'Bearer sk-right-key'])
    s.type('hello')
    s.keys('Enter')
    await s.waitFor(/Hello after setup\./)
    const chat = server.requests.find((r) => r.method === 'POST')!
    expect(chat.headers.authorization).toBe('Bearer sk-right-key')
  } finally {
    await server.close()
  }
})

it('Ctrl+C at the questions quits with one line and stores nothing', async () => {
  const s = await TuiSession.start({ env: { DEEPSEEK_API_KEY: '' } })
  open.push(s)
  await s.waitFor(/Provider \[1-1, default 1\]/)
  s.keys('C-c')
  const screen = await s.waitFor(/\[exited 1\]/)
  expect(screen).toContain('dsh: no model API key was set up; run dsh again, or export DEEPSEEK_API_KEY=...')
  expect(() => statSync(join(s.ws.home, '.credentials.yaml'))).toThrow()
})
