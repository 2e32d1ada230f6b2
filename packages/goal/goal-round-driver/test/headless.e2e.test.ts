// End-to-end: the real `dsh --profile headless` bin (base bundle with the goal rows) against
// @dsh/llm-mock-server. The model sets a goal in the first turn; the driver runs the rounds.
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

vi.setConfig({ testTimeout: 90_000 })

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const call = (id: string, name: string, args: object) => ({ toolCalls: [{ id, name, arguments: args }] })
const work = (id: string) => call(id, 'bash', { command: 'echo step >> progress.txt', description: 'make progress' })

async function run(steps: unknown[]) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-goal-'))
  const cwd = join(root, 'work')
  mkdirSync(cwd)
  server = await startMockServer({ steps: steps as never })
  const result = await runDsh(
    ['--profile', 'headless', '--output-format', 'stream-json', 'keep going until progress.txt has three lines'],
    {
      cwd,
      env: {
        DSH_HOME: join(root, 'home'),
        DEEPSEEK_BASE_URL: server.baseURL,
        DEEPSEEK_API_KEY: 'x',
        DSH_PERMISSION_MODE: 'danger-full-access',
      },
    },
  )
  const lines = result.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
  const events = lines.filter((l) => l.type === 'event' && !l.subagent).map((l) => l.event)
  return { result, lines, events }
}

const goals = (events: { type: string; data: any }[]) => events.filter((e) => e.type === 'goal/set').map((e) => e.data)

describe('goals through dsh --profile headless', () => {
  it('a goal completes over three rounds and stops', async () => {
    const { result, lines, events } = await run([
      call('c0', 'create_goal', { objective: 'progress.txt has three lines', max_rounds: 5 }),
      { text: 'Goal set; starting.' },
      work('c1'),
      { text: 'one line' },
      work('c2'),
      { text: 'two lines' },
      work('c3'),
      call('c4', 'update_goal', { goal_id: 'goal-1', status: 'complete', summary: 'three lines written' }),
      { text: 'Done.' },
    ])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(server!.remaining).toBe(0)
    expect(events.filter((e) => e.type === 'goal/round').map((e) => e.data.round)).toEqual([1, 2, 3])
    const last = goals(events).at(-1)
    expect(last.goal).toMatchObject({ id: 'goal-1', status: 'complete', rounds: 3, note: 'three lines written' })
    // the round prompts reached the model
    const prompts = server!.requests.map((r) => JSON.stringify((r.body as { messages: unknown[] }).messages.at(-1)))
    expect(prompts[2]).toContain('[Goal round 1 of at most 5]')
    expect(lines.at(-1)).toMatchObject({ type: 'result', reason: 'completed', turns: 4 })
  })

  it('a goal stops on its round budget', async () => {
    const { result, events } = await run([
      call('c0', 'create_goal', { objective: 'never quite done', max_rounds: 2 }),
      { text: 'Goal set.' },
      work('c1'),
      { text: 'still going' },
      work('c2'),
      { text: 'still going' },
    ])
    expect(result.code).toBe(0)
    expect(server!.remaining).toBe(0)
    expect(server!.requests).toHaveLength(6)
    const last = goals(events).at(-1)
    expect(last).toMatchObject({
      by: 'driver',
      action: 'limit',
      goal: { status: 'budget-limited', rounds: 2, note: 'the round budget is spent (2 of 2 rounds)' },
    })
  })
})
