// The tools of one MCP server on `ctx.tools`: each listing is checked tool by tool
// (tool-list.ts), new tools are registered, changed ones replaced and vanished ones removed; a tool
// the registry refuses is skipped with one notice, and a name another server of the scope also
// claims is registered under its hashed name (NameBoard, names.ts).
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import type { ConnectionHost } from './connection-types.ts'
import { firstLine, REGISTRY_REASON } from './failures.ts'
import { hashedToolName, nameBoard, toolName, type NameBoard } from './names.ts'
import { checkListedTools, keyOf, parametersOf, type OutputCheck, type SchemaCompiler } from './tool-list.ts'

interface Registered {
  raw: string
  key: string
  dispose(): void
}

/** What the registrations need of their connection. */
export interface RegistrationOwner {
  disposed(): boolean
  /** Reports the connection's status, with a notice when there is one. */
  notify(notice?: string): void
  /** Calls a tool of the server (its raw name). */
  call(tool: string, args: Record<string, unknown>, call: ToolCallContext): Promise<ToolOutput>
}

export class ToolRegistrations {
  private readonly registered = new Map<string, Registered>()
  /** The last tool list read (valid tools only), kept to register again when names change. */
  private listed: Tool[] = []
  /** Tools refused when the list was read, and all refused tools after the last register. */
  private listSkipped: Array<{ tool: string; reason: string }> = []
  skipped: Array<{ tool: string; reason: string }> = []
  /** Skips already reported, so a refresh does not repeat the notice. */
  private readonly reported = new Set<string>()
  /** Output-schema checks by raw tool name (the SDK's own, done here since tools are listed here). */
  private outputChecks = new Map<string, OutputCheck>()
  private readonly board: NameBoard

  constructor(
    private readonly name: string,
    private readonly host: ConnectionHost,
    private readonly scope: string | undefined,
    private readonly owner: RegistrationOwner,
  ) {
    // Keyed by the service's options object: the one thing every connection of a service shares
    // by identity (a Cordis context reached through a service may be a fresh proxy each time).
    this.board = nameBoard(host.options, scope)
  }

  /** The registered names. */
  names(): string[] {
    return [...this.registered.keys()]
  }

  has(name: string): boolean {
    return this.registered.has(name)
  }

  get size(): number {
    return this.registered.size
  }

  /** The output-schema check of a tool (raw name), if it declares one. */
  outputCheck(tool: string): OutputCheck | undefined {
    return this.outputChecks.get(tool)
  }

  /** Removes every tool and leaves the name board (the connection is gone). */
  clear(): void {
    for (const entry of this.registered.values()) entry.dispose()
    this.registered.clear()
    this.board.leave(this.name)
  }

  /** Registers the valid tools of a listing (see `register`); the rest are skipped with a notice. */
  sync(listed: unknown[], validator: SchemaCompiler | undefined): void {
    const { tools, skipped, checks } = checkListedTools(listed, validator)
    this.listed = tools
    this.listSkipped = skipped
    this.outputChecks = checks
    this.register()
  }

  /**
   * Registers new tools, replaces changed ones and removes vanished ones. A tool the registry
   * refuses (its input schema) is skipped like the ones `sync` refused. Names another server of the
   * same scope also claims are registered under a hashed name (see NameBoard).
   */
  private register(): void {
    const skipped = [...this.listSkipped]
    const plain = new Map<string, Tool>()
    const taken = new Set<string>()
    for (const tool of this.listed) {
      const name = toolName(this.name, tool.name, taken)
      if (taken.has(name)) continue
      taken.add(name)
      plain.set(name, tool)
    }
    const changed = this.board.update(this.name, new Map([...plain].map(([name, tool]) => [name, tool.name])), () => {
      if (!this.owner.disposed()) {
        this.register()
        this.owner.notify()
      }
    })
    const next = new Map<string, Tool>()
    for (const [name, tool] of plain)
      next.set(this.board.contested(name) ? hashedToolName(this.name, tool.name) : name, tool)
    for (const [name, entry] of this.registered) {
      const tool = next.get(name)
      if (!tool || keyOf(tool) !== entry.key) {
        entry.dispose()
        this.registered.delete(name)
      }
    }
    for (const [name, tool] of next) {
      if (this.registered.has(name)) continue
      try {
        const dispose = this.host.ctx.tools.register<Record<string, unknown>>({
          name,
          description: this.describeTool(tool),
          parameters: parametersOf(tool),
          ...(this.scope !== undefined ? { scope: this.scope } : {}),
          concurrencySafe: tool.annotations?.readOnlyHint === true,
          execute: (args, call) => this.owner.call(tool.name, args, call),
        })
        this.registered.set(name, { raw: tool.name, key: keyOf(tool), dispose })
      } catch (error) {
        skipped.push({ tool: tool.name, reason: `${REGISTRY_REASON}${firstLine(error)}` })
      }
    }
    this.skipped = skipped
    this.noticeSkips()
    for (const name of changed) {
      const claims = this.board.claimants(name)
      if (claims.length < 2) continue
      // One notice per newly contested name, from the server whose listing made it so.
      const list = claims
        .map((c) => `${hashedToolName(c.server, c.tool)} (server "${c.server}", tool "${c.tool}")`)
        .join(', ')
      this.owner.notify(
        `MCP servers ${claims.map((c) => `"${c.server}"`).join(' and ')} both offer a tool named ${name}; to keep them apart, each is registered under a name with a hash suffix: ${list}.`,
      )
    }
  }

  /** One notice for the skips not reported yet, naming the server, each tool and why. */
  private noticeSkips(): void {
    const fresh = this.skipped.filter((s) => !this.reported.has(`${s.tool}\u0000${s.reason}`))
    if (fresh.length === 0) return
    for (const s of fresh) this.reported.add(`${s.tool}\u0000${s.reason}`)
    const list = fresh.map((s) => `tool "${s.tool}" (${s.reason})`).join('; ')
    this.owner.notify(`MCP server "${this.name}": skipped ${list}. Its other tools are available.`)
  }

  private describeTool(tool: Tool): string {
    const text = (tool.description ?? tool.title ?? '').trim() || `Tool ${tool.name} of the MCP server "${this.name}".`
    const max = this.host.options.maxDescriptionChars
    return text.length > max ? `${text.slice(0, max - 3)}...` : text
  }
}
