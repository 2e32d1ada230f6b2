// Model-facing names of MCP tools: `mcp__<server>__<tool>`, fitted to the registry's
// `^[a-zA-Z0-9_-]{1,64}$`. Characters outside the set become `_`; a name over 64 characters keeps
// its start and ends in a short hash of the full original, so two long names never collide.
import { createHash } from 'node:crypto'

const MAX = 64

export function sanitize(part: string): string {
  return part.replace(/[^a-zA-Z0-9_-]/g, '_')
}

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8)
}

/** The registered name of `tool` on `server`; `taken` holds names already used by this server. */
export function toolName(server: string, tool: string, taken: ReadonlySet<string> = new Set()): string {
  const plain = `mcp__${sanitize(server)}__${sanitize(tool)}`
  const exact = plain === `mcp__${server}__${tool}`
  if (plain.length <= MAX && (exact || !taken.has(plain))) return plain
  const suffix = `_${shortHash(`${server}\u0000${tool}`)}`
  return plain.slice(0, MAX - suffix.length) + suffix
}
