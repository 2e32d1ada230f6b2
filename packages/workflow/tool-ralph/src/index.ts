// @dsh/tool-ralph: the model-facing `ralph` tool. A fixed workflow over ctx.workflowEngine: one
// immutable objective goes to a sequence of fresh child agents (one per round) until a child
// declares the objective done or the rounds run out. Each child starts with an empty history and
// finds the previous rounds' work in the shared workspace. Logged like any workflow run.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { ToolOutput } from '@dsh/tools'
import { callOwner, runLoggedWorkflow } from '@dsh/tool-workflow'
import type { JsonValue } from '@dsh/workflow'

export interface ToolRalphConfig {
  defaultRounds: number
  maxRounds: number
  doneMarker: string
  maxAnswerChars: number
}

export const Config: Schema<Partial<ToolRalphConfig>, ToolRalphConfig> = Schema.object({
  defaultRounds: Schema.natural().min(1).default(5).description('Rounds when the call names none.'),
  maxRounds: Schema.natural().min(1).default(20).description('Most rounds one call may ask for.'),
  doneMarker: Schema.string()
    .pattern(/^[A-Z][A-Z0-9_]{2,39}$/)
    .default('RALPH_DONE')
    .description('The line a child ends its answer with to declare the objective done.'),
  maxAnswerChars: Schema.natural()
    .min(100)
    .default(4_000)
    .description('Characters of the final child answer returned to the parent.'),
})

export const name = 'tool-ralph'
export const inject = ['tools', 'workflowEngine', 'subagents', 'agents', 'sessions']

/** What each child is told: the same objective every round, plus how to finish. */
export function roundPrompt(objective: string, round: number, rounds: number, marker: string): string {
  return [
    objective.trim(),
    '',
    '---',
    `You are round ${round} of at most ${rounds} of a relay on this objective. Earlier rounds may already have done part`,
    'of the work in the workspace: look at its current state first, then continue from there. You have no memory of',
    'earlier rounds beyond what they left in the workspace.',
    `When the objective is fully achieved and you have checked it, end your final answer with a line containing only ${marker}.`,
    'Otherwise end with a short account of what you did and what is still left for the next round.',
  ].join('\n')
}

// The fixed orchestration script: one child per round, until one declares done.
export const RALPH_SCRIPT = `
const { objective, rounds, marker, prompts } = input
const history = []
let last = null
for (let round = 1; round <= rounds; round++) {
  const child = await agents.spawn({ prompt: prompts[round - 1], description: 'ralph round ' + round + '/' + rounds })
  const lines = child.text.trim().split('\\n')
  const done = child.status === 'completed' && lines.some((line) => line.trim() === marker)
  history.push({ round, id: child.id, status: child.status, done })
  console.log('round ' + round + ': ' + child.id + ' ' + child.status + (done ? ' (done)' : ''))
  last = child
  if (done) return { done: true, rounds: round, answer: lines.filter((line) => line.trim() !== marker).join('\\n').trim(), history }
}
return { done: false, rounds, answer: last ? last.text : '', history }
`.trim()

interface RalphValue {
  done: boolean
  rounds: number
  answer: string
  history: Array<{ round: number; id: string; status: string; done: boolean }>
}

const fail = (code: string, message: string): ToolOutput => ({
  content: `Error [${code}]: ${message}`,
  isError: true,
  error: { code, message },
})

export function apply(ctx: Context, config: ToolRalphConfig): void {
  if (config.defaultRounds > config.maxRounds)
    throw new TypeError(`tool-ralph: defaultRounds (${config.defaultRounds}) exceeds maxRounds (${config.maxRounds})`)
  // A round is a child: the engine's child cap bounds the rounds too.
  const maxRounds = Math.min(config.maxRounds, ctx.workflowEngine.resolveLimits().maxChildren)
  const defaultRounds = Math.min(config.defaultRounds, maxRounds)
  ctx.tools.register<{ objective: string; rounds?: number }>({
    name: 'ralph',
    description:
      'Give one objective to a relay of fresh child agents: each round a new child (empty history, your workspace) works ' +
      'on the same objective, continuing from what earlier rounds left in the workspace, until one declares it done or ' +
      `the rounds run out. Use it for a long task with a checkable end state. Returns whether it finished, after how many rounds, and the last child's answer.`,
    parameters: {
      type: 'object',
      properties: {
        objective: {
          type: 'string',
          description: 'The complete objective, with how to check that it is done. Every round gets exactly this text.',
        },
        rounds: {
          type: 'integer',
          minimum: 1,
          maximum: maxRounds,
          description: `Most rounds (default ${defaultRounds}, at most ${maxRounds}).`,
        },
      },
      required: ['objective'],
      additionalProperties: false,
    },
    async execute(args, call) {
      const objective = args.objective.trim()
      if (objective === '')
        return fail(
          'EMPTY_OBJECTIVE',
          'the objective is empty; describe the complete task and how to check that it is done.',
        )
      const rounds = args.rounds ?? defaultRounds
      const owner = callOwner(ctx, call)
      if ('content' in owner) return owner
      const prompts = Array.from({ length: rounds }, (_, i) => roundPrompt(objective, i + 1, rounds, config.doneMarker))
      const input: JsonValue = { objective, rounds, marker: config.doneMarker, prompts }
      const { runId, result } = await runLoggedWorkflow(ctx, {
        ...owner,
        tool: 'ralph',
        description: `ralph: ${objective.split('\n')[0].slice(0, 60)}`,
        script: RALPH_SCRIPT,
        input,
        callId: call.callId,
        // One child at a time; the round count is the child cap.
        limits: { maxChildren: rounds, maxConcurrent: 1 },
        signal: call.signal,
      })
      const meta = { runId, status: result.status, children: result.children.length }
      if (result.status !== 'completed') {
        const code = `RALPH_${result.error?.code ?? 'FAILED'}`
        const rounds = result.children
          .map((c) => `- ${c.id}: ${c.status}${c.error ? ` [${c.error.code}] ${c.error.message}` : ''}`)
          .join('\n')
        return {
          content: `Error [${code}]: the relay stopped (${result.error?.message ?? result.status}).${rounds ? `\nRounds:\n${rounds}` : ''}`,
          isError: true,
          error: { code, message: result.error?.message ?? result.status },
          meta,
        }
      }
      const value = result.value as unknown as RalphValue
      const answer =
        value.answer.length > config.maxAnswerChars
          ? `${value.answer.slice(0, config.maxAnswerChars)} [... ${value.answer.length - config.maxAnswerChars} more characters]`
          : value.answer
      const history = value.history
        .map((h) => `- round ${h.round} (${h.id}): ${h.status}${h.done ? ', declared done' : ''}`)
        .join('\n')
      const head = value.done
        ? `Objective declared done in round ${value.rounds} of ${rounds}.`
        : `Not done after ${value.rounds} round${value.rounds === 1 ? '' : 's'}: no child declared the objective done.`
      return {
        content: `${head}\nRounds:\n${history}\n\nLast answer:\n${answer || '(empty)'}`,
        meta: { ...meta, done: value.done, rounds: value.rounds },
      }
    },
  })
}
