// @dsh/goal: `ctx.goals`, one current completion objective per session. The goal's state is
// event-sourced: every change appends `goal/set {goal, by, action}` carrying the whole value, so
// the current goal is the last such event (a resumed or forked session has it back). Whether the
// goal may drive continuation rounds *now* ("armed") is process-local: a restarted host never
// starts working on its own until a human (or the model in a turn a human started) acts again.
import { Service, type Context } from 'cordis'
import Schema from 'schemastery'
import type { Session, SessionId } from '@dsh/session'
import type {} from '@dsh/session-persistence'
import { CodedError } from '@dsh/brand'

declare const goalIdBrand: unique symbol
/** Opaque goal id (branded). */
export type GoalId = string & { readonly [goalIdBrand]: true }
export const asGoalId = (value: string): GoalId => value as GoalId

/**
 * `active`: rounds may run. `paused`: kept, no rounds (by the human, or the driver after a
 * cancelled or failed round or repeated rounds without progress). `budget-limited`: a round or
 * token budget is spent. `complete`: the model (or the human) declared it achieved.
 */
export const GOAL_STATUSES = ['active', 'paused', 'budget-limited', 'complete'] as const
export type GoalStatus = (typeof GOAL_STATUSES)[number]
export type GoalActor = 'human' | 'model' | 'driver'
export type GoalAction =
  | 'create'
  | 'edit'
  | 'pause'
  | 'resume'
  | 'complete'
  | 'clear'
  | 'account'
  | 'limit'
  | 'stall'
  | 'stop'

export interface Goal {
  id: GoalId
  objective: string
  status: GoalStatus
  /** Most continuation rounds; absent: unbounded (the driver's `defaultMaxRounds` still applies). */
  maxRounds?: number
  /** Most tokens (input + output) spent by turns while the goal is active; absent: unbounded. */
  maxTokens?: number
  /** Continuation rounds run so far. */
  rounds: number
  /** Tokens spent so far by turns that ended while the goal was active. */
  tokens: number
  /** Bumped on every change: the compare-and-set reference for edits. */
  revision: number
  createdBy: GoalActor
  /** Why it stopped, was paused, or how it was completed (one line). */
  note?: string
  createdAt: number
  updatedAt: number
}

export interface GoalRoundStart {
  goalId: GoalId
  round: number
  turn: number
}

export interface GoalRoundEnd {
  goalId: GoalId
  round: number
  turn: number
  /** The turn's end reason. */
  reason: string
  tokens: number
  /** The round called a tool other than the goal tools. */
  progress: boolean
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** The session's whole current goal after a change (`null`: cleared). */
    'goal/set': { goal: Goal | null; by: GoalActor; action: GoalAction }
    /** A continuation round entered its prompt (logged before the round's first step). */
    'goal/round': GoalRoundStart
    /** A continuation round's turn ended. */
    'goal/round-end': GoalRoundEnd
  }
}

export interface GoalChange {
  session: Session
  goal: Goal | null
  previous: Goal | null
  by: GoalActor
  action: GoalAction
}

declare module 'cordis' {
  interface Context {
    goals: GoalService
  }
  interface Events {
    /** After a `goal/set` was logged. */
    'goal/changed'(change: GoalChange): void
    /** An active goal that was not armed in this process was armed (`arm()`). */
    'goal/armed'(session: Session, goal: Goal): void
  }
}

export type GoalErrorCode =
  | 'NO_GOAL'
  | 'GOAL_EXISTS'
  | 'STALE_GOAL'
  | 'STALE_REVISION'
  | 'STALE_ROUND'
  | 'INVALID_GOAL'
  | 'GOAL_FINISHED'
  | 'BUDGET_SPENT'
  | 'SUBAGENT_SESSION'

export class GoalError extends CodedError<GoalErrorCode> {
  override name = 'GoalError'
  static is(value: unknown): value is GoalError {
    return value instanceof GoalError
  }
}

export interface CreateGoalInput {
  objective: string
  maxRounds?: number
  maxTokens?: number
}

export interface GoalEdit {
  objective?: string
  /** `null` removes the budget. */
  maxRounds?: number | null
  maxTokens?: number | null
  note?: string
}

export interface Guard {
  by: GoalActor
  /** The change applies only to this goal (else `STALE_GOAL`). */
  goalId?: string
  /** The change applies only at this revision (else `STALE_REVISION`). */
  expectedRevision?: number
}

export interface Config {
  maxObjectiveChars: number
}

export const Config: Schema<Config> = Schema.object({
  maxObjectiveChars: Schema.natural().min(20).default(4000).description('Most characters of a goal objective.'),
})

/** The current goal of a session: the value of its last `goal/set`, or null. */
export function currentGoal(session: Pick<Session, 'last'>): Goal | null {
  const last = session.last('goal/set')
  return last?.data.goal ? { ...last.data.goal } : null
}

