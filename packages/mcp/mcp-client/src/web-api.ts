// `mcp.resources` on the web host (when `dsh web` mounts the API): the connected servers' resources
// and templates for the composer's `@` menu, matched on `server:uri`, name and description.
import type { Context } from 'cordis'
import type {} from '@dsh/api-gateway'
import { mcpResources } from './contract.ts'
import type { ResourceCandidate } from './mentions.ts'

export function registerWebApi(ctx: Context, list: () => ResourceCandidate[]): void {
  ctx.inject(['api'], (inner) => {
    inner.api.register(mcpResources, async ({ query, limit }) => {
      const needle = query.trim().replace(/^@/, '').toLowerCase()
      const matches = (text: string | undefined) => (text ?? '').toLowerCase().includes(needle)
      const resources = list().filter(
        (r) => matches(`${r.server}:${r.uri}`) || matches(r.name) || matches(r.description),
      )
      return { resources: resources.slice(0, limit) }
    })
  })
}
