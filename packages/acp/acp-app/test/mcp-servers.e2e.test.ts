// End-to-end: an editor's `session/new {mcpServers}` mounts those MCP servers for that session only.
// The real `dsh-acp` bin, the official ACP SDK as the client, @modelcontextprotocol/server-everything
// over stdio as the MCP peer and @dsh/llm-mock-server as the model.
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { assertOnlyFrames, initialize, startAcp, workspace, type AcpProcess } from '@dsh/cli-testkit/acp'

const require = createRequire(import.meta.url)
const everything = join(
  require.resolve('@modelcontextprotocol/server-everything/package.json'),
  '..',
  'dist',
  'index.js',
)

let server: MockServer | undefined
const running: AcpProcess[] = []
afterEach(async () => {
  for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL')
  await server?.close()
  server = undefined
})

type Request = { body: { tools?: { function: { name: string } }[]; messages: { role: string; content: string }[] } }
const toolNames = (r: Request) => (r.body.tools ?? []).map((t) => t.function.name)

describe('dsh-acp with the editor’s MCP servers', () => {
  it('session/new mcpServers: their tools reach that session only, a call runs on the server, and a broken entry does not block the session', async () => {
    const { home, cwd } = workspace()
    server = await startMockServer({
      steps: [
        { toolCalls: [{ id: 'c_echo', name: 'mcp__everything__echo', arguments: { message: 'from the editor' } }] },
        { text: 'echoed' },
        { text: 'second session answer' },
      ] as never,
    })
    const p = await startAcp(
      { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
      cwd,
    )
    running.push(p)
    const init = await initialize(p.agent)
    expect(init.agentCapabilities?.mcpCapabilities).toEqual({ http: true, sse: true })
    const mcpServers = [
      { name: 'everything', command: process.execPath, args: [everything, 'stdio'], env: [] },
      { name: 'broken', command: '', args: [], env: [] },
    ]
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers } as never)
    const answer = await p.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'echo something' }],
    })
    expect(answer.stopReason).toBe('end_turn')
    const requests = server.requests as unknown as Request[]
    expect(toolNames(requests[0])).toContain('mcp__everything__echo')
    const toolResult = requests[1].body.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''
    expect(toolResult).toContain('from the editor')

    // A second session without mcpServers does not see the first session's servers.
    const other = await p.agent.request('session/new', { cwd, mcpServers: [] })
    await p.agent.request('session/prompt', { sessionId: other.sessionId, prompt: [{ type: 'text', text: 'hi' }] })
    expect(toolNames(requests[2])).not.toContain('mcp__everything__echo')

    expect(await p.close()).toBe(0)
    assertOnlyFrames(p.stdoutLines())
  })
})
