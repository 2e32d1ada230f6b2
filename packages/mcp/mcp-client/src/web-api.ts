// `mcp.resources` on the web host (when `dsh web` mounts the API): the resources and templates of
// the servers a session's live agents see (global, its agent's scope, and the scopes of its live
// subagents, each labelled), for the composer's `@` menu, matched on `server:uri`, name and
// description. `sessionAgents` also tells the mention expansion which subagent scopes to read from.
import type { Context } from 'cordis'
import type {} from '@dsh/api-gateway'
import type { Agent } from '@dsh/agent'
import { MCP_RESOURCES_CHANGED, mcpResources } from './contract.ts'
import type { ResourceCandidate } from './mentions.ts'

/** A live agent of a session: its scope, and for a subagent what the menu calls it. */
export interface SessionAgent {
  scope: string
  /** `subagent sub-1` for a live subagent (at any depth) of the session; absent for its own agent. */
  via?: string
}

/** The subagent link a child's session logs (`subagent/link`, @dsh/subagent), as far as read here. */
function linkOf(agent: Agent, parents: ReadonlySet<string>): { id: string } | undefined {
  const parent = agent.session.parent
  if (!parent || !parents.has(parent.sessionId)) return undefined
  // Logged right after the copied events (a fork copies its parent's, a spawn none).
  for (const event of agent.session.events.slice(parent.boundary, parent.boundary + 3)) {
    const data = (event as { type: string; data?: { id?: unknown; parentSessionId?: unknown } }).data
    if ((event as { type: string }).type === 'subagent/link' && typeof data?.id === 'string') return { id: data.id }
  }
  return undefined
}

/**
 * The live agents of `sessionId`, its own first (in creation order), then its live subagents and
 * theirs (breadth first). A forked or otherwise related session that is no subagent is not one.
 */
export function sessionAgents(agents: readonly Agent[], sessionId: string): SessionAgent[] {
  const out: SessionAgent[] = agents.filter((a) => a.session.id === sessionId).map((a) => ({ scope: a.scope }))
  const sessions = new Set([sessionId])
  for (let grew = true; grew; ) {
    grew = false
    for (const agent of agents) {
      if (sessions.has(agent.session.id)) continue
      const link = linkOf(agent, sessions)
      if (!link) continue
      sessions.add(agent.session.id)
      out.push({ scope: agent.scope, via: `subagent ${link.id}` })
      grew = true
    }
  }
  return out
}

/**
 * What the `@` menu of a session lists: each live agent's candidates, its own agent's first; a
 * `server:uri` already listed is not repeated (a global server every agent sees, or a subagent's
 * server of a name the session's own agent already sees), and a subagent's is labelled `via`.
 */
export function sessionCandidates(
  scopes: readonly SessionAgent[],
  list: (scope?: string) => ResourceCandidate[],
): Array<ResourceCandidate & { via?: string }> {
  const out: Array<ResourceCandidate & { via?: string }> = []
  const servers = new Set<string>()
  for (const { scope, via } of scopes.length ? scopes : [{ scope: undefined }]) {
    const seen = new Set(servers)
    for (const candidate of list(scope)) {
      // A name the session already reaches through an earlier agent is that agent's server.
      if (seen.has(candidate.server)) continue
      servers.add(candidate.server)
      out.push(via ? { ...candidate, via } : candidate)
    }
  }
  return out
}

/** Registers `mcp.resources`; the answer reads the session's live agents through `ctx.agents`. */
export function registerWebApi(
  ctx: Context,
  list: (scope?: string) => ResourceCandidate[],
): { subagentScopes(sessionId: string): string[] } {
  let agents: Context['agents'] | undefined
  ctx.inject(['agents'], (inner) => {
    inner.effect(() => {
      agents = inner.agents
      return () => (agents = undefined)
    }, 'mcp: agents for mcp.resources')
  })
  const scopesOf = (sessionId: string) => sessionAgents(agents?.list() ?? [], sessionId)
  ctx.inject(['api'], (inner) => {
    inner.api.register(mcpResources, async ({ sessionId, query, limit, templates }) => {
      const needle = query.trim().replace(/^@/, '').toLowerCase()
      const matches = (text: string | undefined) => (text ?? '').toLowerCase().includes(needle)
      const resources = sessionCandidates(scopesOf(sessionId), list).filter(
        (r) =>
          (templates || !r.template) && (matches(`${r.server}:${r.uri}`) || matches(r.name) || matches(r.description)),
      )
      return { resources: resources.slice(0, limit) }
    })
    // Open `@` menus ask again when the answer may have changed: one push per burst.
    let queued = false
    const changed = () => {
      if (queued) return
      queued = true
      queueMicrotask(() => {
        queued = false
        inner.api.publishHost({ type: MCP_RESOURCES_CHANGED })
      })
    }
    inner.on('mcp/catalog', changed)
    inner.on('mcp/status', changed)
    inner.on('agent/created', changed)
    inner.on('agent/disposed', changed)
  })
  return {
    /** The scopes of the session's live subagents (their servers can be mentioned in it). */
    subagentScopes: (sessionId) => scopesOf(sessionId).flatMap((a) => (a.via ? [a.scope] : [])),
  }
}
