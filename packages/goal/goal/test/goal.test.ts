import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import SessionStore, { type Session } from '@dsh/session'
import { DurableSessions } from '@dsh/session-persistence'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import GoalService, { currentGoal, GoalError, type GoalChange } from '../src/index.ts'

let root: string
const trees: Context[] = []
async function tree(withGoals: boolean) {
  const ctx = new Context()
  await ctx.plugin(SessionStore)
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5 })
  await ctx.plugin(DurableSessions, { origin: 'test' })
  if (withGoals) await ctx.plugin(GoalService, { maxObjectiveChars: 4000 })
  trees.push(ctx)
  return ctx
}
const dispose = (ctx: Context) => (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-goal-'))
})
afterEach(async () => {
  for (const ctx of trees.splice(0)) await dispose(ctx)
  await rm(root, { recursive: true, force: true })
})

const code = (fn: () => unknown) => {
  try {
    fn()
  } catch (error) {
    if (GoalError.is(error)) return `${error.code}: ${error.message}`
    throw error
  }
  return 'no error'
}

describe('@dsh/goal', () => {
  it('the goal is the last goal/set; a stored session resumes with it (also in a build without the goal rows)', async () => {
    const a = await tree(true)
    const s = a.sessions.create({ cwd: '/w' })
    a.goals.create(s, { objective: 'Port the parser', maxRounds: 4 }, 'human')
    a.goals.account(s, { tokens: 120, round: true })
    await a.durableSessions.checkpoint(s.id)
    const value = currentGoal(s)
    expect(value).toMatchObject({ id: 'goal-1', status: 'active', rounds: 1, tokens: 120, revision: 2 })
    expect(a.goals.isArmed(s)).toBe(true)
    await dispose(a)
    // Ignorable events: a build without this plugin still loads the log.
    const bare = await tree(false)
    await expect(bare.durableSessions.resume(s.id)).resolves.toBeDefined()
    await dispose(bare)
    const b = await tree(true)
    const { session } = await b.durableSessions.resume(s.id)
    expect(b.goals.get(session)).toEqual(value)
    // Permission to continue does not survive the process.
    expect(b.goals.isArmed(session)).toBe(false)
    b.goals.arm(session)
    expect(b.goals.isArmed(session)).toBe(true)
  })

  it('edits are compare-and-set: a stale revision or goal id is refused and nothing is logged', async () => {
    const ctx = await tree(true)
    const s = ctx.sessions.create({ cwd: '/w' })
    const goal = ctx.goals.create(s, { objective: 'A' }, 'human')
    ctx.goals.edit(s, { objective: 'B' }, { by: 'human', expectedRevision: goal.revision })
    const before = s.length
    expect(code(() => ctx.goals.edit(s, { objective: 'C' }, { by: 'human', expectedRevision: goal.revision }))).toBe(
      'STALE_REVISION: the goal changed since it was read (revision 2, expected 1); read it again',
    )
    expect(code(() => ctx.goals.setStatus(s, 'paused', { by: 'human', goalId: 'goal-9' }))).toBe(
      "STALE_GOAL: goal goal-9 is no longer the session's goal (the current one is goal-1)",
    )
    expect(s.length).toBe(before)
    expect(currentGoal(s)!.objective).toBe('B')
  })

  it('budgets: zero, negative and fractional budgets are refused; a spent budget blocks resume until raised', async () => {
    const ctx = await tree(true)
    const s = ctx.sessions.create({ cwd: '/w' })
    expect(code(() => ctx.goals.create(s, { objective: 'A', maxRounds: 0 }, 'human'))).toBe(
      'INVALID_GOAL: maxRounds must be a positive whole number (got 0); leave it out for no limit',
    )
    expect(code(() => ctx.goals.create(s, { objective: 'A', maxTokens: -1 }, 'human'))).toMatch(
      /^INVALID_GOAL: maxTokens must be a positive whole number \(got -1\)/,
    )
    expect(code(() => ctx.goals.create(s, { objective: 'A', maxRounds: 1.5 }, 'human'))).toMatch(
      /^INVALID_GOAL: maxRounds .* \(got 1\.5\)/,
    )
    expect(s.length).toBe(0)
    ctx.goals.create(s, { objective: 'A', maxRounds: 1 }, 'human')
    const limited = ctx.goals.account(s, { tokens: 10, round: true })!
    expect(limited).toMatchObject({ status: 'budget-limited', note: 'the round budget is spent (1 of 1 rounds)' })
    expect(ctx.goals.isArmed(s)).toBe(false)
    expect(code(() => ctx.goals.setStatus(s, 'active', { by: 'human' }))).toBe(
      'BUDGET_SPENT: cannot resume: the round budget is spent (1 of 1 rounds); raise the budget first',
    )
    expect(code(() => ctx.goals.edit(s, { maxRounds: -3 }, { by: 'human' }))).toMatch(/^INVALID_GOAL/)
    // Raising the budget revives it; lowering it below use limits it again.
    expect(ctx.goals.edit(s, { maxRounds: 3 }, { by: 'human' })).toMatchObject({ status: 'active' })
    expect(ctx.goals.isArmed(s)).toBe(true)
    expect(ctx.goals.edit(s, { maxRounds: 1 }, { by: 'human' })).toMatchObject({ status: 'budget-limited' })
  })

  it('one open goal at a time; a completed goal can be replaced; clear logs null', async () => {
    const ctx = await tree(true)
    const changes: GoalChange[] = []
    ctx.on('goal/changed', (change) => void changes.push(change))
    const s: Session = ctx.sessions.create({ cwd: '/w' })
    ctx.goals.create(s, { objective: 'A' }, 'model')
    expect(code(() => ctx.goals.create(s, { objective: 'B' }, 'human'))).toMatch(/^GOAL_EXISTS/)
    ctx.goals.setStatus(s, 'complete', { by: 'model', note: 'done' })
    expect(code(() => ctx.goals.setStatus(s, 'paused', { by: 'human' }))).toBe(
      'GOAL_FINISHED: goal goal-1 is already complete',
    )
    expect(code(() => ctx.goals.edit(s, { objective: 'x' }, { by: 'human' }))).toMatch(/^GOAL_FINISHED/)
    expect(ctx.goals.create(s, { objective: 'B' }, 'human').id).toBe('goal-2')
    ctx.goals.clear(s, { by: 'human' })
    expect(currentGoal(s)).toBeNull()
    expect(code(() => ctx.goals.clear(s, { by: 'human' }))).toBe('NO_GOAL: this session has no goal')
    expect(changes.map((c) => `${c.by}:${c.action}:${c.goal?.status ?? null}`)).toEqual([
      'model:create:active',
      'model:complete:complete',
      'human:create:active',
      'human:clear:null',
    ])
  })

  it('refuses an empty or over-long objective', async () => {
    const ctx = await tree(false)
    await ctx.plugin(GoalService, { maxObjectiveChars: 20 })
    const s = ctx.sessions.create({ cwd: '/w' })
    expect(code(() => ctx.goals.create(s, { objective: ' \n ' }, 'human'))).toBe(
      'INVALID_GOAL: the objective is empty; describe what must be true when the goal is done',
    )
    expect(code(() => ctx.goals.create(s, { objective: 'x'.repeat(21) }, 'human'))).toBe(
      'INVALID_GOAL: the objective has 21 characters; keep it under 20',
    )
  })
})
