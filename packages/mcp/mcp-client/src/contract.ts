// The MCP method of the web host (browser-safe): the resources and resource templates of the MCP
// servers a session sees (the global ones and its own scope's), for the composer's `@` menu (a pick
// inserts `@server:uri`), and the URI templates of resource templates (filled in before a mention).
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export { expandTemplate, firstEmptyVariable, templateVariables } from './uri-template.ts'

/**
 * Host stream event: what `mcp.resources` answers may have changed (a server listed its resources
 * again, connected or went away; an agent, e.g. a subagent with its own servers, came or went).
 * An open `@` menu asks again. Bursts are sent once.
 */
export const MCP_RESOURCES_CHANGED = 'mcp/resources-changed'

export interface McpResourceMatch {
  server: string
  /** The resource's URI, or a template's URI template (`{variables}` filled in by the user). */
  uri: string
  name: string
  description?: string
  template: boolean
  /** Set when the server is a live subagent's own (`subagent sub-1`), not one the session's agent sees. */
  via?: string
}

export const mcpResources = defineMethod('mcp.resources', {
  description:
    "Resources and resource templates (as last listed) of the MCP servers `sessionId` sees (the global servers and those of its agent's scope, a scoped server shadowing a global one of its name; then those its live subagents mount for themselves, labelled `via`, for names not already listed) whose `server:uri`, name or description contains `query` (case-insensitive), servers by name; each is mentioned as `@server:uri`. `templates: false` leaves templates out.",
  params: Schema.object({
    sessionId: Schema.string().min(1).required(),
    query: Schema.string().default(''),
    limit: Schema.natural().min(1).max(200).default(20),
    templates: Schema.boolean().default(true),
  }),
  result: Schema.object({
    resources: Schema.array(
      Schema.object({
        server: Schema.string().required(),
        uri: Schema.string().required(),
        name: Schema.string().required(),
        description: Schema.string(),
        template: Schema.boolean().required(),
        via: Schema.string(),
      }),
    ).required(),
  }) as Schema<{ resources: McpResourceMatch[] }>,
})
