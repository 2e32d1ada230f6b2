import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Harness } from '@dsh/agent-loop-testkit'
import type { Agent } from '@dsh/agent'
import type { Context } from 'cordis'
import { currentGoal } from '@dsh/goal'
import { ROUND_SOURCE } from '../src/index.ts'
import { complete, goalHarness, work } from './fixtures.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const create = (args: object) => ({
  toolCalls: [{ name: 'create_goal', arguments: { objective: 'Make the widget pass its tests', ...args } }],
})
const types = (h: Harness, type: string) => h.session.events.filter((e) => e.type === type)
const userTexts = (h: Harness) =>
  h.session.events.flatMap((e) =>
    e.type === 'user/message' ? [{ text: (e.data.content[0] as { text: string }).text, source: e.data.source }] : [],
  )

describe('@dsh/goal-round-driver', () => {
  it('runs rounds until the model marks the goal complete, then stops', async () => {
    harness = await goalHarness([
      create({ max_rounds: 5 }),
      { text: 'goal set' },
      work,
      { text: 'round 1 done' },
      work,
      { text: 'round 2 done' },
      complete,
      { text: 'finished' },
    ])
    await harness.prompt('keep at it until the widget passes')
    await harness.agent.idle()
    const goal = currentGoal(harness.session)!
    expect(goal).toMatchObject({ status: 'complete', rounds: 3, note: 'all done' })
    expect(types(harness, 'goal/round').map((e) => (e.data as { round: number }).round)).toEqual([1, 2, 3])
    expect(types(harness, 'goal/round-end').map((e) => (e.data as { progress: boolean }).progress)).toEqual([
      true,
      true,
      false,
    ])
    expect(types(harness, 'turn/end')).toHaveLength(4)
    const rounds = userTexts(harness).filter((m) => m.source.kind === 'plugin')
    expect(rounds).toHaveLength(3)
    expect(rounds[0].source).toEqual({ kind: 'plugin', plugin: ROUND_SOURCE, label: 'goal round 1' })
    expect(rounds[0].text).toContain('[Goal round 1 of at most 5]')
    expect(rounds[0].text).toContain('Objective: Make the widget pass its tests')
    // every turn's tokens were counted (the scripted model reports 15 per request)
    expect(goal.tokens).toBe(8 * 15)
    expect(harness.model.remaining).toBe(0)
  })

  it('stops on the round budget (budget-limited) without further rounds', async () => {
    harness = await goalHarness([
      create({ max_rounds: 2 }),
      { text: 'set' },
      work,
      { text: 'r1' },
      work,
      { text: 'r2' },
      { text: 'never asked' },
    ])
    await harness.prompt('go')
    await harness.agent.idle()
    const goal = currentGoal(harness.session)!
    expect(goal).toMatchObject({ status: 'budget-limited', rounds: 2 })
    expect(goal.note).toBe('the round budget is spent (2 of 2 rounds)')
    expect(harness.model.remaining).toBe(1)
    expect(harness.session.last('goal/set')!.data).toMatchObject({ by: 'driver', action: 'limit' })
  })

  it('stops on the token budget', async () => {
    // 15 tokens per request: the creating turn spends 30, round 1 spends 30 more (60 >= 50).
    harness = await goalHarness([
      create({ token_budget: 50 }),
      { text: 'set' },
      work,
      { text: 'r1' },
      { text: 'never asked' },
    ])
    await harness.prompt('go')
    await harness.agent.idle()
    expect(currentGoal(harness.session)).toMatchObject({
      status: 'budget-limited',
      rounds: 1,
      tokens: 60,
      note: 'the token budget is spent (60 of 50 tokens)',
    })
    expect(harness.model.remaining).toBe(1)
  })

  it('pauses after repeated rounds without progress', async () => {
    harness = await goalHarness(
      [create({}), { text: 'set' }, { text: 'thinking' }, { text: 'still thinking' }, { text: 'never asked' }],
      { driver: { maxIdleRounds: 2 } },
    )
    await harness.prompt('go')
    await harness.agent.idle()
    expect(currentGoal(harness.session)).toMatchObject({
      status: 'paused',
      rounds: 2,
      note: 'paused after 2 rounds in a row without progress (no tool calls)',
    })
    expect(harness.session.last('goal/set')!.data.action).toBe('stall')
    expect(harness.model.remaining).toBe(1)
  })

  it('a goal without a round budget stops at the driver limit', async () => {
    harness = await goalHarness(
      [create({}), { text: 'set' }, work, { text: 'r1' }, work, { text: 'r2' }, { text: 'never' }],
      { driver: { defaultMaxRounds: 2 } },
    )
    await harness.prompt('go')
    await harness.agent.idle()
    expect(currentGoal(harness.session)).toMatchObject({ status: 'paused', rounds: 2 })
    expect(currentGoal(harness.session)!.note).toContain("driver's limit")
  })

  it('a human message queued before a round wins: the round prompt is dropped and rounds go on after', async () => {
    let sent = false
    const interject = {
      name: 'interject',
      apply(ctx: Context) {
        // Sends a human message after the loop's last steering check of turn 0, so it and the
        // round prompt are claimed by the same next turn.
        ctx.on('agent/turn-stopping', ({ agent, turn }: { agent: Agent; turn: number }) => {
          if (turn === 0 && !sent) {
            sent = true
            void agent.send('what is the status?')
          }
        })
      },
    }
    harness = await goalHarness(
      [create({ max_rounds: 1 }), { text: 'set' }, { text: 'status: working' }, complete, { text: 'done' }],
      { plugins: [[interject]] },
    )
    await harness.prompt('go')
    await harness.agent.idle()
    const messages = userTexts(harness)
    expect(messages.map((m) => m.source.kind)).toEqual(['human', 'human', 'plugin'])
    expect(messages[1].text).toBe('what is the status?')
    expect(messages[2].text).toContain('[Goal round 1 of at most 1]')
    expect(types(harness, 'goal/round')).toHaveLength(1)
    expect(currentGoal(harness.session)).toMatchObject({ status: 'complete', rounds: 1 })
  })

  it('a cancelled round pauses the goal', async () => {
    harness = await goalHarness([create({}), { text: 'set' }, { hang: true }])
    const done = harness.prompt('go')
    await done
    // round 1 is running and hangs; cancel it
    // The hanging step is taken once round 1's model request is in flight.
    await vi.waitFor(() => expect(harness!.model.remaining).toBe(0), { timeout: 15_000, interval: 5 })
    expect(types(harness, 'goal/round')).toHaveLength(1)
    harness.agent.abort()
    await harness.agent.idle()
    expect(currentGoal(harness.session)).toMatchObject({
      status: 'paused',
      rounds: 1,
      note: 'paused because the turn was cancelled',
    })
    expect(types(harness, 'goal/round-end').at(-1)!.data).toMatchObject({ reason: 'cancelled', round: 1 })
  })

  it('a failed round pauses the goal with the error', async () => {
    harness = await goalHarness([create({}), { text: 'set' }, { error: { code: 'SERVER', message: 'boom' } }])
    await harness.prompt('go')
    await harness.agent.idle()
    expect(currentGoal(harness.session)).toMatchObject({
      status: 'paused',
      note: 'paused: the turn failed: SERVER: boom',
    })
  })

  it('a resumed session keeps its active goal but starts no round until a human message', async () => {
    // The log of an earlier process: an active goal (written there by the goal service alone).
    const { createHarness } = await import('@dsh/agent-loop-testkit')
    const { default: GoalService } = await import('@dsh/goal')
    const earlier = await createHarness({ plugins: [[GoalService, {}]] })
    const session = earlier.session
    earlier.ctx.goals.create(session, { objective: 'Ship it', maxRounds: 3 }, 'human')
    await earlier.agent.dispose()
    harness = await goalHarness([{ text: 'hello again' }, work, { text: 'r' }, complete, { text: 'done' }], { session })
    await earlier.dispose()
    const before = harness.session.length
    // A round would be sent to the agent (which then drives a turn); wait for the agent to have
    // nothing left to drive, not for time.
    await harness.agent.idle()
    expect(harness.session.length).toBe(before)
    expect(harness.ctx.goals.isArmed(session)).toBe(false)
    expect(currentGoal(session)!.status).toBe('active')
    await harness.prompt('continue please')
    await harness.agent.idle()
    expect(currentGoal(harness.session)).toMatchObject({ status: 'complete', rounds: 2 })
  })

  it("a fork's copy of an active goal drives no rounds in the child", async () => {
    const { createHarness } = await import('@dsh/agent-loop-testkit')
    const { default: GoalService } = await import('@dsh/goal')
    const parent = await createHarness({ plugins: [[GoalService, {}]] })
    parent.ctx.goals.create(parent.session, { objective: 'Parent work' }, 'human')
    const child = parent.ctx.sessions.fork(parent.session, parent.session.length)
    expect(child.parent).toBeDefined()
    expect(currentGoal(child)!.status).toBe('active')
    await parent.agent.dispose()
    harness = await goalHarness([{ text: 'child answer' }, { text: 'never' }], { session: child })
    await parent.dispose()
    await harness.prompt('do the subtask')
    await harness.agent.idle()
    expect(harness.model.remaining).toBe(1)
    expect(types(harness, 'goal/round')).toHaveLength(0)
  })
})
