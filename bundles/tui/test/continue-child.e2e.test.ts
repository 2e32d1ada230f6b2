// `dsh -c` in the terminal UI continues the newest session of the directory that a person ran,
// never a subagent's child log (which names its parent), even when the child's log is newer.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, expect, it, vi } from 'vitest'
import { startMockServer } from '@dsh/llm-mock-server'
import { DSH_BIN } from '@dsh/cli-testkit'
import { TuiSession, killServer, workspace } from './harness.ts'

vi.setConfig({ testTimeout: 60_000 })
let open: TuiSession[] = []
afterEach(async () => {
  for (const s of open) await s.close()
  open = []
})
afterAll(() => killServer())

/** Polls `probe` until it holds (each poll reads the disk or the mock server; no fixed delay decides). */
async function until(probe: () => boolean): Promise<void> {
  while (!probe()) await new Promise((resolve) => setTimeout(resolve, 20))
}

/** Whether a child session (its header names a parent) has written its first batch of events. */
function childLogWritten(sessions: string): boolean {
  if (!existsSync(sessions)) return false
  for (const key of readdirSync(sessions, { withFileTypes: true })) {
    if (!key.isDirectory()) continue
    for (const id of readdirSync(join(sessions, key.name), { withFileTypes: true })) {
      const dir = join(sessions, key.name, id.name)
      if (!id.isDirectory() || !existsSync(join(dir, 'header.json'))) continue
      if (!readFileSync(join(dir, 'header.json'), 'utf8').includes('parentSession')) continue
      const log = readdirSync(dir).find((file) => file.startsWith('session.jsonl'))
      if (log && statSync(join(dir, log)).size > 0) return true
    }
  }
  return false
}

it('dsh -c in the terminal UI skips a newer subagent child log and opens the parent', async () => {
  const ws = workspace()
  const server = await startMockServer({
    steps: [
      { toolCalls: [{ id: 'fg', name: 'subagent', arguments: { description: 'hang', prompt: 'child task' } }] },
      { events: [{ stall: true }] },
    ] as never,
  })
  try {
    // A one-shot run whose foreground child waits for the model, killed while it waits: the child's
    // log (it ran a turn) is now newer than its parent's.
    const env = { DSH_HOME: ws.home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }
    const host = spawn(process.execPath, [DSH_BIN, '--profile', 'headless', 'delegate the work'], {
      cwd: ws.cwd,
      env: { PATH: process.env.PATH!, HOME: ws.home, ...env },
      stdio: ['ignore', 'ignore', 'ignore'],
    })
    const exited = new Promise((resolve) => host.on('exit', (_code, signal) => resolve(signal)))
    await until(() => server.requests.length >= 2)
    await until(() => childLogWritten(join(ws.home, 'sessions')))
    host.kill('SIGKILL')
    expect(await exited).toBe('SIGKILL')

    const cont = await TuiSession.start({ ws, server, args: ['--profile', 'tui', '-c'] })
    open.push(cont)
    const screen = await cont.waitFor(/delegate the work|child task/)
    expect(screen).toContain('delegate the work')
  } finally {
    await server.close()
  }
})
