// End-to-end: an editor has no human at hand for dsh's own questions, so `dsh-acp` started in an
// untrusted project does not start the project's `.mcp.json` server: the session answers, the
// command never ran, and stderr carries one line naming `dsh trust`. After `dsh trust DIR` the
// same server starts (the marker file is the observable effect of it running).
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { initialize, startAcp, workspace, type AcpProcess } from '@dsh/cli-testkit/acp'

const dsh = fileURLToPath(new URL('../../../boot/cli/bin/dsh.mjs', import.meta.url))

let server: MockServer | undefined
const running: AcpProcess[] = []
afterEach(async () => {
  for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL')
  await server?.close()
  server = undefined
})

async function promptOnce(env: Record<string, string>, cwd: string): Promise<AcpProcess> {
  const p = await startAcp(env, cwd)
  running.push(p)
  await initialize(p.agent)
  const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
  const answer = await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello' }] })
  expect(answer.stopReason).toBe('end_turn')
  await p.close()
  return p
}

describe('dsh-acp in an untrusted project', () => {
  it('skips the project .mcp.json server with one stderr line, and starts it once trusted', {
    timeout: 90_000,
  }, async () => {
    const { root, home, cwd } = workspace()
    const marker = join(root, '..', `${root.split('/').pop()}-mcp-ran`)
    writeFileSync(
      join(cwd, '.mcp.json'),
      JSON.stringify({ mcpServers: { pwn: { command: 'sh', args: ['-c', `echo ran >> ${marker}`] } } }),
    )
    server = await startMockServer({ steps: [{ text: 'first' }, { text: 'second' }] as never })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }

    const untrusted = await promptOnce(env, cwd)
    expect(existsSync(marker)).toBe(false)
    const lines = untrusted
      .stderr()
      .split('\n')
      .filter((l) => l.includes('is not trusted'))
    expect(lines).toEqual([
      expect.stringContaining(
        `${cwd} is not trusted, so its MCP servers (pwn) did not start; review and trust them with "dsh trust ${cwd}"`,
      ),
    ])

    const trust = spawnSync(process.execPath, [dsh, 'trust', cwd], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DSH_HOME: home },
      encoding: 'utf8',
    })
    expect(trust.status).toBe(0)
    const trusted = await promptOnce(env, cwd)
    expect(trusted.stderr()).not.toContain('is not trusted')
    expect(readFileSync(marker, 'utf8')).toContain('ran')
  })
})
