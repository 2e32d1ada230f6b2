import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import GoalService, { currentGoal } from '@dsh/goal'
import * as ToolGoal from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

type Result = { message: { content: { text: string }[] }; error?: { code: string } }
const results = (h: Harness) => h.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data as Result)
const text = (r: Result) => r.message.content[0].text
const call = (name: string, args: object) => ({ toolCalls: [{ name, arguments: args }] })

// Without the round driver: these tests look at the tools alone.
async function boot(script: ScriptEntry[], config: object = {}) {
  harness = await createHarness({
    script,
    plugins: [
      [GoalService, {}],
      [ToolGoal, config],
    ],
  })
  return harness
}

describe('@dsh/tool-goal', () => {
  it('create_goal, get_goal and update_goal complete', async () => {
    const h = await boot([
      call('get_goal', {}),
      call('create_goal', { objective: '  All tests pass  ', max_rounds: 4, token_budget: 10000 }),
      call('get_goal', {}),
      call('update_goal', { goal_id: 'goal-1', status: 'complete', summary: 'tests pass (ran npm test)' }),
      { text: 'done' },
    ])
    await h.prompt('go')
    const r = results(h)
    expect(text(r[0])).toBe('This session has no goal.')
    expect(text(r[1])).toBe(
      'Goal goal-1 (active)\nObjective: All tests pass\nRounds: 0 of 4. Tokens: 0 of 10000.\n' +
        'The goal is active: keep working; when your turn ends the next round starts. Mark it complete with update_goal when the objective is met.',
    )
    expect(text(r[2])).toBe('Goal goal-1 (active)\nObjective: All tests pass\nRounds: 0 of 4. Tokens: 0 of 10000.')
    expect(text(r[3])).toBe('Goal goal-1 is complete. No further rounds will start.')
    expect(currentGoal(h.session)).toMatchObject({
      status: 'complete',
      note: 'tests pass (ran npm test)',
      createdBy: 'model',
    })
    expect(h.session.events.filter((e) => e.type === 'goal/set').map((e) => [e.data.by, e.data.action])).toEqual([
      ['model', 'create'],
      ['model', 'complete'],
    ])
  })

  it('refuses a second open goal, a zero or negative budget, and an empty objective', async () => {
    const h = await boot([
      call('create_goal', { objective: 'x', max_rounds: 0 }),
      call('create_goal', { objective: 'x', token_budget: -5 }),
      call('create_goal', { objective: '   ' }),
      call('create_goal', { objective: 'first' }),
      call('create_goal', { objective: 'second' }),
      { text: 'ok' },
    ])
    await h.prompt('go')
    const r = results(h)
    expect(r.map((x) => x.error?.code)).toEqual([
      'INVALID_GOAL',
      'INVALID_GOAL',
      'INVALID_GOAL',
      undefined,
      'GOAL_EXISTS',
    ])
    expect(text(r[0])).toBe(
      'Error [INVALID_GOAL]: maxRounds must be a positive whole number (got 0); leave it out for no limit.',
    )
    expect(text(r[1])).toBe(
      'Error [INVALID_GOAL]: maxTokens must be a positive whole number (got -5); leave it out for no limit.',
    )
    expect(text(r[4])).toBe(
      'Error [GOAL_EXISTS]: the session already has an open goal (goal-1, active: "first"); it must be completed or cleared first.',
    )
    expect(h.session.events.filter((e) => e.type === 'goal/set')).toHaveLength(1)
  })

  it('update_goal: a stale goal id, a goal the human changed during the round, a finished goal, no goal', async () => {
    const h = await boot([
      call('update_goal', { goal_id: 'goal-1', status: 'complete' }),
      call('create_goal', { objective: 'first' }),
      call('update_goal', { goal_id: 'goal-7', status: 'complete' }),
      // the human edits the goal while this turn runs
      () => {
        harness!.ctx.goals.edit(harness!.session, { objective: 'first, and document it' }, { by: 'human' })
        return call('update_goal', { goal_id: 'goal-1', status: 'complete' })
      },
      { text: 'ok' },
    ])
    await h.prompt('go')
    let r = results(h)
    expect(r.map((x) => x.error?.code)).toEqual(['NO_GOAL', undefined, 'STALE_GOAL', 'STALE_ROUND'])
    expect(text(r[2])).toBe(
      "Error [STALE_GOAL]: goal goal-7 is no longer the session's goal (the current one is goal-1).",
    )
    expect(text(r[3])).toBe(
      'Error [STALE_ROUND]: the user changed goal goal-1 after this round started; read it with get_goal and check the objective again before completing it.',
    )
    expect(currentGoal(h.session)!.status).toBe('active')
    // In the next turn the edit is old news: completing works; completing again is refused.
    h.model.push(
      call('update_goal', { goal_id: 'goal-1', status: 'complete' }),
      call('update_goal', { goal_id: 'goal-1', status: 'complete' }),
      { text: 'ok' },
    )
    await h.prompt('the objective is met now')
    r = results(h)
    expect(r.slice(4).map((x) => x.error?.code)).toEqual([undefined, 'GOAL_FINISHED'])
    expect(text(r[5])).toBe('Error [GOAL_FINISHED]: goal goal-1 is already complete.')
  })

  it('the model cannot pause or clear (schema), and create_goal can be switched off', async () => {
    const h = await boot([call('update_goal', { goal_id: 'goal-1', status: 'paused' }), { text: 'ok' }], {
      allowCreate: false,
    })
    await h.prompt('go')
    expect(results(h)[0].error?.code).toBe('INVALID_ARGUMENTS')
    expect(h.ctx.tools.get('create_goal')).toBeUndefined()
    expect(h.ctx.tools.get('get_goal')).toBeDefined()
  })

  it('answers NO_SESSION outside a session, and unloading removes the tools', async () => {
    harness = await createHarness({ plugins: [[GoalService, {}]] })
    const fiber = await harness.mount(ToolGoal, {})
    const result = await harness.ctx.tools.execute({ callId: 'c', name: 'get_goal', arguments: '{}' }, { cwd: '/' })
    expect(result.error?.code).toBe('NO_SESSION')
    await fiber.dispose()
    expect(harness.ctx.tools.get('update_goal')).toBeUndefined()
  })

  it("a subagent's session (it has a parent) cannot own a goal", async () => {
    const parent = await createHarness({ plugins: [[GoalService, {}]] })
    const child = parent.ctx.sessions.create({ cwd: '/w', parent: { sessionId: parent.session.id, boundary: 0 } })
    await parent.agent.dispose()
    harness = await createHarness({
      session: child,
      script: [call('create_goal', { objective: 'mine' }), { text: 'ok' }],
      plugins: [
        [GoalService, {}],
        [ToolGoal, {}],
      ],
    })
    await parent.dispose()
    await harness.prompt('go')
    expect(text(results(harness)[0])).toBe(
      "Error [SUBAGENT_SESSION]: goals belong to the top-level session, not a subagent's; report progress to your parent instead.",
    )
    expect(currentGoal(harness.session)).toBeNull()
  })
})
