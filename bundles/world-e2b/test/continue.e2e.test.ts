// End-to-end: `dsh -p --world e2b -c` reconnects to the sandbox the continued session ran in
// (left paused by `onExit: pause`), through the SDK's connect; when that sandbox is gone (killed
// from outside between the runs) a new one is created and that is said once, on stderr and as an
// `e2b/sandbox` event of the session.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

let standin: E2bStandin
let server: MockServer | undefined
beforeAll(async () => {
  standin = await startE2bStandin()
})
afterAll(async () => {
  await standin.close()
})
afterEach(async () => {
  await server?.close()
  server = undefined
})

function workspace() {
  const cwd = mkdtempSync(join(tmpdir(), 'dsh-e2b-continue-'))
  writeFileSync(join(cwd, '.gitignore'), 'home/\nlayer.yml\n')
  // The sandbox outlives the run (paused), so a continued session can come back to it.
  const layer = join(cwd, 'layer.yml')
  writeFileSync(layer, '- id: e2b\n  config:\n    onExit: pause\n')
  return { home: join(cwd, 'home'), cwd, layer }
}

const env = (home: string, s: MockServer) => ({
  DSH_HOME: home,
  DEEPSEEK_BASE_URL: s.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  ...standin.env,
})

const bash = (command: string) => ({ toolCalls: [{ name: 'bash', arguments: { command, description: 'run' } }] })

/** The text of the last tool result the model saw in request `i`. */
const toolText = (s: MockServer, i: number) => {
  const messages = (s.requests[i].body as { messages: { role: string; content: string }[] }).messages
  return messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''
}

/** Run 1: a sandbox is created, a file written there, and the sandbox paused at the end. */
async function first(home: string, cwd: string, layer: string): Promise<string> {
  const s = (server = await startMockServer({
    steps: [bash('echo one > marker.txt && hostname'), { text: 'First done.' }] as never,
  }))
  const run = await runDsh(['-p', '--world', 'e2b', '--patch', layer, 'make a marker'], {
    cwd,
    env: env(home, s),
    timeoutMs: 90_000,
  })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'First done.\n' })
  const id = toolText(s, 1).split('\n')[0]
  expect(id).toMatch(/^i[0-9a-f]+$/)
  expect(standin.get(id)?.record.state).toBe('paused')
  await s.close()
  server = undefined
  return id
}

describe('dsh -p --world e2b --continue', () => {
  it('reconnects to the session sandbox: same machine, its files, no new sandbox', async () => {
    const { home, cwd, layer } = workspace()
    const id = await first(home, cwd, layer)
    const creates = standin.requests.filter((r) => r.method === 'POST' && r.path === '/sandboxes').length
    const s = (server = await startMockServer({
      steps: [bash('hostname && cat marker.txt'), { text: 'Second done.' }] as never,
    }))
    const run = await runDsh(['-p', '--world', 'e2b', '--patch', layer, '-c', 'check the marker'], {
      cwd,
      env: env(home, s),
      timeoutMs: 90_000,
    })
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Second done.\n' })
    expect(toolText(s, 1).startsWith(`${id}\none\n`), toolText(s, 1)).toBe(true)
    expect(standin.requests.some((r) => r.method === 'POST' && r.path === `/sandboxes/${id}/connect`)).toBe(true)
    expect(standin.requests.filter((r) => r.method === 'POST' && r.path === '/sandboxes')).toHaveLength(creates)
    // The first run's change was already saved; this run changed nothing, so no new patch line.
    expect(run.stderr).toBe('')
  }, 60_000)

  it('a sandbox gone between the runs: a new one, said once on stderr and in the session', async () => {
    const { home, cwd, layer } = workspace()
    const id = await first(home, cwd, layer)
    expect(standin.kill(id)).toBe(true)
    const s = (server = await startMockServer({
      steps: [bash('hostname && ls'), { text: 'Second done.' }] as never,
    }))
    const run = await runDsh(
      ['-p', '--world', 'e2b', '--patch', layer, '-c', '--output-format', 'stream-json', 'check again'],
      { cwd, env: env(home, s), timeoutMs: 90_000 },
    )
    expect(run.code, run.stderr).toBe(0)
    const notice = `dsh: the session's E2B sandbox ${id} is gone (killed or expired); starting a new one (its files are lost; saved patches stay)\n`
    expect(run.stderr).toBe(notice)
    const fresh = toolText(s, 1).split('\n')[0]
    expect(fresh).toMatch(/^i[0-9a-f]+$/)
    expect(fresh).not.toBe(id)
    // The new sandbox got the workspace (uploaded again), not the lost marker.
    expect(toolText(s, 1)).not.toContain('marker.txt')
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; event?: { type: string; data: Record<string, unknown> } })
      .filter((line) => line.event?.type === 'e2b/sandbox')
      .map((line) => line.event?.data)
    expect(events[0]).toMatchObject({ sandboxId: id, action: 'lost' })
    expect(String(events[0]?.reason)).toMatch(/^gone before this run: /)
    expect(events[1]).toMatchObject({ sandboxId: fresh, action: 'created' })
    expect(events.filter((e) => e?.action === 'lost')).toHaveLength(1)
  }, 60_000)
})
