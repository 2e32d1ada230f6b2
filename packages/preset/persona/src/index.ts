// @dsh/persona: the agent persona as a composable row. In a profile it replaces the deployment
// persona; as a row of an agent preset (mounted under the agent's standing scope) it shadows the
// deployment persona for that agent only. `owns: true` makes the text the whole system prompt.
import { readFileSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/system-prompt'

export interface PersonaConfig {
  text: string
  file?: string
  owns: boolean
}

export const Config: Schema<Partial<PersonaConfig>, PersonaConfig> = Schema.object({
  text: Schema.string().default('').description('The persona; may use prompt variables such as {{cwd}} and {{model}}.'),
  file: Schema.string().description(
    'Read the persona from this file instead (absolute, or relative to the working directory at start).',
  ),
  owns: Schema.boolean()
    .default(false)
    .description('The persona is the whole system prompt: no harness identity, no sections.'),
})

export const name = 'persona'
export const inject = ['systemPrompt']

/** The persona text a config selects; throws a one-line error for an unreadable file. */
export function personaText(config: PersonaConfig, cwd = process.cwd()): string {
  if (config.file === undefined || config.file === '') return config.text
  const path = isAbsolute(config.file) ? config.file : resolve(cwd, config.file)
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    throw new Error(
      `persona: cannot read file ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    )
  }
}

export function apply(ctx: Context, config: PersonaConfig): void {
  ctx.systemPrompt.setPersona(personaText(config), undefined, { owns: config.owns })
}
