// The goal methods of the web host (browser-safe: no node imports). Every mutation names the
// revision it was computed from; a goal that changed meanwhile is refused (STALE_REVISION).
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

/** The goal as the wire carries it (the `Goal` of @dsh/goal). */
export interface WireGoal {
  id: string
  objective: string
  status: 'active' | 'paused' | 'budget-limited' | 'complete'
  maxRounds?: number
  maxTokens?: number
  rounds: number
  tokens: number
  revision: number
  createdBy: string
  note?: string
  createdAt: number
  updatedAt: number
}

const Ref = {
  sessionId: Schema.string().min(1).required(),
  expectedRevision: Schema.natural().min(1).required(),
}
const Result = Schema.object({ goal: Schema.any() }) as unknown as Schema<{ goal: WireGoal | null }>
const budget = Schema.union([Schema.natural().min(1), Schema.const(null)])

export interface GoalRef {
  sessionId: string
  expectedRevision: number
}
export interface GoalEditParams extends GoalRef {
  objective?: string
  maxRounds?: number | null
  maxTokens?: number | null
}

export const goalsEdit = defineMethod('goals.edit', {
  params: Schema.object({
    ...Ref,
    objective: Schema.string().min(1),
    maxRounds: budget,
    maxTokens: budget,
  }) as unknown as Schema<GoalEditParams>,
  result: Result,
  description: "Changes the session goal's objective or budgets (null removes a budget).",
})
export const goalsPause = defineMethod('goals.pause', {
  params: Schema.object(Ref) as Schema<GoalRef>,
  result: Result,
  description: 'Pauses the session goal.',
})
export const goalsResume = defineMethod('goals.resume', {
  params: Schema.object(Ref) as Schema<GoalRef>,
  result: Result,
  description: 'Resumes a paused session goal (or arms an active one waiting after a restart).',
})
export const goalsClear = defineMethod('goals.clear', {
  params: Schema.object(Ref) as Schema<GoalRef>,
  result: Result,
  description: 'Clears the session goal.',
})
