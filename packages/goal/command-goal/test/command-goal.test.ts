import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import CommandRegistry from '@dsh/commands'
import GoalService, { currentGoal } from '@dsh/goal'
import * as Driver from '@dsh/goal-round-driver'
import * as ToolGoal from '@dsh/tool-goal'
import * as CommandGoal from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function boot(script: ScriptEntry[] = [], withDriver = false) {
  harness = await createHarness({
    script,
    plugins: [
      [CommandRegistry, {}],
      [GoalService, {}],
      ...(withDriver
        ? ([
            [Driver, {}],
            [ToolGoal, {}],
          ] as const)
        : []),
      [CommandGoal, {}],
    ] as never,
  })
  const run = async (line: string) => {
    const result = await harness!.ctx.commands.dispatch(harness!.agent, line)
    if (!result.handled) throw new Error('not handled')
    return result.ok
      ? { ok: true as const, output: result.output ?? '' }
      : { ok: false as const, error: result.error.message }
  }
  return { h: harness, run }
}

describe('@dsh/command-goal', () => {
  it('creates, shows, edits, pauses, resumes, completes and clears without a model turn', async () => {
    const { h, run } = await boot()
    expect(await run('/goal')).toEqual({
      ok: true,
      output: 'No goal. Set one with /goal <objective> [--rounds N] [--tokens N].',
    })
    expect(await run('/goal Ship the release notes --rounds 3')).toEqual({
      ok: true,
      output: 'Goal goal-1: active\nObjective: Ship the release notes\nRounds 0/3, tokens 0',
    })
    expect((await run('/goal edit --tokens 5000 Ship the release notes and tag it')).output).toBe(
      'Goal goal-1: active\nObjective: Ship the release notes and tag it\nRounds 0/3, tokens 0/5000',
    )
    expect((await run('/goal pause')).output).toBe(
      'Goal goal-1: paused\nObjective: Ship the release notes and tag it\nRounds 0/3, tokens 0/5000\nNote: paused by the user',
    )
    expect((await run('/goal resume')).output).toMatch(/^Goal goal-1: active\n/)
    expect((await run('/goal edit --rounds none')).output).toContain('Rounds 0, tokens 0/5000')
    expect((await run('/goal complete notes published')).output).toContain('Goal goal-1: complete')
    expect(currentGoal(h.session)).toMatchObject({ status: 'complete', note: 'notes published' })
    expect(await run('/goal clear')).toEqual({ ok: true, output: 'Goal goal-1 cleared.' })
    expect(currentGoal(h.session)).toBeNull()
    expect(h.session.events.filter((e) => e.type === 'goal/set').map((e) => `${e.data.by}:${e.data.action}`)).toEqual([
      'human:create',
      'human:edit',
      'human:pause',
      'human:resume',
      'human:edit',
      'human:complete',
      'human:clear',
    ])
    expect(h.session.events.some((e) => e.type === 'turn/start')).toBe(false)
  })

  it('bad input: one line naming the mistake, nothing logged', async () => {
    const { h, run } = await boot()
    const cases: Array<[string, string]> = [
      [
        '/goal Do it --rounds 0',
        '/goal failed: --rounds must be a positive whole number (got 0); leave it out for no limit; usage: /goal ',
      ],
      [
        '/goal Do it --tokens -10',
        '/goal failed: --tokens must be a positive whole number (got -10); leave it out for no limit; usage: /goal ',
      ],
      [
        '/goal Do it --rounds many',
        '/goal failed: --rounds must be a positive whole number (got "many"); usage: /goal ',
      ],
      ['/goal Do it --budget 3', '/goal failed: unknown option --budget; use --rounds N or --tokens N; usage: /goal '],
      ['/goal --rounds 3', '/goal failed: the objective is empty; describe what must be true when the goal is done'],
      ['/goal pause', '/goal failed: this session has no goal'],
      ['/goal edit', '/goal failed: /goal edit needs a new objective, --rounds or --tokens; usage: /goal '],
    ]
    for (const [line, message] of cases) {
      const result = await run(line)
      expect(result.ok, line).toBe(false)
      expect(
        (result as { error: string }).error.startsWith(message),
        `${line}: ${(result as { error: string }).error}`,
      ).toBe(true)
      expect((result as { error: string }).error).not.toContain('\n')
    }
    expect(h.session.events.some((e) => e.type === 'goal/set')).toBe(false)
    await run('/goal First')
    expect((await run('/goal Second')).error).toBe(
      '/goal failed: the session already has an open goal (goal-1, active: "First"); it must be completed or cleared first',
    )
    expect((await run('/goal resume')).ok).toBe(true)
  })

  it('with the driver, /goal on an idle agent starts the first round at once; resume after a stop continues', async () => {
    const { h, run } = await boot(
      [
        { toolCalls: [{ name: 'get_goal', arguments: {} }] },
        { text: 'looked' },
        { text: 'thinking' },
        { toolCalls: [{ name: 'update_goal', arguments: { goal_id: 'goal-1', status: 'complete' } }] },
        { text: 'done' },
      ],
      true,
    )
    await run('/goal Tidy the README --rounds 5')
    await h.agent.idle()
    // two rounds without progress (get_goal is bookkeeping): paused by the driver
    expect(currentGoal(h.session)).toMatchObject({ status: 'paused', rounds: 2 })
    expect((await run('/goal')).output).toContain('Note: paused after 2 rounds in a row without progress')
    await run('/goal resume')
    await h.agent.idle()
    expect(currentGoal(h.session)).toMatchObject({ status: 'complete', rounds: 3 })
  })

  it('unloading removes /goal', async () => {
    harness = await createHarness({
      plugins: [
        [CommandRegistry, {}],
        [GoalService, {}],
      ],
    })
    const fiber = await harness.mount(CommandGoal, {})
    expect(harness.ctx.commands.get('goal')).toBeDefined()
    await fiber.dispose()
    expect(harness.ctx.commands.get('goal')).toBeUndefined()
  })
})
