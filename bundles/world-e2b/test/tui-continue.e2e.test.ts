// End-to-end: `dsh --world e2b -c` in the TUI (real bin in tmux, stand-in E2B, mock model) when the
// continued session's sandbox expired between the runs: the first command creates a new sandbox,
// and the user reads why in the transcript (written to stderr, the line would land under the
// screen and be drawn over).
import { mkdtempSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { TuiSession, killServer, workspace } from '@dsh/cli-testkit/tui'
import { startMockServer } from '@dsh/llm-mock-server'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

let standin: E2bStandin
const open: TuiSession[] = []
beforeAll(async () => {
  standin = await startE2bStandin()
})
afterEach(async () => {
  for (const s of open.splice(0)) await s.close()
})
afterAll(async () => {
  killServer()
  await standin.close()
})

const bash = (command: string) => ({ toolCalls: [{ name: 'bash', arguments: { command, description: 'run' } }] })

describe('dsh --world e2b -c (TUI): a sandbox that expired between the runs', () => {
  it('is replaced, and the transcript says so', async () => {
    const ws = workspace({ 'notes.txt': 'local\n' })
    // The sandbox outlives the first run (paused), so the continued session looks for it.
    const layer = join(mkdtempSync(join(ws.root, 'layer-')), 'layer.yml')
    writeFileSync(layer, '- id: e2b\n  config:\n    onExit: pause\n')
    const first = await startMockServer({ steps: [bash('hostname'), { text: 'First done.' }] as never })
    const run = await runDsh(['-p', '--world', 'e2b', '--patch', layer, 'look'], {
      cwd: ws.cwd,
      env: {
        DSH_HOME: ws.home,
        DEEPSEEK_BASE_URL: first.baseURL,
        DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
        ...standin.env,
      },
      timeoutMs: 90_000,
    })
    await first.close()
    expect(run.code, run.stderr).toBe(0)
    const paused = standin.sandboxes().filter((s) => s.record.state === 'paused')
    expect(paused).toHaveLength(1)
    const id = paused[0].record.id
    // It expires while nobody uses it.
    standin.kill(id)

    const tui = await TuiSession.start({
      steps: [bash('echo again'), { text: 'Second done.' }],
      ws,
      args: ['--profile', 'tui', '--world', 'e2b', '--patch', layer, '-c', 'again'],
      env: standin.env,
    })
    open.push(tui)
    const screen = await tui.settled(/Second done\./, 45_000)
    const text = `${tui.history()}\n${screen}`.replace(/\n/g, ' ').replace(/ +/g, ' ')
    expect(text).toContain(
      `dsh: the session's E2B sandbox ${id} is gone (killed or expired); starting a new one (its files are lost; saved patches stay)`,
    )
    // In the transcript, above the turn's answer, not a stray write under the screen.
    const lines = tui.lines()
    const notice = lines.findIndex((l) => l.includes(`dsh: the session's E2B sandbox ${id} is gone`))
    const answer = lines.findIndex((l) => l.includes('Second done.'))
    expect(notice, screen).toBeGreaterThan(-1)
    expect(answer).toBeGreaterThan(notice)
    // A new sandbox did the work.
    expect(standin.sandboxes().filter((s) => s.record.id !== id && s.record.state === 'running')).toHaveLength(1)
  }, 120_000)
})
