// @dsh/goal-round-driver: turns a session's active, armed goal (`ctx.goals`) into continuation
// rounds on the same agent. When a turn ends and the goal is still active, the driver accounts the
// turn's tokens, checks the budgets and the no-progress streak, and queues the next round prompt
// through the public `agent.send` (a `user/message` whose source names this plugin), so the round
// is an ordinary turn in the log. A human message claimed by the same turn wins: the round prompt
// is dropped at `agent/pre-step` and the turn is the human's.
import { describeTurnEnd } from '@dsh/session'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent, InjectedContext, TurnResult } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type { GoalService, Goal, GoalAction } from '@dsh/goal'

export const name = 'goal-round-driver'
export const inject = ['goals', 'agents']

/** The `source.plugin` of a round prompt's `user/message`. */
export const ROUND_SOURCE = 'goal-round-driver'
/** Calls to these tools are bookkeeping, not progress. */
export const GOAL_TOOLS: ReadonlySet<string> = new Set(['create_goal', 'get_goal', 'update_goal'])

export interface Config {
  maxIdleRounds: number
  defaultMaxRounds: number
}

export const Config: Schema<Config> = Schema.object({
  maxIdleRounds: Schema.natural()
    .min(1)
    .default(2)
    .description('Consecutive rounds without a (non-goal) tool call after which the goal is paused.'),
  defaultMaxRounds: Schema.natural()
    .min(1)
    .default(50)
    .description('Most rounds of a goal that has no round budget of its own.'),
})

export function roundPrompt(goal: Goal, round: number): string {
  const rounds = goal.maxRounds !== undefined ? ` of at most ${goal.maxRounds}` : ''
  const tokens = goal.maxTokens !== undefined ? `${goal.tokens} of ${goal.maxTokens} tokens` : `${goal.tokens} tokens`
  return [
    `[Goal round ${round}${rounds}] Continue working toward the session goal.`,
    `Objective: ${goal.objective}`,
    `Goal id: ${goal.id}. Spent so far: ${goal.rounds} round${goal.rounds === 1 ? '' : 's'}, ${tokens}.`,
    'Take the next concrete step now. When the objective is achieved and verified, call update_goal with status "complete" and a one-line summary. If you cannot go on without the user, say what you need.',
  ].join('\n')
}

const isRound = (message: InjectedContext): boolean =>
  message.source.kind === 'plugin' && message.source.plugin === ROUND_SOURCE

function madeProgress(session: Session, fromSeq: number): boolean {
  for (const event of session.slice(fromSeq)) {
    if (event.type === 'tool/call' && !GOAL_TOOLS.has(event.data.name)) return true
  }
  return false
}

interface RunningRound {
  goalId: Goal['id']
  round: number
  turn: number
  startSeq: number
}

