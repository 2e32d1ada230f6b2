// `dsh-acp` in the e2b world through `--world e2b` (the world-e2b layer, as for `dsh --world e2b`), driven by
// the official ACP SDK as the client, with E2B played by @dsh/e2b-standin and the model by
// @dsh/llm-mock-server: the session's write and bash run in the sandbox, the local tree stays
// untouched (the client cancels the offer of the change, so it is kept as a patch), and when the
// client goes away the sandbox is killed.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'
import { bin as ACP_BIN, initialize, startAcp, workspace } from '@dsh/cli-testkit/acp'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 })

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

describe('dsh-acp --world e2b', () => {
  it('runs the session in a sandbox, keeps the change the client did not allow, and kills it when the client leaves', async () => {
    const { home, cwd } = workspace()
    writeFileSync(join(cwd, 'README'), 'local input\n')
    writeFileSync(join(cwd, '.gitignore'), 'home/\n')
    const before = new Set(standin.sandboxes().map((x) => x.record.id))
    const p = await startAcp(
      { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key', ...standin.env },
      cwd,
      ['--world', 'e2b'],
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

    // The turn's change was offered (session/request_permission); the harness cancels: kept only.
    expect(p.permissions).toHaveLength(1)
    const kept = /kept the patch (\S+); (\S+) was left as it was/.exec(p.stderr())
    expect(kept, p.stderr()).not.toBeNull()
    expect(kept![1]).toContain(id)
    expect(readFileSync(kept![1], 'utf8')).toContain('+from acp')

    expect(await p.close()).toBe(0)
    expect(standin.get(id)).toBeUndefined()
    expect(existsSync(join(cwd, 'made.txt'))).toBe(false)
  })
})

describe('dsh-acp --world: help and bad names', () => {
  const run = (args: string[]) =>
    promisify(execFile)(process.execPath, [ACP_BIN, ...args], {
      env: { ...process.env, DSH_HOME: '/nonexistent' },
    }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    )
  it('lists --world in --help', async () => {
    const r = await run(['--help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/--world NAME +where commands and files live: local \| e2b/)
  })
  it('refuses an unknown world in one line, exit 2, and a missing name', async () => {
    const bad = await run(['--world', 'mars'])
    expect(bad.code).toBe(2)
    expect(bad.stderr.split('\n')[0]).toBe('dsh-acp: --world: unknown world "mars" (known: local, e2b)' + '')
    const bare = await run(['--world'])
    expect(bare.code).toBe(2)
    expect(bare.stderr).toContain('--world needs a world name (local, e2b)')
  })
})
