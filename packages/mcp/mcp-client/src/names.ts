// Model-facing names of MCP tools: `mcp__<server>__<tool>`, fitted to the registry's
// `^[a-zA-Z0-9_-]{1,64}$`. Characters outside the set become `_`; a name over 64 characters keeps
// its start and ends in a short hash of the full original, so two long names never collide.
// Names that two servers of one scope would share are resolved by `NameBoard` (every claimant
// takes its hashed name, whatever order the servers connected in).
import { createHash } from 'node:crypto'

const MAX = 64

export function sanitize(part: string): string {
  return part.replace(/[^a-zA-Z0-9_-]/g, '_')
}

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8)
}

/** The name of `tool` on `server` with a hash of both: unique whatever the sanitising lost. */
export function hashedToolName(server: string, tool: string): string {
  const plain = `mcp__${sanitize(server)}__${sanitize(tool)}`
  const suffix = `_${shortHash(`${server}\u0000${tool}`)}`
  return plain.slice(0, MAX - suffix.length) + suffix
}

/** The registered name of `tool` on `server`; `taken` holds names already used by this server. */
export function toolName(server: string, tool: string, taken: ReadonlySet<string> = new Set()): string {
  const plain = `mcp__${sanitize(server)}__${sanitize(tool)}`
  const exact = plain === `mcp__${server}__${tool}`
  if (plain.length <= MAX && (exact || !taken.has(plain))) return plain
  return hashedToolName(server, tool)
}

/** One server's claim on a model-facing name. */
export interface NameClaim {
  server: string
  tool: string
}

/**
 * The plain names claimed by the servers of one scope. A name claimed by two servers is contested:
 * each claimant registers its tool under `hashedToolName` instead, so neither shadows the other
 * and the outcome does not depend on which server connected first.
 */
export class NameBoard {
  private readonly claims = new Map<string, Map<string, NameClaim>>()
  private readonly members = new Map<string, { names: Set<string>; resync(): void }>()

  /**
   * Replaces `server`'s claims with `names` (plain name -> raw tool). Returns the names whose
   * contested state changed, and asks every other member holding one of them to register again.
   */
  update(server: string, names: Map<string, string>, resync: () => void): Set<string> {
    const before = new Map<string, boolean>()
    const old = this.members.get(server)?.names ?? new Set<string>()
    for (const name of new Set([...old, ...names.keys()])) before.set(name, this.contested(name))
    for (const name of old) {
      const owners = this.claims.get(name)
      owners?.delete(server)
      if (owners?.size === 0) this.claims.delete(name)
    }
    for (const [name, tool] of names) {
      let owners = this.claims.get(name)
      if (!owners) this.claims.set(name, (owners = new Map()))
      owners.set(server, { server, tool })
    }
    this.members.set(server, { names: new Set(names.keys()), resync })
    return this.settle(server, before)
  }

  /** Drops `server`'s claims (its tools are gone); the others it contested register again. */
  leave(server: string): void {
    const old = this.members.get(server)?.names
    if (!old) return
    const before = new Map([...old].map((name) => [name, this.contested(name)] as const))
    for (const name of old) {
      const owners = this.claims.get(name)
      owners?.delete(server)
      if (owners?.size === 0) this.claims.delete(name)
    }
    this.members.delete(server)
    this.settle(server, before)
  }

  contested(name: string): boolean {
    return (this.claims.get(name)?.size ?? 0) > 1
  }

  /** Every claim on `name`, by server name. */
  claimants(name: string): NameClaim[] {
    return [...(this.claims.get(name)?.values() ?? [])].sort((a, b) =>
      a.server < b.server ? -1 : a.server > b.server ? 1 : 0,
    )
  }

  private settle(server: string, before: Map<string, boolean>): Set<string> {
    const changed = new Set<string>()
    for (const [name, was] of before) if (this.contested(name) !== was) changed.add(name)
    if (changed.size === 0) return changed
    for (const [other, member] of this.members) {
      if (other === server) continue
      if ([...changed].some((name) => member.names.has(name))) member.resync()
    }
    return changed
  }
}

const boards = new WeakMap<object, Map<string, NameBoard>>()

/** The board of `scope` (undefined: global tools) among the connections sharing `owner`. */
export function nameBoard(owner: object, scope: string | undefined): NameBoard {
  let byScope = boards.get(owner)
  if (!byScope) boards.set(owner, (byScope = new Map()))
  const key = scope ?? ''
  let board = byScope.get(key)
  if (!board) byScope.set(key, (board = new NameBoard()))
  return board
}
