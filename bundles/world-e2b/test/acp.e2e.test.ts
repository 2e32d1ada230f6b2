// `dsh-acp` in the e2b world through config (the world-e2b layer as a `--patch` layer), driven by
// the official ACP SDK as the client, with E2B played by @dsh/e2b-standin and the model by
// @dsh/llm-mock-server: the session's write and bash run in the sandbox, the local tree stays
// untouched, and when the client goes away the sandbox is killed and its change saved as a patch.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'
import { initialize, startAcp, workspace } from '@dsh/cli-testkit/acp'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 })

const WORLD = fileURLToPath(new URL('../cordis.patch.yml', import.meta.url))

let standin: E2bStandin
let server: MockServer
beforeAll(async () => {
  standin = await startE2bStandin()
  server = await startMockServer({
    steps: [
      { toolCalls: [{ name: 'write', arguments: { file_path: 'made.txt', content: 'from acp\n' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'cat made.txt; ls', description: 'check' } }] },
      { text: 'Written in the sandbox.' },
    ] as never,
  })
})
afterAll(async () => {
  await server?.close()
  await standin?.close()
})

describe('dsh-acp --patch world-e2b', () => {
  it('runs the session in a sandbox, and kills it with the change saved when the client leaves', async () => {
    const { home, cwd } = workspace()
    writeFileSync(join(cwd, 'README'), 'local input\n')
    writeFileSync(join(cwd, '.gitignore'), 'home/\n')
    const before = new Set(standin.sandboxes().map((x) => x.record.id))
    const p = await startAcp(
      { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key', ...standin.env },
      cwd,
      ['--patch', WORLD],
    )
    await initialize(p.agent)
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    const response = await p.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'write made.txt' }],
    })
    expect(response.stopReason, p.stderr()).toBe('end_turn')
    // The bash call ran where the write landed: the sandbox, with the uploaded README beside it.
    const bash = (server.requests[2].body as { messages: { role: string; content: string }[] }).messages
      .filter((m) => m.role === 'tool')
      .at(-1)?.content
    expect(bash).toMatch(/from acp\n[\s\S]*README[\s\S]*made\.txt/)
    const mine = standin.sandboxes().filter((x) => !before.has(x.record.id))
    expect(mine).toHaveLength(1)
    const id = mine[0].record.id
    expect(readFileSync(join(standin.rootOf(id), cwd, 'made.txt'), 'utf8')).toBe('from acp\n')
    expect(existsSync(join(cwd, 'made.txt'))).toBe(false)

    expect(await p.close()).toBe(0)
    expect(standin.get(id)).toBeUndefined()
    const saved = /the E2B sandbox (\S+) changed the workspace; patch saved to (\S+) /.exec(p.stderr())
    expect(saved, p.stderr()).not.toBeNull()
    expect(saved![1]).toBe(id)
    expect(readFileSync(saved![2], 'utf8')).toContain('+from acp')
    expect(existsSync(join(cwd, 'made.txt'))).toBe(false)
  })
})
