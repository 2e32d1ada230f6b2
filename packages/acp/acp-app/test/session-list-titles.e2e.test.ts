// ACP `session/list` carries session titles (#23): the real `dsh-acp` bin, driven by the official
// ACP client; a session stored by one process is listed with its title by the next one, which
// resumes it (`session/load`) and keeps prompting it; a session made there is listed too.
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { assertOnlyFrames, initialize, startAcp, workspace, type AcpProcess } from '@dsh/cli-testkit/acp'

let server: MockServer | undefined
const running: AcpProcess[] = []
afterEach(async () => {
  for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL')
  await server?.close()
  server = undefined
})

async function start(home: string, s: MockServer, cwd: string) {
  const p = await startAcp(
    { DSH_HOME: home, DEEPSEEK_BASE_URL: s.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
    cwd,
  )
  running.push(p)
  return p
}

describe('dsh-acp session/list', () => {
  it('lists stored and new sessions with their titles; a listed session resumes', async () => {
    const { home, cwd } = workspace()
    server = await startMockServer({
      steps: [
        { text: 'Noted.' },
        { expect: { lastContains: 'and the tests' }, text: 'Resumed.' },
        { text: 'Fresh.' },
      ] as never,
    })
    const first = await start(home, server, cwd)
    await initialize(first.agent)
    const { sessionId: stored } = await first.agent.request('session/new', { cwd, mcpServers: [] })
    const prompt = (p: AcpProcess, sessionId: string, text: string) =>
      p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] })
    expect((await prompt(first, stored, 'Rename the widget factory\nto WidgetBuilder')).stopReason).toBe('end_turn')
    expect(await first.close()).toBe(0)

    const second = await start(home, server, cwd)
    await initialize(second.agent)
    const listed = await second.agent.request('session/list', {})
    expect(listed.sessions).toEqual([
      {
        sessionId: stored,
        cwd,
        title: 'Rename the widget factory to WidgetBuilder',
        updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    ])
    expect((await second.agent.request('session/list', { cwd: `${cwd}/elsewhere` })).sessions).toEqual([])

    await second.agent.request('session/load', { sessionId: stored, cwd, mcpServers: [] })
    expect((await prompt(second, stored, 'and the tests')).stopReason).toBe('end_turn')
    const { sessionId: fresh } = await second.agent.request('session/new', { cwd, mcpServers: [] })
    expect((await prompt(second, fresh, 'Second task: update the changelog')).stopReason).toBe('end_turn')
    const titles = Object.fromEntries(
      (await second.agent.request('session/list', {})).sessions.map((s) => [s.sessionId, s.title]),
    )
    // The resumed session keeps its first title; the new one has its own.
    expect(titles).toEqual({
      [stored]: 'Rename the widget factory to WidgetBuilder',
      [fresh]: 'Second task: update the changelog',
    })
    expect(await second.close()).toBe(0)
    assertOnlyFrames(second.stdoutLines())
  })
})
