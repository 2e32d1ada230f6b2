#!/usr/bin/env node
// A conformance-suite client (`@modelcontextprotocol/conformance client --command "node dsh-client.mjs"`):
// mounts @dsh/mcp-client (the built dist) on the server URL the suite appends, waits for the
// connection, then calls every tool the server lists with arguments made from its schema, through
// the dsh tool registry, and exits. MCP_CONFORMANCE_SCENARIO names the scenario.
import { Context } from 'cordis'
import { ToolRegistry } from '@dsh/tools'
import SubprocessLocal from '@dsh/subprocess-local'
import McpClient from '@dsh/mcp-client'

const url = process.argv.at(-1)
const ctx = new Context()
await ctx.plugin(ToolRegistry, {})
await ctx.plugin(SubprocessLocal, {})
const client = ctx.plugin(McpClient, {
  servers: { conformance: { url } },
  projectFile: false,
  userSettings: false,
  callTimeoutMs: 20_000,
  retry: { initialDelayMs: 200, maxDelayMs: 1000, maxAttempts: 3, stableMs: 30_000 },
})
await client
await ctx.mcp.ready()
const status = ctx.mcp.get('conformance')
process.stderr.write(`dsh-client: ${JSON.stringify(status)}\n`)
const sample = (schema) => {
  const type = Array.isArray(schema?.type) ? schema.type[0] : schema?.type
  if (schema?.default !== undefined) return schema.default
  if (schema?.enum) return schema.enum[0]
  if (type === 'number' || type === 'integer') return 1
  if (type === 'boolean') return true
  if (type === 'array') return []
  if (type === 'object') return {}
  return 'x'
}
let n = 0
for (const tool of ctx.tools.list()) {
  const props = tool.parameters.properties ?? {}
  const args = Object.fromEntries(Object.entries(props).map(([key, schema]) => [key, sample(schema)]))
  const result = await ctx.tools.execute(
    { callId: `c${++n}`, name: tool.name, arguments: JSON.stringify(args) },
    { cwd: process.cwd() },
  )
  process.stdout.write(`${tool.name}: ${JSON.stringify(result.message.content).slice(0, 300)}\n`)
}
await client.dispose()
process.exit(0)
