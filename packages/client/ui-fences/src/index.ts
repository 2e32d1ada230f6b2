// @dsh/ui-fences (host half): the system prompt section that tells the model it may answer with
// `dsh-ui` fences; the row also makes the host serve the browser half (`./client`), which renders
// those fences inside assistant replies as tables, bar charts, panels and forms.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/system-prompt'
import { PROMPT } from './spec.ts'

export * from './spec.ts'

export const name = '@dsh/ui-fences'
export interface Config {
  /** Add the prompt section that teaches the model the fences. */
  prompt: boolean
}
export const Config: Schema<Config> = Schema.object({
  prompt: Schema.boolean()
    .default(true)
    .description('Add the system prompt section that teaches the model the dsh-ui fences.'),
})

export function apply(ctx: Context, config: Config): void {
  if (!config.prompt) return
  ctx.inject(['systemPrompt'], (inner) => {
    inner.systemPrompt.registerSection({ id: 'web:dsh-ui', order: 900, text: PROMPT })
  })
}

export default { name, Config, apply }
