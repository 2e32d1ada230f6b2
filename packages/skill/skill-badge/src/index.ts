// @dsh/skill-badge: a bundled skill provider contributing `dsh-badge` to ctx.skills: the
// "powered by dsh" Markdown snippets and a packaged PNG for places that cannot load a remote image.
// Its files ship inside this package (skill/); nothing is read from the project.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { LoadedSkill, SkillInfo } from '@dsh/skill'

export const name = 'skill-badge'
export const inject = ['skills']

export interface Config {
  /** The skill's name in the catalog. */
  skillName: string
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  skillName: Schema.string()
    .pattern(/^[a-z][a-z0-9-]{0,63}$/)
    .default('dsh-badge')
    .description("The skill's name in the catalog."),
}) as Schema<Partial<Config>, Config>

/** The directory holding SKILL.md and powered-by-dsh.png. */
export const SKILL_DIR = fileURLToPath(new URL('../skill/', import.meta.url)).replace(/\/$/, '')
export const PNG = 'powered-by-dsh.png'

export function apply(ctx: Context, config: Config): void {
  const info: SkillInfo = {
    name: config.skillName,
    description:
      'Add a "powered by dsh" badge (Markdown with a remote image, or the packaged PNG) to a README or docs page.',
    provider: 'badge',
    location: `${SKILL_DIR}/SKILL.md`,
    dir: SKILL_DIR,
    modelInvocable: true,
  }
  ctx.effect(
    () =>
      ctx.skills.register({
        id: 'badge',
        // Below the filesystem provider's default: a user's own skill of the same name wins.
        priority: -1,
        list: () => ({ skills: [info], problems: [] }),
        async load(): Promise<LoadedSkill> {
          return { info, body: readFileSync(info.location, 'utf8'), files: [PNG] }
        },
      }),
    'skill-badge: provider',
  )
}
