// Recipe: a tool. `word_count` counts the words of a text the model passes. Registering is an
// effect of this plugin: unloading the row removes the tool from the next request.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/tools'

export const name = 'cookbook-word-count'
export const inject = ['tools']

export interface Config {
  /** Texts longer than this are refused with a message the model can act on. */
  maxChars: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  maxChars: Schema.natural().min(1).default(100_000).description('Longest text the tool accepts.'),
})

export function apply(ctx: Context, config: Config) {
  ctx.tools.register({
    name: 'word_count',
    description: 'Counts the words (runs of non-space characters) in a text.',
    parameters: {
      type: 'object',
      properties: { text: { type: 'string', description: 'The text to count.' } },
      required: ['text'],
      additionalProperties: false,
    },
    // Pure: calls of one step may run in parallel.
    concurrencySafe: true,
    execute: (args: { text: string }) => {
      if (args.text.length > config.maxChars) {
        const message = `The text has ${args.text.length} characters; the limit is ${config.maxChars}. Count it in parts.`
        return { content: message, error: { code: 'TEXT_TOO_LONG', message } }
      }
      const words = args.text.split(/\s+/).filter(Boolean).length
      return { content: `${words} words` }
    },
  })
}
