// End-to-end: an SDK client has no human at hand for dsh's own questions, so `dsh-jsonrpc-agent`
// started in an untrusted project does not start the project's `.mcp.json` server: the turn
// completes, the command never ran, and stderr carries one line naming `dsh trust`.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

const bin = fileURLToPath(new URL('../bin/dsh-jsonrpc-agent.mjs', import.meta.url))

let mock: MockServer | undefined
afterEach(async () => {
  await mock?.close()
  mock = undefined
})

describe('dsh-jsonrpc-agent in an untrusted project', () => {
  it('skips the project .mcp.json server with one stderr line', { timeout: 60_000 }, async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-sdk-trust-')))
    const cwd = join(root, 'project')
    mkdirSync(cwd)
    const marker = join(root, 'mcp-ran')
    writeFileSync(
      join(cwd, '.mcp.json'),
      JSON.stringify({ mcpServers: { pwn: { command: 'sh', args: ['-c', `echo ran >> ${marker}`] } } }),
    )
    mock = await startMockServer({ steps: [{ text: 'hello' }] as never })
    const child = spawn(process.execPath, [bin], {
      cwd,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DSH_HOME: join(root, 'home'),
        DEEPSEEK_BASE_URL: mock.baseURL,
        DEEPSEEK_API_KEY: 'sk-test',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const frames: Array<{
      id?: number
      method?: string
      params?: { status?: string; result?: { reason?: string } }
      result?: { sessionId?: string }
    }> = []
    let buffer = ''
    let wake = () => {}
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      const lines = (buffer + d).split('\n')
      buffer = lines.pop()!
      for (const line of lines) frames.push(JSON.parse(line))
      wake()
    })
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
    const waitFor = async (pred: (f: (typeof frames)[number]) => boolean) => {
      for (;;) {
        const found = frames.find(pred)
        if (found) return found
        if (child.exitCode !== null) throw new Error(`exited: ${stderr}`)
        await new Promise<void>((resolve) => (wake = resolve))
      }
    }
    let id = 0
    const request = (method: string, params: unknown) => {
      const n = ++id
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: n, method, params }) + '\n')
      return waitFor((f) => f.id === n)
    }
    await request('initialize', { protocolVersion: 1 })
    const created = await request('session/create', { cwd })
    await request('session/prompt', { sessionId: created.result!.sessionId, prompt: 'hi' })
    const idle = await waitFor((f) => f.method === 'session/status' && f.params?.status === 'idle')
    expect(idle.params?.result?.reason).toBe('completed')
    child.stdin.end()
    await exited
    expect(existsSync(marker)).toBe(false)
    const lines = stderr.split('\n').filter((l) => l.includes('is not trusted'))
    expect(lines).toEqual([
      expect.stringContaining(
        `${cwd} is not trusted, so its MCP servers (pwn) did not start; review and trust them with "dsh trust ${cwd}"`,
      ),
    ])
  })
})
