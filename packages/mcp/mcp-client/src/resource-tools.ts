// The two tools a server that offers resources gets besides its own: `list_resources` (resources
// and templates, first page each) and `read_resource` (one URI, contents mapped like a tool
// result's embedded resources).
import type { JsonSchema, ToolCallContext, ToolOutput } from '@dsh/tools'
import { failure } from './failures.ts'
import type { Client } from './sdk.ts'
import { mapResult } from './results.ts'

export interface ResourceTool {
  /** The raw name (before `mcp__<server>__`). */
  raw: string
  description: string
  parameters: JsonSchema
  /** Waits for the connection; a server that is not connected or refuses is an error result. */
  execute(args: Record<string, unknown>, call: ToolCallContext): Promise<ToolOutput>
}

type Run = (client: Client, args: Record<string, unknown>, call: ToolCallContext) => Promise<ToolOutput>

/**
 * The resource tools of `server`; `timeout` gives the per-request limit (ms), `connected` the live
 * client (waiting while it reconnects), `explain` one line about a failure.
 */
export function resourceTools(
  server: string,
  timeout: () => number,
  connected: (signal: AbortSignal) => Promise<Client | undefined>,
  explain: (error: unknown) => string,
): ResourceTool[] {
  const tool = (raw: string, description: string, parameters: JsonSchema, run: Run): ResourceTool => ({
    raw,
    description,
    parameters,
    execute: async (args, call) => {
      const client = await connected(call.signal)
      if (!client)
        return failure('MCP_UNAVAILABLE', `the MCP server "${server}" is not connected, so "${call.name}" did not run.`)
      try {
        return await run(client, args, call)
      } catch (error) {
        if (call.signal.aborted) throw error
        return failure(
          'MCP_ERROR',
          `MCP server "${server}" refused "${call.name}": ${explain(error instanceof Error ? error.message : String(error))}`,
        )
      }
    },
  })
  return [
    tool(
      'list_resources',
      `Lists the resources (and resource templates) the MCP server "${server}" offers: URI, name, type and description. Read one with its read_resource tool.`,
      { type: 'object', properties: { cursor: { type: 'string', description: 'nextCursor of a previous page' } } },
      async (client, args, call) => {
        const cursor = typeof args.cursor === 'string' ? args.cursor : undefined
        const page = await client.listResources(cursor ? { cursor } : undefined, {
          signal: call.signal,
          timeout: timeout(),
        })
        const lines = page.resources.map(
          (r) =>
            `${r.uri}  ${r.name}${r.mimeType ? ` (${r.mimeType})` : ''}${r.description ? ` - ${r.description}` : ''}`,
        )
        if (!cursor) {
          const templates = await client
            .listResourceTemplates(undefined, { signal: call.signal, timeout: timeout() })
            .catch(() => undefined)
          for (const t of templates?.resourceTemplates ?? [])
            lines.push(`${t.uriTemplate}  ${t.name} (template)${t.description ? ` - ${t.description}` : ''}`)
        }
        if (page.nextCursor) lines.push(`More: call again with cursor ${JSON.stringify(page.nextCursor)}.`)
        return { content: lines.length ? lines.join('\n') : `MCP server "${server}" lists no resources.` }
      },
    ),
    tool(
      'read_resource',
      `Reads one resource of the MCP server "${server}" by URI (see its list_resources tool; a template's URI with its variables filled in).`,
      { type: 'object', properties: { uri: { type: 'string', description: 'The resource URI' } }, required: ['uri'] },
      async (client, args, call) => {
        const result = await client.readResource({ uri: String(args.uri) }, { signal: call.signal, timeout: timeout() })
        return mapResult({ content: result.contents.map((resource) => ({ type: 'resource', resource })) } as never, {
          server: server,
          tool: 'read_resource',
        })
      },
    ),
  ]
}
