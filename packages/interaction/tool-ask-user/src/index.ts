// @dsh/tool-ask-user: the model-facing `ask_user_question` tool over `ctx.userQuestions`. The
// model asks one to a few short questions; the answers (or the fact that nobody can answer) come
// back as the tool result.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { checkQuestions, type Question, type QuestionsOutcome } from '@dsh/user-questions'
import type { JsonSchema, ToolOutput } from '@dsh/tools'
import { registerPromptSection } from './prompt.ts'

export const name = 'tool-ask-user'
export const inject = ['tools', 'userQuestions']

export interface ToolAskUserConfig {
  /** Most questions per call. */
  maxQuestions: number
  /** Most options per question. */
  maxOptions: number
}

export const Config: Schema<ToolAskUserConfig> = Schema.object({
  maxQuestions: Schema.natural().min(1).default(4).description('Most questions per call.'),
  maxOptions: Schema.natural().min(2).default(6).description('Most options per question.'),
})

/** Arguments as the model writes them (snake_case, as in the schema). */
export interface AskUserArgs {
  questions: Array<{
    id: string
    question: string
    header?: string
    options?: Array<{ label: string; description?: string }>
    multi_select?: boolean
  }>
}

export function parameters(config: ToolAskUserConfig): JsonSchema {
  return {
    type: 'object',
    properties: {
      questions: {
        type: 'array',
        minItems: 1,
        maxItems: config.maxQuestions,
        description: 'The questions, shown to the user together.',
        items: {
          type: 'object',
          properties: {
            id: {
              type: 'string',
              minLength: 1,
              description: 'Short unique key; the answer is reported under it.',
            },
            question: { type: 'string', minLength: 1, description: 'The full question, ending with a question mark.' },
            header: { type: 'string', description: 'A label of a few words.' },
            options: {
              type: 'array',
              maxItems: config.maxOptions,
              description: 'Choices to pick from; omit for a free-text question.',
              items: {
                type: 'object',
                properties: {
                  label: { type: 'string', minLength: 1, description: 'The choice, in a few words.' },
                  description: { type: 'string', description: 'What choosing it means.' },
                },
                required: ['label'],
                additionalProperties: false,
              },
            },
            multi_select: { type: 'boolean', description: 'Allow picking several options. Default false.' },
          },
          required: ['id', 'question'],
          additionalProperties: false,
        },
      },
    },
    required: ['questions'],
    additionalProperties: false,
  }
}

export const DESCRIPTION = [
  'Ask the user short, self-contained questions (all you need in one call) and wait for the answers.',
  '- Offer 2 to 4 options when you can, the recommended one first; the user may still answer in their own words.',
  '- If no human can answer now, the result says so: continue with your best judgement and state your assumption.',
].join('\n')

export function toQuestions(args: AskUserArgs): Question[] {
  return args.questions.map((q) => ({
    id: q.id,
    question: q.question,
    ...(q.header !== undefined ? { header: q.header } : {}),
    ...(q.options !== undefined && q.options.length > 0
      ? {
          options: q.options.map((o) => ({
            label: o.label,
            ...(o.description !== undefined ? { description: o.description } : {}),
          })),
        }
      : {}),
    ...(q.multi_select !== undefined ? { multiSelect: q.multi_select } : {}),
  }))
}

/** The model-visible result of one call. */
export function renderOutcome(questions: Question[], outcome: QuestionsOutcome): ToolOutput {
  if (outcome.status === 'unavailable') {
    return {
      content: `No human can answer questions right now (${outcome.reason}). Do not wait for an answer: continue with your best judgement and state the assumption you made, or finish and explain what you need from the user.`,
      error: { code: 'NO_HUMAN', message: outcome.reason },
    }
  }
  if (outcome.status === 'cancelled') {
    return {
      content: `The questions were cancelled before the user answered (${outcome.reason}).`,
      error: { code: 'CANCELLED', message: outcome.reason },
    }
  }
  const lines = ['The user answered:']
  for (const q of questions) {
    const answer = outcome.answers[q.id]
    lines.push(`- ${q.id}: ${q.question}`)
    if (!answer) {
      lines.push('  (no answer)')
      continue
    }
    if (answer.selected.length > 0) lines.push(`  selected: ${answer.selected.join(', ')}`)
    if (answer.text !== undefined)
      lines.push(`  ${answer.selected.length > 0 || q.options?.length ? 'note' : 'answer'}: ${answer.text}`)
  }
  return { content: lines.join('\n'), meta: { answeredBy: outcome.answeredBy } }
}

export { PROMPT_SECTION } from './prompt.ts'

export function apply(ctx: Context, config: ToolAskUserConfig) {
  registerPromptSection(ctx)
  ctx.tools.register({
    name: 'ask_user_question',
    description: DESCRIPTION,
    parameters: parameters(config),
    async execute(args: AskUserArgs, call): Promise<ToolOutput> {
      const questions = toQuestions(args)
      const problem = checkQuestions(questions)
      if (problem)
        return {
          content: `Invalid questions: ${problem}. Fix the arguments and call ask_user_question again.`,
          error: { code: 'INVALID_ARGUMENTS', message: problem },
        }
      const outcome = await ctx.userQuestions.ask(questions, {
        ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}),
        ...(call.agentId !== undefined ? { agentId: call.agentId } : {}),
        callId: call.callId,
        signal: call.signal,
      })
      return renderOutcome(questions, outcome)
    },
  })
}
