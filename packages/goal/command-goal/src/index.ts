// @dsh/command-goal: the human's `/goal` command over `ctx.goals`, registered once in
// `ctx.commands` so every command adapter (TUI, web, ACP, headless) runs it without a model turn.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { GoalError, type Goal, type GoalEdit, type GoalService } from '@dsh/goal'

export const name = 'command-goal'
export const inject = ['commands', 'goals']

export type Config = {}
export const Config: Schema<Config> = Schema.object({})

export const USAGE =
  '[objective [--rounds N] [--tokens N]] | edit [objective] [--rounds N|none] [--tokens N|none] | pause | resume | complete [summary] | clear'

/** A mistake in the command line: one line for the human. */
export class GoalUsageError extends Error {}

export interface ParsedGoalLine {
  text: string
  rounds?: number | null
  tokens?: number | null
}

function budget(flag: string, raw: string | undefined, allowNone: boolean): number | null {
  if (raw === undefined) throw new GoalUsageError(`${flag} needs a value`)
  if (allowNone && raw === 'none') return null
  if (!/^-?\d+$/.test(raw))
    throw new GoalUsageError(
      `${flag} must be a positive whole number${allowNone ? ' or "none"' : ''} (got ${JSON.stringify(raw)})`,
    )
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value <= 0)
    throw new GoalUsageError(`${flag} must be a positive whole number (got ${raw}); leave it out for no limit`)
  return value
}

/** Splits `words --rounds N --tokens N` into the text and the budgets. */
export function parseGoalArgs(args: string, allowNone = false): ParsedGoalLine {
  const words = args.split(/\s+/).filter(Boolean)
  const text: string[] = []
  const out: ParsedGoalLine = { text: '' }
  for (let i = 0; i < words.length; i++) {
    const word = words[i]
    if (word === '--rounds') out.rounds = budget('--rounds', words[++i], allowNone)
    else if (word === '--tokens') out.tokens = budget('--tokens', words[++i], allowNone)
    else if (word.startsWith('--')) throw new GoalUsageError(`unknown option ${word}; use --rounds N or --tokens N`)
    else text.push(word)
  }
  out.text = text.join(' ')
  return out
}

export function showGoal(goal: Goal | null, armed: boolean): string {
  if (!goal) return 'No goal. Set one with /goal <objective> [--rounds N] [--tokens N].'
  const rounds = goal.maxRounds !== undefined ? `${goal.rounds}/${goal.maxRounds}` : `${goal.rounds}`
  const tokens = goal.maxTokens !== undefined ? `${goal.tokens}/${goal.maxTokens}` : `${goal.tokens}`
  const idle = goal.status === 'active' && !armed ? ' (waiting: /goal resume or send a message to continue)' : ''
  return [
    `Goal ${goal.id}: ${goal.status}${idle}`,
    `Objective: ${goal.objective}`,
    `Rounds ${rounds}, tokens ${tokens}`,
    ...(goal.note ? [`Note: ${goal.note}`] : []),
  ].join('\n')
}

export function apply(ctx: Context): void {
  const goals: GoalService = ctx.goals
  ctx.commands.register({
    name: 'goal',
    description: 'Show, set, edit, pause, resume, complete or clear the session goal.',
    usage: USAGE,
    run(args, { session }) {
      try {
        const [head = '', ...rest] = args.split(/\s+/).filter(Boolean)
        const tail = rest.join(' ')
        const by = 'human' as const
        switch (head) {
          case '':
            return showGoal(goals.get(session), goals.isArmed(session))
          case 'pause':
            return showGoal(goals.setStatus(session, 'paused', { by, note: 'paused by the user' }), false)
          case 'resume': {
            const goal = goals.get(session)
            if (goal?.status === 'active') {
              goals.arm(session)
              return showGoal(goal, true)
            }
            return showGoal(goals.setStatus(session, 'active', { by }), true)
          }
          case 'complete': {
            const note = tail.trim() || 'completed by the user'
            return showGoal(goals.setStatus(session, 'complete', { by, note }), false)
          }
          case 'clear': {
            const goal = goals.clear(session, { by })
            return `Goal ${goal.id} cleared.`
          }
          case 'edit': {
            const parsed = parseGoalArgs(tail, true)
            const edit: GoalEdit = {}
            if (parsed.text) edit.objective = parsed.text
            if (parsed.rounds !== undefined) edit.maxRounds = parsed.rounds
            if (parsed.tokens !== undefined) edit.maxTokens = parsed.tokens
            if (Object.keys(edit).length === 0)
              throw new GoalUsageError('/goal edit needs a new objective, --rounds or --tokens')
            return showGoal(goals.edit(session, edit, { by }), goals.isArmed(session))
          }
          default: {
            const parsed = parseGoalArgs(args)
            const goal = goals.create(
              session,
              {
                objective: parsed.text,
                ...(typeof parsed.rounds === 'number' ? { maxRounds: parsed.rounds } : {}),
                ...(typeof parsed.tokens === 'number' ? { maxTokens: parsed.tokens } : {}),
              },
              by,
            )
            return showGoal(goal, goals.isArmed(session))
          }
        }
      } catch (error) {
        // One line for the human; the registry reports it as COMMAND_FAILED.
        if (error instanceof GoalUsageError) throw new Error(`${error.message}; usage: /goal ${USAGE}`)
        if (GoalError.is(error)) throw new Error(error.message)
        throw error
      }
    },
  })
}