/** An unfinished goal blocks a new one: anything but `complete`. */
export const isOpen = (goal: Goal | null): goal is Goal => goal !== null && goal.status !== 'complete'

/** A positive whole number, or a GoalError naming the field. */
export function checkBudget(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new GoalError(
      'INVALID_GOAL',
      `${field} must be a positive whole number (got ${JSON.stringify(value)}); leave it out for no limit`,
    )
  }
  return value
}

/** What is spent of a goal's budgets: undefined while something is left. */
export function spentBudget(goal: Goal): string | undefined {
  if (goal.maxRounds !== undefined && goal.rounds >= goal.maxRounds)
    return `the round budget is spent (${goal.rounds} of ${goal.maxRounds} rounds)`
  if (goal.maxTokens !== undefined && goal.tokens >= goal.maxTokens)
    return `the token budget is spent (${goal.tokens} of ${goal.maxTokens} tokens)`
  return undefined
}

/** Goal ids number the goals of one session: `goal-1`, `goal-2`, ... (stable across resume and fork). */
function newGoalId(session: Pick<Session, 'events'>): GoalId {
  let created = 0
  for (const event of session.events) if (event.type === 'goal/set' && event.data.action === 'create') created++
  return asGoalId(`goal-${created + 1}`)
}

export class GoalService extends Service {
  static Config = Config
  /** Sessions whose active goal may start rounds in this process. Shared by caller views. */
  private readonly armed = new Set<string>()

  constructor(
    ctx: Context,
    private readonly config: Config = { maxObjectiveChars: 4000 },
  ) {
    super(ctx, 'goals')
    // The events are registered as ignorable: round prompts are ordinary `user/message` events,
    // so a reader without this plugin still derives the same history.
    ctx.inject(['sessionPersistence'], (inner) => {
      for (const type of ['goal/set', 'goal/round', 'goal/round-end'])
        inner.sessionPersistence.registerEventType(type, { ignorable: true })
    })
  }

  get(session: Pick<Session, 'last'>): Goal | null {
    return currentGoal(session)
  }

  isArmed(session: Session | SessionId | string): boolean {
    return this.armed.has(typeof session === 'string' ? session : session.id)
  }

  /** Allows rounds for the session's active goal in this process (no-op without one, or in a subagent's session). */
  arm(session: Session): void {
    const goal = currentGoal(session)
    if (goal?.status !== 'active' || this.armed.has(session.id) || session.parent) return
    this.armed.add(session.id)
    this.ctx.emit('goal/armed', session, goal)
  }

  disarm(session: Session | SessionId | string): void {
    this.armed.delete(typeof session === 'string' ? session : session.id)
  }

  private objective(text: unknown): string {
    if (typeof text !== 'string' || text.trim() === '')
      throw new GoalError('INVALID_GOAL', 'the objective is empty; describe what must be true when the goal is done')
    const trimmed = text.trim()
    if (trimmed.length > this.config.maxObjectiveChars) {
      throw new GoalError(
        'INVALID_GOAL',
        `the objective has ${trimmed.length} characters; keep it under ${this.config.maxObjectiveChars}`,
      )
    }
    return trimmed
  }

  private guard(goal: Goal | null, guard: Guard): Goal {
    if (!goal) throw new GoalError('NO_GOAL', 'this session has no goal')
    if (guard.goalId !== undefined && guard.goalId !== goal.id) {
      throw new GoalError(
        'STALE_GOAL',
        `goal ${guard.goalId} is no longer the session's goal (the current one is ${goal.id})`,
      )
    }
    if (guard.expectedRevision !== undefined && guard.expectedRevision !== goal.revision) {
      throw new GoalError(
        'STALE_REVISION',
        `the goal changed since it was read (revision ${goal.revision}, expected ${guard.expectedRevision}); read it again`,
      )
    }
    return goal
  }

  private commit(
    session: Session,
    previous: Goal | null,
    goal: Goal | null,
    by: GoalActor,
    action: GoalAction,
  ): Goal | null {
    // A subagent's session (a fork copies its parent's goal events) never owns a goal of its own.
    if (session.parent)
      throw new GoalError(
        'SUBAGENT_SESSION',
        "goals belong to the top-level session, not a subagent's; report progress to your parent instead",
      )
    session.append('goal/set', { goal, by, action })
    if (goal?.status !== 'active') this.armed.delete(session.id)
    else if (by !== 'driver' && (action === 'create' || action === 'resume' || action === 'edit'))
      this.armed.add(session.id)
    this.ctx.emit('goal/changed', { session, goal, previous, by, action })
    return goal
  }

  private next(previous: Goal, patch: Partial<Goal>): Goal {
    const goal: Goal = { ...previous, ...patch, revision: previous.revision + 1, updatedAt: Date.now() }
    for (const key of ['maxRounds', 'maxTokens', 'note'] as const) if (goal[key] === undefined) delete goal[key]
    return goal
  }

