// One server's tools on a real ToolRegistry: names, descriptions (the title or a stand-in when
// there is none, cut at maxDescriptionChars), read-only tools concurrency-safe, a scope's tools
// only there; a new listing replaces changed tools and removes vanished ones; a name two servers
// share is registered hashed for both, with one notice, and the plain name comes back when one
// leaves.
import { beforeAll, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { ToolRegistry } from '@dsh/tools'
import type { ConnectionHost } from '../src/connection-types.ts'
import { hashedToolName } from '../src/names.ts'
import { loadSdk } from '../src/sdk.ts'
import { ToolRegistrations } from '../src/tool-registrations.ts'

const schema = { type: 'object', properties: {} }

async function boot() {
  const ctx = new Context()
  await ctx.plugin(ToolRegistry, {} as never)
  const host = { ctx, options: { maxDescriptionChars: 20 }, onStatus: () => {} } as unknown as ConnectionHost
  return { ctx, host }
}

function server(name: string, host: ConnectionHost, scope?: string) {
  const notices: string[] = []
  const calls: string[] = []
  let disposed = false
  const regs: ToolRegistrations = new ToolRegistrations(name, host, scope, {
    disposed: () => disposed,
    notify: (notice) => {
      if (notice) notices.push(notice)
    },
    call: async (tool) => {
      calls.push(tool)
      return { content: [{ type: 'text', text: `${name}:${tool}` }] } as never
    },
  })
  return { regs, notices, calls, dispose: () => (disposed = true) }
}

beforeAll(async () => {
  await loadSdk()
})

describe('tool registrations', () => {
  it("registers, describes and replaces a server's tools", async () => {
    const { ctx, host } = await boot()
    const { regs, notices } = server('srv', host)
    regs.sync(
      [
        {
          name: 'read',
          description: 'Reads a thing from somewhere far away.',
          inputSchema: schema,
          annotations: { readOnlyHint: true },
        },
        { name: 'write', title: 'Write it', inputSchema: schema },
        { name: 'blank', description: '   ', inputSchema: schema },
        { name: 'exact', description: 'twenty characters ok', inputSchema: schema },
        { name: 'broken', inputSchema: { type: 'string' } },
      ],
      undefined,
    )
    const tool = (n: string) => ctx.tools.get(`mcp__srv__${n}`)
    expect(tool('read')).toMatchObject({ description: 'Reads a thing fro...', concurrencySafe: true })
    expect(tool('write')).toMatchObject({ description: 'Write it', concurrencySafe: false })
    expect(tool('blank')?.description).toBe('Tool blank of the...')
    expect(tool('exact')?.description).toBe('twenty characters ok')
    expect(regs.names().sort()).toEqual(['mcp__srv__blank', 'mcp__srv__exact', 'mcp__srv__read', 'mcp__srv__write'])
    expect(regs.size).toBe(4)
    expect(regs.has('mcp__srv__read')).toBe(true)
    expect(regs.skipped.map((s) => s.tool)).toEqual(['broken'])
    expect(notices).toHaveLength(1)
    expect(notices[0]).toMatch(/^MCP server "srv": skipped tool "broken" \(/)
    expect(regs.outputCheck('read')).toBeUndefined()

    // A new listing: `read` changed, `blank` vanished, `write` is the same registration.
    const before = tool('write')
    regs.sync(
      [
        { name: 'read', description: 'Reads.', inputSchema: schema },
        { name: 'write', title: 'Write it', inputSchema: schema },
        { name: 'exact', description: 'twenty characters ok', inputSchema: schema },
        { name: 'broken', inputSchema: { type: 'string' } },
        { name: 'typed', inputSchema: schema, outputSchema: { type: 'object', properties: { n: { type: 'number' } } } },
      ],
      undefined,
    )
    expect(tool('read')).toMatchObject({ description: 'Reads.', concurrencySafe: false })
    expect(tool('blank')).toBeUndefined()
    expect(tool('write')).toBe(before)
    expect(notices).toHaveLength(1) // the same skip is not told twice
    const result = await ctx.tools.execute({ callId: 'c1', name: 'mcp__srv__read', arguments: '{}' }, { cwd: '/' })
    expect(result.message.content).toEqual([{ type: 'text', text: 'srv:read' }])
    regs.clear()
    expect(ctx.tools.get('mcp__srv__read')).toBeUndefined()
    expect(regs.size).toBe(0)
  })

  it("registers a scope's tools in that scope only", async () => {
    const { ctx, host } = await boot()
    const { regs } = server('srv', host, 'agent-1')
    regs.sync([{ name: 'echo', inputSchema: schema }], undefined)
    expect(ctx.tools.get('mcp__srv__echo', 'agent-1')).toBeDefined()
    expect(ctx.tools.get('mcp__srv__echo')).toBeUndefined()
  })

  it('hashes a name two servers share, once noticed, and gives it back when one leaves', async () => {
    const { ctx, host } = await boot()
    const a = server('a.b', host)
    const b = server('a_b', host)
    a.regs.sync([{ name: 'echo', inputSchema: schema }], undefined)
    expect(a.regs.names()).toEqual(['mcp__a_b__echo'])
    b.regs.sync([{ name: 'echo', inputSchema: schema }], undefined)
    const hashed = [hashedToolName('a.b', 'echo'), hashedToolName('a_b', 'echo')]
    expect(a.regs.names()).toEqual([hashed[0]])
    expect(b.regs.names()).toEqual([hashed[1]])
    expect(ctx.tools.get('mcp__a_b__echo')).toBeUndefined()
    expect([...a.notices, ...b.notices]).toEqual([
      `MCP servers "a.b" and "a_b" both offer a tool named mcp__a_b__echo; to keep them apart, each is registered under a name with a hash suffix: ${hashed[0]} (server "a.b", tool "echo"), ${hashed[1]} (server "a_b", tool "echo").`,
    ])
    b.regs.clear()
    expect(a.regs.names()).toEqual(['mcp__a_b__echo'])
    // A disposed connection does not register again when the board changes.
    const fresh = await boot()
    const c = server('a.b', fresh.host)
    c.dispose()
    c.regs.sync([{ name: 'echo', inputSchema: schema }], undefined)
    const d = server('a_b', fresh.host)
    d.regs.sync([{ name: 'echo', inputSchema: schema }], undefined)
    expect(c.regs.names()).toEqual(['mcp__a_b__echo'])
  })
})