export function apply(ctx: Context, config: Config): void {
  const goals: GoalService = ctx.goals
  const running = new Map<string, RunningRound>()
  const queued = new Set<string>()
  const idleStreak = new Map<string, number>()

  const start = (agent: Agent, goal: Goal): void => {
    const id = agent.session.id
    if (queued.has(id) || agent.status === 'disposed') return
    queued.add(id)
    agent
      .send(roundPrompt(goal, goal.rounds + 1), {
        source: { kind: 'plugin', plugin: ROUND_SOURCE, label: `goal round ${goal.rounds + 1}` },
      })
      .catch(() => {})
      .finally(() => queued.delete(id))
  }

  ctx.on('agent/pre-step', async (payload, next) => {
    // Subagents' sessions (a fork carries its parent's goal events) are never driven.
    if (payload.agent.session.parent) return next()
    const { session } = payload.agent
    if (payload.step !== 0) {
      // A round prompt only ever opens a turn; one claimed mid-turn (as steering) is dropped.
      for (let i = payload.messages.length - 1; i >= 0; i--)
        if (isRound(payload.messages[i])) payload.messages.splice(i, 1)
      return next()
    }
    const rounds = payload.messages.filter(isRound)
    const human = payload.messages.some((m) => m.source.kind === 'human')
    const goal = goals.get(session)
    if (human && goal?.status === 'active') goals.arm(session)
    if (rounds.length === 0) return next()
    queued.delete(session.id)
    const keep = !human && goal?.status === 'active' && goals.isArmed(session)
    // Drop every round prompt but (when it may run) the first.
    const first = rounds[0]
    for (let i = payload.messages.length - 1; i >= 0; i--) {
      if (isRound(payload.messages[i]) && !(keep && payload.messages[i] === first)) payload.messages.splice(i, 1)
    }
    if (!keep) {
      if (payload.messages.length === 0)
        return { action: 'reject', code: 'GOAL_ROUND_DROPPED', reason: 'the goal stopped before its round began' }
      return next()
    }
    const round = goal!.rounds + 1
    const started = session.append('goal/round', { goalId: goal!.id, round, turn: payload.turn })
    running.set(session.id, { goalId: goal!.id, round, turn: payload.turn, startSeq: started.seq })
    return next()
  })

  ctx.on('agent/turn-end', (agent: Agent, result: TurnResult) => {
    const { session } = agent
    if (session.parent) return
    const round = running.get(session.id)
    const thisRound = round && round.turn === result.turn ? round : undefined
    if (thisRound) running.delete(session.id)
    const tokens = result.usage.input + result.usage.output
    let progress = true
    if (thisRound) {
      progress = madeProgress(session, thisRound.startSeq)
      session.append('goal/round-end', {
        goalId: thisRound.goalId,
        round: thisRound.round,
        turn: result.turn,
        reason: result.reason,
        tokens,
        progress,
      })
    }
    const goal = goals.get(session)
    if (goal?.status !== 'active') {
      idleStreak.delete(session.id)
      // The last round of a goal that was completed (or paused) during it still counts.
      if (goal && thisRound?.goalId === goal.id) goals.account(session, { tokens, round: true })
      return
    }
    let streak = idleStreak.get(session.id) ?? 0
    if (thisRound?.goalId === goal.id) streak = progress ? 0 : streak + 1
    else if (result.reason === 'completed') streak = 0
    idleStreak.set(session.id, streak)
    const counted = thisRound?.goalId === goal.id
    const roundsAfter = goal.rounds + (counted ? 1 : 0)
    let stop: { status: 'paused'; note: string; action: GoalAction } | undefined
    if (result.reason === 'cancelled')
      stop = { status: 'paused', note: 'paused because the turn was cancelled', action: 'stop' }
    else if (result.reason !== 'completed') {
      stop = { status: 'paused', note: `paused: ${describeTurnEnd(result.reason, result.error)}`, action: 'stop' }
    } else if (streak >= config.maxIdleRounds) {
      stop = {
        status: 'paused',
        note: `paused after ${streak} rounds in a row without progress (no tool calls)`,
        action: 'stall',
      }
    } else if (goal.maxRounds === undefined && roundsAfter >= config.defaultMaxRounds) {
      stop = {
        status: 'paused',
        note: `paused after ${roundsAfter} rounds (the driver's limit for goals without a round budget)`,
        action: 'limit',
      }
    }
    if (stop) idleStreak.delete(session.id)
    const after = goals.account(session, { tokens, round: counted }, stop)
    if (after?.status === 'active' && goals.isArmed(session)) start(agent, after)
  })

  // A goal created, resumed, edited or armed while its agent is idle starts its next round at once.
  const startIdle = (session: Session, goal: Goal | null): void => {
    if (goal?.status !== 'active' || !goals.isArmed(session)) return
    for (const agent of ctx.agents.list()) {
      if (agent.session.id === session.id && agent.status === 'idle') start(agent, goal)
    }
  }
  ctx.on('goal/changed', ({ session, goal, by }) => {
    if (by !== 'driver') startIdle(session, goal)
  })
  ctx.on('goal/armed', (session, goal) => startIdle(session, goal))

  ctx.on('agent/disposed', (agent: Agent) => {
    running.delete(agent.session.id)
    idleStreak.delete(agent.session.id)
  })
}
