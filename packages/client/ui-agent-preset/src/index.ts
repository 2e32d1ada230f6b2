// @dsh/ui-agent-preset (host half): the `presets.list` and `presets.select` methods over
// `ctx.agentPresets`; the row also makes the host serve the browser half (`./client`), the preset
// chip of the composer.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ApiError } from '@dsh/web-protocol'
import { PresetError, presetOf } from '@dsh/agent-presets'
import type { Session } from '@dsh/session'
import type {} from '@dsh/api-gateway'
import { presetsList, presetsSelect } from './contract.ts'

export * from './contract.ts'

export const name = '@dsh/ui-agent-preset'
export const inject = ['agentPresets', 'sessions', 'agents']
export type Config = {}
export const Config: Schema<Config> = Schema.object({})

export function apply(ctx: Context): void {
  const sessionOf = (sessionId: string): Session | undefined =>
    ctx.agents.list().find((agent) => agent.session.id === sessionId)?.session ?? ctx.sessions.get(sessionId)
  ctx.inject(['api'], (inner) => {
    inner.api.register(presetsList, (p) => {
      const session = p.sessionId ? sessionOf(p.sessionId) : undefined
      const current = session ? presetOf(session) : undefined
      return {
        presets: ctx.agentPresets.list().map((preset) => ({ name: preset.name, source: preset.source })),
        default: ctx.agentPresets.default,
        ...(current ? { current } : {}),
      }
    })
    inner.api.register(presetsSelect, (p) => {
      const session = sessionOf(p.sessionId)
      if (!session)
        throw new ApiError(
          'SESSION_NOT_FOUND',
          `presets.select: session ${p.sessionId} is not open in this host; open it and try again`,
        )
      try {
        ctx.agentPresets.select(session, p.name)
      } catch (error) {
        if (error instanceof PresetError)
          throw new ApiError('INVALID_PARAMS', `presets.select: name: ${error.message}`, { field: 'name', status: 409 })
        throw error
      }
      return { preset: p.name }
    })
  })
}

export default { name, inject, Config, apply }
