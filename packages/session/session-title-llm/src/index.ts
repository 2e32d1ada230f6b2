// @dsh/session-title-llm: a `ctx.sessionTitle` provider that asks a model (through `ctx.llm`) for a
// short title. `first-prompt` (default) titles the first human prompt of a fresh session once;
// `all-prompts` starts a new revision after every human prompt. The request runs beside the turn,
// never before it, and a failure keeps the fallback title.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { TitleCadence, TitleRequest } from '@dsh/session-title'
import type {} from '@dsh/agent-default-model'

export const name = '@dsh/session-title-llm'
export const inject = ['llm', 'sessionTitle']

export interface Config {
  /** Route and model; default: the agent-default-model selection. */
  provider?: string
  model?: string
  cadence: TitleCadence
  /** Prompt text sent, at most (longer prompts are cut). */
  maxPromptChars: number
  maxTokens: number
  timeoutMs: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  provider: Schema.string().description('LLM route; default: the agent-default-model row.'),
  model: Schema.string().description('Model id; default: the agent-default-model row.'),
  cadence: Schema.union(['first-prompt', 'all-prompts'] as const)
    .default('first-prompt')
    .description('When to ask for a title.'),
  maxPromptChars: Schema.natural().min(100).default(2000).description('Prompt characters sent to the model, at most.'),
  maxTokens: Schema.natural().min(8).default(40).description('Output token cap of the title request.'),
  timeoutMs: Schema.natural()
    .min(100)
    .default(30_000)
    .description('The request is abandoned after this long (the fallback stays).'),
})

export const SYSTEM = [
  'You name conversations between a person and a coding agent.',
  'Reply with a title only: 3 to 7 words, in the language of the request, no quotes, no trailing period.',
  'Name the task, not the person; keep file, tool and product names as written.',
].join(' ')

/** The user message of a title request. */
export function titlePrompt(request: Pick<TitleRequest, 'prompt' | 'earlierPrompts'>, maxChars: number): string {
  const cut = (text: string) => (text.length > maxChars ? `${text.slice(0, maxChars)}…` : text)
  const earlier = request.earlierPrompts.slice(-3).map((text) => `- ${cut(text)}`)
  return [
    ...(earlier.length ? ['Earlier requests:', ...earlier, ''] : []),
    'Request to title:',
    cut(request.prompt),
  ].join('\n')
}

export function apply(ctx: Context, config: Config): void {
  ctx.sessionTitle.registerProvider({
    name: 'llm',
    cadence: config.cadence,
    async generate(request) {
      const fallback = ctx.get('agentDefaultModel')?.get()
      const provider = config.provider ?? fallback?.provider
      const model = config.model ?? fallback?.model
      if (!provider || !model)
        throw new Error('session-title-llm: no model: set provider and model, or add the agent-default-model row')
      const signal = AbortSignal.any([request.signal, AbortSignal.timeout(config.timeoutMs)])
      const response = await ctx.llm.complete({
        provider,
        model,
        system: SYSTEM,
        messages: [{ role: 'user', content: [{ type: 'text', text: titlePrompt(request, config.maxPromptChars) }] }],
        maxTokens: config.maxTokens,
        reasoningEffort: 'off',
        signal,
        metadata: { sessionId: request.sessionId, purpose: 'session-title' },
      })
      const title =
        response.message.content
          .filter((block) => block.type === 'text')
          .map((block) => (block as { text: string }).text)
          .join('')
          .split('\n')
          .map((line) => line.trim())
          .find(Boolean) ?? ''
      // The usage goes along so the session's stats count the title request (apart from turns).
      return { title, provider, model, ...(response.usage ? { usage: response.usage } : {}) }
    },
  })
}
