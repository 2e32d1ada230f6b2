// `mcp.resources` on the web host (when `dsh web` mounts the API): the resources and templates of
// the servers a session sees (global, and its agent's scope), for the composer's `@` menu, matched
// on `server:uri`, name and description.
import type { Context } from 'cordis'
import type {} from '@dsh/api-gateway'
import type {} from '@dsh/agent'
import { mcpResources } from './contract.ts'
import type { ResourceCandidate } from './mentions.ts'

export function registerWebApi(ctx: Context, list: (scope?: string) => ResourceCandidate[]): void {
  let agents: Context['agents'] | undefined
  ctx.inject(['agents'], (inner) => {
    inner.effect(() => {
      agents = inner.agents
      return () => (agents = undefined)
    }, 'mcp: agents for mcp.resources')
  })
  /**
   * The scope of the session's agent (its per-session servers are mounted there, as `agent/pre-step`
   * reads them when a message is sent); none when no agent of the session is live: globals only.
   */
  const scopeOf = (sessionId: string) => agents?.list().find((agent) => agent.session.id === sessionId)?.scope
  ctx.inject(['api'], (inner) => {
    inner.api.register(mcpResources, async ({ sessionId, query, limit, templates }) => {
      const needle = query.trim().replace(/^@/, '').toLowerCase()
      const matches = (text: string | undefined) => (text ?? '').toLowerCase().includes(needle)
      const resources = list(scopeOf(sessionId)).filter(
        (r) =>
          (templates || !r.template) && (matches(`${r.server}:${r.uri}`) || matches(r.name) || matches(r.description)),
      )
      return { resources: resources.slice(0, limit) }
    })
  })
}
