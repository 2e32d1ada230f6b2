// @dsh/tool-goal: the model-facing goal tools over `ctx.goals`. Authority split: the model may
// read the goal, create one when the session has none open, and declare the current goal
// complete; pausing, resuming, editing and clearing belong to the human (`/goal`).
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Session } from '@dsh/session'
import type {} from '@dsh/agent'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import { GoalError, type Goal, type GoalService } from '@dsh/goal'

export const name = 'tool-goal'
export const inject = ['tools', 'sessions', 'agents', 'goals']

export interface Config {
  /** Offer `create_goal` (the model may set a goal when the user asks for one). */
  allowCreate: boolean
}

export const Config: Schema<Config> = Schema.object({
  allowCreate: Schema.boolean().default(true).description('Offer create_goal to the model.'),
})

/** The goal as the model reads it: a few labelled lines. */
export function describeGoal(goal: Goal): string {
  const rounds =
    goal.maxRounds !== undefined ? `${goal.rounds} of ${goal.maxRounds}` : `${goal.rounds} (no round budget)`
  const tokens =
    goal.maxTokens !== undefined ? `${goal.tokens} of ${goal.maxTokens}` : `${goal.tokens} (no token budget)`
  return [
    `Goal ${goal.id} (${goal.status})`,
    `Objective: ${goal.objective}`,
    `Rounds: ${rounds}. Tokens: ${tokens}.`,
    ...(goal.note ? [`Note: ${goal.note}`] : []),
  ].join('\n')
}

const meta = (goal: Goal) => ({
  goalId: goal.id,
  status: goal.status,
  revision: goal.revision,
  rounds: goal.rounds,
  tokens: goal.tokens,
})

/** The seq of the `turn/start` of `turn`, or -1. */
function turnStartSeq(session: Session, turn: number | undefined): number {
  if (turn === undefined) return -1
  const events = session.events
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]
    if (event.type === 'turn/start' && event.data.turn === turn) return event.seq
  }
  return -1
}

/** Whether the human changed the goal after the turn of this call started. */
function editedSince(session: Session, fromSeq: number): boolean {
  if (fromSeq < 0) return false
  for (const event of session.slice(fromSeq)) {
    if (event.type === 'goal/set' && event.data.by === 'human') return true
  }
  return false
}

export function apply(ctx: Context, config: Config): void {
  const goals: GoalService = ctx.goals
  // The calling agent's own session first (it may live outside this store, e.g. a resumed log).
  const sessionOf = (call: ToolCallContext): Session | undefined =>
    (call.agentId !== undefined ? ctx.agents.get(call.agentId)?.session : undefined) ??
    (call.sessionId !== undefined ? ctx.sessions.get(call.sessionId) : undefined)
  const noSession = () =>
    fail('NO_SESSION', 'this call is not attached to a session, so there is no goal to read or change.')
  const asResult = (error: unknown): ToolOutput => {
    if (GoalError.is(error)) return fail(error.code, `${error.message}.`)
    throw error
  }

  ctx.tools.register<Record<string, never>>({
    name: 'get_goal',
    defer: true,
    description:
      'Read the session goal: its id, status (active | paused | budget-limited | complete), objective, and the rounds and tokens spent against its budgets.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    concurrencySafe: true,
    execute(_args, call) {
      const session = sessionOf(call)
      if (!session) return noSession()
      const goal = goals.get(session)
      if (!goal) return { content: 'This session has no goal.', meta: { goalId: null } }
      return { content: describeGoal(goal), meta: meta(goal) }
    },
  })

  if (config.allowCreate) {
    ctx.tools.register<{ objective: string; max_rounds?: number; token_budget?: number }>({
      name: 'create_goal',
      // The line load_tools lists while this tool is deferred (@dsh/tool-deferral).
      summary: 'Set a goal to keep working on until it is done (when the user asks for one).',
      defer: true,
      description:
        'Set a goal for this session when the user asks you to keep working until something is done. ' +
        'While the goal is active, the harness starts a new round each time your turn ends, until you mark the goal complete with update_goal ' +
        'or a budget runs out. Only one goal can be open; the user pauses, edits or clears it. ' +
        'objective: what must be true when done, checkable. max_rounds / token_budget: optional positive limits.',
      parameters: {
        type: 'object',
        properties: {
          objective: { type: 'string', description: 'The completion objective, stated so it can be verified.' },
          max_rounds: { type: 'integer', description: 'Most continuation rounds (positive).' },
          token_budget: { type: 'integer', description: 'Most tokens to spend (positive).' },
        },
        required: ['objective'],
        additionalProperties: false,
      },
      execute(args, call) {
        const session = sessionOf(call)
        if (!session) return noSession()
        try {
          const goal = goals.create(
            session,
            {
              objective: args.objective,
              ...(args.max_rounds !== undefined ? { maxRounds: args.max_rounds } : {}),
              ...(args.token_budget !== undefined ? { maxTokens: args.token_budget } : {}),
            },
            'model',
          )
          return {
            content: `${describeGoal(goal)}\nThe goal is active: keep working; when your turn ends the next round starts. Mark it complete with update_goal when the objective is met.`,
            meta: meta(goal),
          }
        } catch (error) {
          return asResult(error)
        }
      },
    })
  }

  ctx.tools.register<{ goal_id: string; status: 'complete'; summary?: string }>({
    name: 'update_goal',
    // The line load_tools lists while this tool is deferred (@dsh/tool-deferral).
    summary: 'Mark the session goal complete once achieved and verified.',
    defer: true,
    description:
      'Mark the session goal complete once its objective is achieved and verified. Pass the goal id from get_goal or the round prompt. ' +
      'This is the only change you can make; pausing, editing and clearing are up to the user.',
    parameters: {
      type: 'object',
      properties: {
        goal_id: { type: 'string', description: 'The id of the goal you are completing.' },
        status: { type: 'string', enum: ['complete'] },
        summary: { type: 'string', description: 'One line: what was achieved and how it was verified.' },
      },
      required: ['goal_id', 'status'],
      additionalProperties: false,
    },
    execute(args, call) {
      const session = sessionOf(call)
      if (!session) return noSession()
      try {
        const current = goals.get(session)
        if (current && current.id === args.goal_id && editedSince(session, turnStartSeq(session, call.turn))) {
          return fail(
            'STALE_ROUND',
            `the user changed goal ${current.id} after this round started; read it with get_goal and check the objective again before completing it.`,
          )
        }
        const summary = args.summary?.trim()
        const goal = goals.setStatus(session, 'complete', {
          by: 'model',
          goalId: args.goal_id,
          ...(summary ? { note: summary.slice(0, 500) } : {}),
        })
        return { content: `Goal ${goal.id} is complete. No further rounds will start.`, meta: meta(goal) }
      } catch (error) {
        return asResult(error)
      }
    },
  })
}
