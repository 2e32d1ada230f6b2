// A server without the tools capability (resources only, on the official SDK) connects: dsh does
// not ask it for tools/list, which it would refuse. Its resources are mentionable and readable.
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Context, type Fiber } from 'cordis'
import { ToolRegistry } from '@dsh/tools'
import SubprocessLocal from '@dsh/subprocess-local'
import McpClient from '../src/index.ts'

const fixture = fileURLToPath(new URL('./fixtures/resources-only-server.mjs', import.meta.url))

let ctx: Context
let fork: Fiber<Context>
beforeAll(async () => {
  ctx = new Context()
  await ctx.plugin(ToolRegistry, {} as never)
  await ctx.plugin(SubprocessLocal, {} as never)
  fork = ctx.plugin(McpClient, {
    servers: { docs: { command: process.execPath, args: [fixture] } },
    projectFile: false,
    userSettings: false,
  })
  await fork
  await ctx.mcp.ready(undefined, Number.POSITIVE_INFINITY)
})
afterAll(async () => {
  await fork?.dispose()
})

describe('@dsh/mcp-client with a server that offers no tools', () => {
  it('connects and offers its resources', async () => {
    const status = ctx.mcp.get('docs')
    expect(status).toMatchObject({ state: 'connected', failures: 0 })
    expect(status?.error).toBeUndefined()
    expect(status?.tools).toEqual(['mcp__docs__list_resources', 'mcp__docs__read_resource'])
    expect(ctx.mcp.resourceMentions()).toEqual([
      { server: 'docs', uri: 'docs://readme', name: 'readme', template: false },
    ])
  })
})
