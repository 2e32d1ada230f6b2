// End-to-end: the real `dsh --profile headless` bin (the base bundle's `mcp` row) reads the
// project's .mcp.json, starts server-everything over stdio, and the model (@dsh/llm-mock-server)
// calls its echo tool. A second, broken server is reported in the stream and blocks nothing.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const require = createRequire(import.meta.url)
const everything = join(
  require.resolve('@modelcontextprotocol/server-everything/package.json'),
  '..',
  'dist',
  'index.js',
)

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('dsh --profile headless with MCP servers from .mcp.json', () => {
  it('offers and calls an MCP tool, and logs a broken server as mcp/status', { timeout: 90_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-mcp-'))
    const home = join(root, 'home')
    const cwd = join(root, 'project')
    mkdirSync(cwd, { recursive: true })
    writeFileSync(
      join(cwd, '.mcp.json'),
      JSON.stringify({
        mcpServers: {
          everything: { command: process.execPath, args: [everything, 'stdio'] },
          broken: { command: 'dsh-e2e-no-such-server' },
        },
      }),
    )
    server = await startMockServer({
      steps: [
        { toolCalls: [{ id: 'c_echo', name: 'mcp__everything__echo', arguments: { message: 'through dsh' } }] },
        { text: 'ok' },
      ] as never,
    })
    // The project's servers start only once the user trusted the project.
    expect((await runDsh(['trust', cwd], { cwd, env: { DSH_HOME: home } })).code).toBe(0)
    const run = await runDsh(['--profile', 'headless', '--output-format', 'stream-json', 'echo something'], {
      cwd,
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
    })
    expect(run.code).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.at(-1)).toMatchObject({ type: 'result', result: 'ok', reason: 'completed' })

    const first = server.requests[0].body as { tools: { function: { name: string } }[] }
    expect(first.tools.map((t) => t.function.name)).toContain('mcp__everything__echo')
    const second = server.requests[1].body as { messages: { role: string; content: string }[] }
    expect(second.messages.filter((m) => m.role === 'tool').at(-1)!.content).toBe('Echo: through dsh')

    const events = lines.filter((l) => l.type === 'event').map((l) => l.event)
    const notices = events.filter((e) => e.type === 'mcp/status').map((e) => e.data)
    expect(notices.some((n) => n.server === 'broken' && /ENOENT/.test(n.message))).toBe(true)
  })
})
