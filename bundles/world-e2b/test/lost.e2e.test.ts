// End-to-end: the run's sandbox is killed (as an expiry would) while a command runs in it. The
// tool result says so, and the next step follows `onLost`: `recreate` starts a new sandbox with a
// fresh upload of the workspace (the lost one's files are gone), `stop` starts none and every later
// remote call fails with one sentence. Real bin, stand-in E2B, mock model.
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

const bash = (command: string) => ({ toolCalls: [{ name: 'bash', arguments: { command, description: 'run' } }] })

/** The text of the last tool result the model saw in request `i`. */
const toolText = (s: MockServer, i: number) => {
  const messages = (s.requests[i].body as { messages: { role: string; content: string }[] }).messages
  return messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''
}

/**
 * One run whose first command is killed with its sandbox, then a second command. Answers the run,
 * the model's view, the lost sandbox id, the stand-in requests of the run and the `e2b/sandbox` events.
 */
async function runWithLoss(onLost: 'recreate' | 'stop') {
  const cwd = mkdtempSync(join(tmpdir(), `dsh-e2b-lost-${onLost}-`))
  writeFileSync(join(cwd, '.gitignore'), 'home/\nlayer.yml\n')
  writeFileSync(join(cwd, 'notes.txt'), 'alpha\n')
  const layer = join(cwd, 'layer.yml')
  writeFileSync(layer, `- id: e2b\n  config:\n    onLost: ${onLost}\n`)
  const s = (server = await startMockServer({
    steps: [
      bash('echo lost > lost.txt; echo begun; sleep 60'),
      bash('hostname && ls'),
      bash('echo third'),
      { text: 'Handled the loss.' },
    ] as never,
  }))
  const before = new Set(standin.sandboxes().map((x) => x.record.id))
  const mark = standin.requests.length
  let finished = false
  const running = runDsh(
    ['-p', '--world', 'e2b', '--patch', layer, '--output-format', 'stream-json', 'survive a loss'],
    {
      cwd,
      env: { DSH_HOME: join(cwd, 'home'), DEEPSEEK_BASE_URL: s.baseURL, DEEPSEEK_API_KEY: 'sk-test', ...standin.env },
      timeoutMs: 90_000,
    },
  ).finally(() => (finished = true))
  // The observable event: the first command sleeping in a new sandbox. Then kill that sandbox.
  const sleeping = () =>
    standin
      .sandboxes()
      .find(
        (x) =>
          !before.has(x.record.id) &&
          [...x.processes.values()].some((p) => p.config.args.join(' ').includes('sleep 60')),
      )
  await expect.poll(() => finished || sleeping() !== undefined, { timeout: 45_000, interval: 20 }).toBe(true)
  const lost = sleeping()?.record.id as string
  expect(lost).toBeDefined()
  expect(standin.kill(lost)).toBe(true)
  const run = await running
  const events = run.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; event?: { type: string; data: Record<string, unknown> } })
    .filter((line) => line.event?.type === 'e2b/sandbox')
    .map((line) => line.event?.data as Record<string, unknown>)
  return { run, s, lost, requests: standin.requests.slice(mark), events }
}

describe('a sandbox lost mid-turn', () => {
  it('onLost: recreate: the result says so, the next step runs in a new sandbox with a fresh upload', async () => {
    const { run, s, lost, requests, events } = await runWithLoss('recreate')
    expect(run.code, run.stderr).toBe(0)
    expect(toolText(s, 1)).toContain(
      `the E2B sandbox ${lost} stopped (killed or expired) while this ran; the next command starts a new sandbox (files written there so far are lost)`,
    )
    // The next step: another machine, holding the uploaded workspace but not the lost file.
    const [fresh, ...listing] = toolText(s, 2).trim().split('\n')
    expect(fresh).toMatch(/^i[0-9a-f]+$/)
    expect(fresh).not.toBe(lost)
    expect(listing).toContain('notes.txt')
    expect(listing).not.toContain('lost.txt')
    expect(toolText(s, 3)).toMatch(/^third\n/)
    // Two creates; the new sandbox is killed at the end (the lost one is not killed again). The
    // stream's events end with the turn, so the kill is seen in the stand-in's requests.
    expect(requests.filter((r) => r.method === 'POST' && r.path === '/sandboxes').map((r) => r.sandboxId)).toEqual([
      lost,
      fresh,
    ])
    expect(requests.filter((r) => r.method === 'DELETE').map((r) => r.path)).toEqual([`/sandboxes/${fresh}`])
    expect(standin.get(fresh)).toBeUndefined()
    expect(events.map((e) => [e.sandboxId, e.action])).toEqual([
      [lost, 'created'],
      [lost, 'lost'],
      [fresh, 'created'],
    ])
  }, 60_000)

  it('onLost: stop: the result says so, no new sandbox, later steps fail with one sentence', async () => {
    const { run, s, lost, requests, events } = await runWithLoss('stop')
    expect(run.code, run.stderr).toBe(0)
    expect(toolText(s, 1)).toContain(
      `the E2B sandbox ${lost} stopped (killed or expired) while this ran; the e2b world is stopped for this run`,
    )
    const stopped = `the E2B sandbox ${lost} is gone (killed or expired) and onLost is "stop": no further remote commands run in this session`
    expect(toolText(s, 2)).toContain(stopped)
    expect(toolText(s, 3)).toContain(stopped)
    // One create and nothing after the loss: no new sandbox is billed, nothing is left to kill.
    expect(requests.filter((r) => r.method === 'POST' && r.path === '/sandboxes')).toHaveLength(1)
    expect(requests.filter((r) => r.method === 'DELETE')).toHaveLength(0)
    expect(
      standin.sandboxes().filter((x) => x.record.metadata.dsh === '1' && x.record.state === 'running'),
    ).toHaveLength(0)
    expect(events.map((e) => [e.sandboxId, e.action])).toEqual([
      [lost, 'created'],
      [lost, 'lost'],
    ])
    expect(run.stderr).toBe('')
  }, 60_000)
})
