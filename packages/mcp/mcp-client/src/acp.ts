// The Agent Client Protocol's `mcpServers` (on `session/new` and `session/load`) use a list form:
// `{name, command, args, env: [{name, value}]}` or `{type: 'http' | 'sse', name, url,
// headers: [{name, value}]}`. These convert it to the `mcpServers` table entries the client checks.
const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

function pairs(value: unknown): Record<string, string> | unknown {
  if (!Array.isArray(value)) return value
  const out: Record<string, string> = {}
  for (const item of value) {
    if (!isRecord(item) || typeof item.name !== 'string' || typeof item.value !== 'string') return value
    out[item.name] = item.value
  }
  return out
}

/** One ACP server description as `[name, entry]`; an item without a string `name` yields a problem instead. */
export function fromAcpServer(server: unknown, index: number): { name: string; entry: unknown } | { problem: string } {
  if (!isRecord(server) || typeof server.name !== 'string' || server.name === '')
    return { problem: `mcpServers[${index}] has no name` }
  const { name, env, headers, ...rest } = server
  const entry: Record<string, unknown> = { ...rest }
  if (env !== undefined) entry.env = pairs(env)
  if (headers !== undefined) entry.headers = pairs(headers)
  return { name, entry }
}
