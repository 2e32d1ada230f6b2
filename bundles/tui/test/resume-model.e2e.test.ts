// The terminal UI in real tmux: on exit it prints how to resume the session, and the model picked
// with /model is recorded in the session, so `dsh -c` (terminal UI or one-shot) continues on it.
import { afterAll, afterEach, expect, it, vi } from 'vitest'
import { startMockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import { TuiSession, killServer, workspace } from './harness.ts'

vi.setConfig({ testTimeout: 60_000 })
let open: TuiSession[] = []
afterEach(async () => {
  for (const s of open) await s.close()
  open = []
})
afterAll(() => killServer())

it('prints "dsh -r <id>" on exit, and /model survives dsh -c', async () => {
  const ws = workspace()
  const server = await startMockServer({
    steps: [{ text: 'First reply.' }, { text: 'Continued.' }, { text: 'One-shot.' }] as never,
  })
  try {
    const first = await TuiSession.start({ ws, server })
    open.push(first)
    await first.waitFor(/deepseek-official\/deepseek-v4-flash/)
    first.type('/model deepseek-official/deepseek-v4-pro')
    first.keys('Enter')
    await first.waitFor(/Reasoning effort/)
    first.type('high')
    first.keys('Enter')
    await first.waitFor(/model: deepseek-official\/deepseek-v4-pro \(high\)/)
    first.type('hello')
    first.keys('Enter')
    await first.waitFor(/First reply\./)
    first.keys('C-c')
    first.keys('C-c')
    const screen = await first.waitFor(/\[exited 0\]/)
    const id = /dsh: to resume this session: dsh -r (\S+)/.exec(screen)?.[1]
    expect(id, screen).toBeTruthy()
    expect((server.requests[0].body as { model: string }).model).toBe('deepseek-v4-pro')

    // dsh -c in the terminal UI: the status line shows the recorded model, and the request uses it.
    const cont = await TuiSession.start({ ws, server, args: ['--profile', 'tui', '-c'] })
    open.push(cont)
    await cont.waitFor(/deepseek-official\/deepseek-v4-pro \(high\)/)
    cont.type('again')
    cont.keys('Enter')
    await cont.waitFor(/Continued\./)
    expect((server.requests[1].body as { model: string }).model).toBe('deepseek-v4-pro')
    cont.type('/exit')
    cont.keys('Enter')
    await cont.waitFor(new RegExp(`dsh -r ${id}`))

    // The one-shot's -c continues on it too.
    const env = { DSH_HOME: ws.home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }
    const run = await runDsh(['-c', '-p', 'and once more'], { cwd: ws.cwd, env })
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'One-shot.\n' })
    expect((server.requests[2].body as { model: string }).model).toBe('deepseek-v4-pro')
  } finally {
    await server.close()
  }
})
