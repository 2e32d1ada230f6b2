// @dsh/ui-skill (host half): `skill.list {sessionId}` on ctx.api, the skills visible from a live
// session's working directory that run as `/<name>` (the command source of @dsh/tool-skill); the
// row also makes the host serve the browser half (`./client`), the Skills group of the `/` menu.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ApiError } from '@dsh/web-protocol'
import type {} from '@dsh/skill'
import type {} from '@dsh/session'
import type {} from '@dsh/api-gateway'
import { skillList, type WireSkill } from './contract.ts'

export * from './contract.ts'

export const name = '@dsh/ui-skill'
export const inject = ['skills', 'sessions']
export type Config = Record<string, never>
export const Config: Schema<Config> = Schema.object({}) as Schema<Config>

/** Names a `/` command line can carry (as @dsh/tool-skill offers them). */
const COMMAND_NAME = /^[a-z][a-z0-9-]*$/

export function apply(ctx: Context): void {
  ctx.inject(['api'], (inner) => {
    inner.api.register(skillList, (p) => {
      const session = ctx.sessions.get(p.sessionId)
      if (!session)
        throw new ApiError(
          'SESSION_NOT_FOUND',
          `skill.list: session ${p.sessionId} is not open in this host; open it and try again`,
          { field: 'sessionId', status: 404 },
        )
      const skills: WireSkill[] = ctx.skills
        .list(session.cwd)
        .filter((skill) => COMMAND_NAME.test(skill.name))
        .map((skill) => ({ name: skill.name, description: skill.description, modelInvocable: skill.modelInvocable }))
      return { skills }
    })
  })
}

export default { name, inject, Config, apply }
