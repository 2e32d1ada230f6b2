// Resources and roots against server-everything over stdio: a server that offers resources gets
// `list_resources` and `read_resource` tools; `roots/list` answers with the server's workspace.
import { mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Context, type Fiber } from 'cordis'
import { ToolRegistry } from '@dsh/tools'
import SubprocessLocal from '@dsh/subprocess-local'
import McpClient from '../src/index.ts'

const require = createRequire(import.meta.url)
const everything = join(
  require.resolve('@modelcontextprotocol/server-everything/package.json'),
  '..',
  'dist',
  'index.js',
)

let ctx: Context
let fork: Fiber<Context>
const workspace = mkdtempSync(join(tmpdir(), 'dsh-mcp-roots-'))
beforeAll(async () => {
  ctx = new Context()
  await ctx.plugin(ToolRegistry, {} as never)
  await ctx.plugin(SubprocessLocal, {} as never)
  fork = ctx.plugin(McpClient, {
    servers: { everything: { command: process.execPath, args: [everything, 'stdio'], cwd: workspace } },
    projectFile: false,
    userSettings: false,
  })
  await fork
  await ctx.mcp.ready(undefined, Number.POSITIVE_INFINITY)
})
afterAll(async () => {
  await fork?.dispose()
})

const call = async (name: string, args: Record<string, unknown> = {}) => {
  const result = await ctx.tools.execute(
    { callId: `c-${name}`, name, arguments: JSON.stringify(args) },
    { cwd: workspace },
  )
  return result.message.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n')
}

describe('@dsh/mcp-client resources and roots', () => {
  it('lists and reads resources through two tools', async () => {
    expect(ctx.mcp.get('everything')?.tools).toEqual(
      expect.arrayContaining(['mcp__everything__list_resources', 'mcp__everything__read_resource']),
    )
    const listed = await call('mcp__everything__list_resources')
    const uri = /^(demo:\/\/\S+|test:\/\/\S+)/m.exec(listed)?.[1]
    expect(uri).toBeDefined()
    const read = await call('mcp__everything__read_resource', { uri })
    expect(read).toContain(`Resource <${uri}>`)
  })

  it('offers the workspace as the one root', async () => {
    const roots = await call('mcp__everything__get-roots-list')
    expect(roots).toContain(pathToFileURL(workspace).href)
  })
})
