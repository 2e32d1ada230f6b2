// @dsh/ui-cordis (host half): `cordis.definitions`, `cordis.run` and `cordis.retract` on ctx.api
// over `ctx.dynamicCordisRunner` (@dsh/cordis-host-runner), and `cordis/changed` on the host stream
// when a definition is defined, started or retracted. The row also makes the host serve the
// browser half (`./client`): the Plugins panel and the read-only `cordis_define` card.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ApiError } from '@dsh/web-protocol'
import { type Definition, RunnerError } from '@dsh/cordis-host-runner'
import type {} from '@dsh/api-gateway'
import { CORDIS_CHANGED, cordisDefinitions, cordisRetract, cordisRun, type WireDefinition } from './contract.ts'

export * from './contract.ts'

export const name = '@dsh/ui-cordis'
export const inject = ['dynamicCordisRunner']
export type Config = Record<string, never>
export const Config: Schema<Config> = Schema.object({}) as Schema<Config>

const STATUS: Record<string, number> = { UNKNOWN_DEFINITION: 404, RUNNING: 409, NOT_RUNNING: 409, NOT_APPROVED: 403 }

export function wireDefinition(d: Readonly<Definition>): WireDefinition {
  return {
    name: d.name,
    description: d.description,
    code: d.code,
    ...(d.browser ? { browser: d.browser } : {}),
    hash: d.hash,
    ...(d.sessionId ? { sessionId: d.sessionId } : {}),
    state: d.state,
    ...(d.error ? { error: d.error } : {}),
    handlers: [...d.handlers],
    log: [...d.log],
    ...(d.browserState ? { browserState: d.browserState } : {}),
    ...(d.browserError ? { browserError: d.browserError } : {}),
    ...(d.browserHandlers?.length ? { browserHandlers: [...d.browserHandlers] } : {}),
  }
}

export function apply(ctx: Context): void {
  const runner = ctx.dynamicCordisRunner
  const coded = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run()
    } catch (error) {
      if (error instanceof RunnerError)
        throw new ApiError(error.code, error.message, { status: STATUS[error.code] ?? 400, field: 'name' })
      throw error
    }
  }
  ctx.inject(['api'], (inner) => {
    inner.api.register(cordisDefinitions, (p) => ({ definitions: runner.list(p.sessionId).map(wireDefinition) }))
    inner.api.register(cordisRun, (p, call) =>
      coded(async () => ({
        // Scoped: the runner looks the name up among this session's definitions only.
        definition: wireDefinition(await runner.run(p.name, { sessionId: p.sessionId, signal: call.signal })),
      })),
    )
    inner.api.register(cordisRetract, (p) =>
      coded(async () => {
        await runner.retract(p.name, 'retracted by the user', p.sessionId)
        return {}
      }),
    )
    const changed = () => inner.api.publishHost({ type: CORDIS_CHANGED })
    inner.on('dynamicCordisRunner/defined', changed)
    inner.on('dynamicCordisRunner/mounted', changed)
    inner.on('dynamicCordisRunner/retract', changed)
    inner.on('dynamicCordisRunner/browser', changed)
  })
}

export default { name, inject, Config, apply }
