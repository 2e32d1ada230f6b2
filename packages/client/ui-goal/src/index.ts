// @dsh/ui-goal (host half): the `goals.edit`, `goals.pause`, `goals.resume` and `goals.clear`
// methods over `ctx.goals` for a session live in this host; the row also makes the host serve the
// browser half (`./client`), the GoalBar.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ApiError } from '@dsh/web-protocol'
import { GoalError, type Goal, type GoalService } from '@dsh/goal'
import type { Session } from '@dsh/session'
import type {} from '@dsh/api-gateway'
import { goalsClear, goalsEdit, goalsPause, goalsResume, type GoalRef, type WireGoal } from './contract.ts'

export * from './contract.ts'

export const name = '@dsh/ui-goal'
export const inject = ['goals', 'sessions']
export type Config = {}
export const Config: Schema<Config> = Schema.object({})

const STATUS: Record<string, number> = {
  NO_GOAL: 404,
  STALE_GOAL: 409,
  STALE_REVISION: 409,
  GOAL_FINISHED: 409,
  BUDGET_SPENT: 409,
  GOAL_EXISTS: 409,
  INVALID_GOAL: 400,
}

export function apply(ctx: Context): void {
  const goals: GoalService = ctx.goals
  const sessionOf = (sessionId: string): Session => {
    const session = ctx.sessions.get(sessionId)
    if (!session)
      throw new ApiError('SESSION_NOT_FOUND', `session ${sessionId} is not open in this host; open it and try again`)
    return session
  }
  const run = (
    ref: GoalRef,
    change: (session: Session, guard: { by: 'human'; expectedRevision: number }) => Goal | null,
  ) => {
    const session = sessionOf(ref.sessionId)
    try {
      return { goal: change(session, { by: 'human', expectedRevision: ref.expectedRevision }) as WireGoal | null }
    } catch (error) {
      if (GoalError.is(error)) throw new ApiError(error.code, error.message, { status: STATUS[error.code] ?? 400 })
      throw error
    }
  }
  ctx.inject(['api'], (inner) => {
    inner.api.register(goalsEdit, (p) =>
      run(p, (session, guard) =>
        goals.edit(
          session,
          {
            ...(p.objective !== undefined ? { objective: p.objective } : {}),
            ...(p.maxRounds !== undefined ? { maxRounds: p.maxRounds } : {}),
            ...(p.maxTokens !== undefined ? { maxTokens: p.maxTokens } : {}),
          },
          guard,
        ),
      ),
    )
    inner.api.register(goalsPause, (p) =>
      run(p, (session, guard) => goals.setStatus(session, 'paused', { ...guard, note: 'paused by the user' })),
    )
    inner.api.register(goalsResume, (p) =>
      run(p, (session, guard) => {
        const goal = goals.get(session)
        if (goal?.status === 'active' && goal.revision === guard.expectedRevision) {
          goals.arm(session)
          return goal
        }
        return goals.setStatus(session, 'active', guard)
      }),
    )
    inner.api.register(goalsClear, (p) =>
      run(p, (session, guard) => {
        goals.clear(session, guard)
        return null
      }),
    )
  })
}

export default { name, inject, Config, apply }