  /** Creates the session's goal, active and armed. `GOAL_EXISTS` while an unfinished goal is there. */
  create(session: Session, input: CreateGoalInput, by: GoalActor): Goal {
    const previous = currentGoal(session)
    if (isOpen(previous)) {
      throw new GoalError(
        'GOAL_EXISTS',
        `the session already has an open goal (${previous.id}, ${previous.status}: ${JSON.stringify(previous.objective.slice(0, 80))}); it must be completed or cleared first`,
      )
    }
    const objective = this.objective(input.objective)
    const now = Date.now()
    const goal: Goal = {
      id: newGoalId(session),
      objective,
      status: 'active',
      ...(input.maxRounds !== undefined ? { maxRounds: checkBudget('maxRounds', input.maxRounds) } : {}),
      ...(input.maxTokens !== undefined ? { maxTokens: checkBudget('maxTokens', input.maxTokens) } : {}),
      rounds: 0,
      tokens: 0,
      revision: 1,
      createdBy: by,
      createdAt: now,
      updatedAt: now,
    }
    return this.commit(session, previous, goal, by, 'create')!
  }

  /** Changes the objective or budgets. A finished goal cannot be edited. */
  edit(session: Session, edit: GoalEdit, guard: Guard): Goal {
    const previous = this.guard(currentGoal(session), guard)
    if (previous.status === 'complete')
      throw new GoalError('GOAL_FINISHED', `goal ${previous.id} is complete; create a new one instead`)
    const patch: Partial<Goal> = {}
    if (edit.objective !== undefined) patch.objective = this.objective(edit.objective)
    if (edit.maxRounds !== undefined)
      patch.maxRounds = edit.maxRounds === null ? undefined : checkBudget('maxRounds', edit.maxRounds)
    if (edit.maxTokens !== undefined)
      patch.maxTokens = edit.maxTokens === null ? undefined : checkBudget('maxTokens', edit.maxTokens)
    if (edit.note !== undefined) patch.note = edit.note
    if (
      edit.objective === undefined &&
      edit.maxRounds === undefined &&
      edit.maxTokens === undefined &&
      edit.note === undefined
    )
      throw new GoalError('INVALID_GOAL', 'nothing to change: give an objective or a budget')
    let goal = this.next(previous, patch)
    // A raised budget revives a budget-limited goal; a lowered one limits an active goal.
    if (goal.status === 'budget-limited' && !spentBudget(goal)) goal = { ...goal, status: 'active' }
    else if (goal.status === 'active' && spentBudget(goal))
      goal = { ...goal, status: 'budget-limited', note: spentBudget(goal) }
    return this.commit(session, previous, goal, guard.by, 'edit')!
  }

  /** Sets the status: `paused`, `active` (resume), `complete`. */
  setStatus(session: Session, status: 'active' | 'paused' | 'complete', guard: Guard & { note?: string }): Goal {
    const previous = this.guard(currentGoal(session), guard)
    if (previous.status === 'complete') throw new GoalError('GOAL_FINISHED', `goal ${previous.id} is already complete`)
    if (status === 'active') {
      const spent = spentBudget(previous)
      if (spent) throw new GoalError('BUDGET_SPENT', `cannot resume: ${spent}; raise the budget first`)
    }
    const action: GoalAction = status === 'active' ? 'resume' : status === 'paused' ? 'pause' : 'complete'
    const goal = this.next(previous, { status, note: guard.note })
    return this.commit(session, previous, goal, guard.by, action)!
  }

  /** Removes the session's goal (logs `goal/set {goal: null}`). */
  clear(session: Session, guard: Guard): Goal {
    const previous = this.guard(currentGoal(session), guard)
    this.commit(session, previous, null, guard.by, 'clear')
    return previous
  }

  /**
   * For the round driver: adds a finished turn's tokens (and a round) to the active goal and
   * applies a budget limit or a stop. Returns the new value.
   */
  account(
    session: Session,
    usage: { tokens: number; round: boolean },
    stop?: { status: 'paused'; note: string; action: GoalAction },
  ): Goal | null {
    const previous = currentGoal(session)
    // A round is counted even when the goal left `active` during it (completed, paused by the human).
    if (!previous || (previous.status !== 'active' && !usage.round)) return previous
    let goal = this.next(previous, {
      tokens: previous.tokens + Math.max(0, Math.round(usage.tokens)),
      rounds: previous.rounds + (usage.round ? 1 : 0),
    })
    let action: GoalAction = 'account'
    const spent = previous.status === 'active' ? spentBudget(goal) : undefined
    if (previous.status !== 'active') {
      // counted only
    } else if (spent) {
      goal = { ...goal, status: 'budget-limited', note: spent }
      action = 'limit'
    } else if (stop) {
      goal = { ...goal, status: stop.status, note: stop.note }
      action = stop.action
    }
    return this.commit(session, previous, goal, 'driver', action)
  }
}

export default GoalService
