// An editor that stops reading (closes its end of dsh-acp's stdout) while a turn streams ends the
// connection, not the process with a crash: the real bin, the official SDK client, a model that
// streams until its client goes away. The next frame write fails with EPIPE; the bin exits 0 like
// any closed connection, with no stack trace on stderr.
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { initialize, startAcp, workspace, type AcpProcess } from '@dsh/cli-testkit/acp'

let server: MockServer | undefined
const running: AcpProcess[] = []
afterEach(async () => {
  for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL')
  await server?.close()
  server = undefined
})

describe('dsh-acp with a stdout the editor closed', () => {
  it('a streaming turn whose updates can no longer be written ends the connection: exit 0, no stack trace', async () => {
    const { home, cwd } = workspace()
    server = await startMockServer({
      steps: [{ events: [{ text: 'first ' }, { forever: { text: 'more ', intervalMs: 2 } }] }] as never,
    })
    const p = await startAcp(
      { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
      cwd,
    )
    running.push(p)
    await initialize(p.agent)
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    void p.agent
      .request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'talk forever' }] })
      .catch(() => {})
    await p.waitFor((n) => n.update.sessionUpdate === 'agent_message_chunk')
    // Only the read end closes: stdin stays open, so nothing but the failed write can end the run.
    p.child.stdout.destroy()
    expect(await p.exited).toBe(0)
    expect(p.stderr()).not.toMatch(/\n\s+at |Unhandled 'error' event/)
  })
})
