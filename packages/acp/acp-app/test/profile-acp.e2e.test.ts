// `dsh --profile acp`: the real `dsh` launcher serves the Agent Client Protocol on stdio from the
// shipped `acp` profile template (@dsh/bundle-base + this package's layer as a bundle), driven by
// the official ACP client, with the DeepSeek adapter talking to @dsh/llm-mock-server. The
// profile's own cordis.patch.yml under $DSH_HOME is a layer of what boots, over the same rows
// `dsh-acp` composes.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { fileURLToPath } from 'node:url'
import { assertOnlyFrames, initialize, spawnBin, startAcp, workspace, type AcpProcess } from '@dsh/cli-testkit/acp'

vi.setConfig({ testTimeout: 60_000 })

const DSH_BIN = fileURLToPath(new URL('../../../boot/cli/bin/dsh.mjs', import.meta.url))

let server: MockServer | undefined
const running: AcpProcess[] = []
afterEach(async () => {
  for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL')
  await server?.close()
  server = undefined
})

describe('dsh --profile acp', () => {
  it('serves ACP through the dsh launcher, with the profile layer applied', async () => {
    server = await startMockServer({ steps: [{ text: 'Hello from the acp profile.' }] as never })
    const { home, cwd } = workspace()
    mkdirSync(cwd, { recursive: true })
    const env = {
      DSH_HOME: home,
      HOME: home,
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    }

    // First use creates the profile from its template; the dump names both bundles.
    const dump = spawnBin(['--profile', 'acp', '--dump-config'], env, cwd, DSH_BIN)
    dump.child.stdin.end()
    expect(await dump.exited).toBe(0)
    expect(dump.stderr()).toBe('')
    const dumped = dump.stdoutLines().join('\n')
    expect(dumped).toMatch(/bundle @dsh\/bundle-base: .*\n#\s+bundle @dsh\/acp-app: /)
    expect(dumped).toMatch(/- id: acp$/m)
    // The same rows as dsh-acp's own composition (names aside: the two render module names differently).
    const own = spawnBin(['--dump-config'], env, cwd)
    own.child.stdin.end()
    expect(await own.exited).toBe(0)
    const rows = (lines: string[]) => lines.filter((l) => !l.startsWith('#') && !/^\s*name: /.test(l))
    expect(rows(dump.stdoutLines())).toEqual(rows(own.stdoutLines()))
    const profilePatch = join(home, 'profiles', 'acp', 'cordis.patch.yml')
    expect(existsSync(profilePatch)).toBe(true)
    writeFileSync(profilePatch, '- id: acp\n  config:\n    agentName: dsh-profile-acp\n')

    const p = await startAcp(env, cwd, ['--profile', 'acp'], DSH_BIN)
    running.push(p)
    const init = await initialize(p.agent)
    expect(init.agentInfo?.name).toBe('dsh-profile-acp')
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    const response = await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hi' }] })
    expect(response.stopReason).toBe('end_turn')
    const said = p.updates
      .filter((u) => u.update.sessionUpdate === 'agent_message_chunk')
      .map((u) => (u.update as { content: { text?: string } }).content.text ?? '')
      .join('')
    expect(said).toBe('Hello from the acp profile.')
    expect(server.requests).toHaveLength(1)
    expect(await p.close()).toBe(0)
    assertOnlyFrames(p.stdoutLines())
  })
})
