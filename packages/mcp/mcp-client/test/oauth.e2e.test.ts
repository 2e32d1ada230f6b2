// End to end through the real `dsh` bin, against an OAuth-protected MCP server built from the SDK's
// server-side auth helpers (@dsh/mcp-oauth-server), with @dsh/llm-mock-server as the model:
// 1. `dsh -p` without a sign-in: one stderr line names `dsh mcp login`, the tools are not offered;
// 2. `dsh mcp login srv`: prints the authorization URL; the test opens it as a browser would (the
//    redirect reaches dsh's loopback callback); the tokens land in the 0600 credentials file;
// 3. `dsh -p` again: the model calls the server's tool with the stored token, and no token appears
//    in any output.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { DSH_BIN, runDsh } from '@dsh/cli-testkit'
import { startOAuthMcpServer, type OAuthMcpServer } from '@dsh/mcp-oauth-server'

let mcp: OAuthMcpServer
let model: MockServer | undefined
beforeAll(async () => {
  mcp = await startOAuthMcpServer()
})
afterAll(async () => {
  await mcp?.close()
  await model?.close()
})

async function browse(address: string): Promise<void> {
  let next: string | undefined = address
  for (let hop = 0; hop < 5 && next; hop++) {
    const response: Response = await fetch(next, { redirect: 'manual' })
    await response.body?.cancel()
    const location = response.headers.get('location')
    next = location ? new URL(location, next).href : undefined
  }
}

/** `dsh mcp login NAME`, opening the URL it prints as soon as it is printed. */
function login(
  name: string,
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DSH_BIN, 'mcp', 'login', name], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    let opened = false
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      const url = /^(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)$/m.exec(stdout)?.[1]
      if (url && !opened) {
        opened = true
        void browse(url)
      }
    })
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

describe('dsh with an OAuth-protected MCP server', () => {
  it('headless asks for dsh mcp login; login signs in through the browser; the next run uses the tool', {
    timeout: 120_000,
  }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-mcp-oauth-'))
    const home = join(root, 'home')
    const cwd = join(root, 'project')
    mkdirSync(home, { recursive: true })
    mkdirSync(cwd, { recursive: true })
    writeFileSync(join(home, 'settings.yaml'), `mcpServers:\n  srv:\n    url: ${mcp.url}\n`)
    model = await startMockServer({
      steps: [
        { text: 'no tools yet' },
        { toolCalls: [{ id: 'c_who', name: 'mcp__srv__whoami', arguments: {} }] },
        { text: 'ok' },
      ] as never,
    })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: model.baseURL, DEEPSEEK_API_KEY: 'x' }

    const before = await runDsh(['--profile', 'headless', 'who am I?'], { cwd, env })
    expect(before.code).toBe(0)
    expect(before.stderr).toContain(
      'dsh: MCP server "srv" needs you to sign in (OAuth) and no human is at hand; run "dsh mcp login srv" once, then its tools are available',
    )
    const offered = (model.requests[0].body as { tools?: { function: { name: string } }[] }).tools ?? []
    expect(offered.map((t) => t.function.name)).not.toContain('mcp__srv__whoami')
    expect(mcp.authorizations).toHaveLength(0)

    const signedIn = await login('srv', cwd, { DSH_HOME: home })
    expect(signedIn.stderr).toBe('')
    expect(signedIn.code).toBe(0)
    expect(signedIn.stdout).toContain('Open this address in a browser on this machine to sign in to MCP server "srv":')
    expect(signedIn.stdout).toContain('Signed in to "srv" (3 tools).')
    expect(mcp.authorizations).toHaveLength(1)
    expect(statSync(join(home, '.credentials.yaml')).mode & 0o777).toBe(0o600)

    const after = await runDsh(['--profile', 'headless', 'who am I?'], { cwd, env })
    expect(after.code).toBe(0)
    expect(after.stdout.trim()).toBe('ok')
    const second = model.requests.at(-1)!.body as { messages: { role: string; content: string }[] }
    expect(second.messages.filter((m) => m.role === 'tool').at(-1)!.content).toBe(
      `client ${mcp.authorizations[0].clientId} with scopes mcp:tools`,
    )
    expect(mcp.authorizations).toHaveLength(1)
    // No token in anything dsh printed.
    for (const token of mcp.accessTokens) {
      for (const text of [before.stdout, before.stderr, signedIn.stdout, signedIn.stderr, after.stdout, after.stderr]) {
        expect(text).not.toContain(token)
      }
    }
    expect(readFileSync(join(home, '.credentials.yaml'), 'utf8')).toContain('MCP_OAUTH_')
  })
})
