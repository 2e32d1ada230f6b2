// `dsh mcp serve` through the real `dsh` launcher, with the official SDK client as the peer and
// @dsh/llm-mock-server as the model of dsh_agent: one stdio server and one HTTP server, each
// booted once and shared by the tests of its block; the MCP inspector CLI calls the HTTP one.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { DSH_BIN, runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

const require = createRequire(import.meta.url)
const inspector = join(require.resolve('@modelcontextprotocol/inspector-cli/package.json'), '..', 'build', 'index.js')

const root = mkdtempSync(join(tmpdir(), 'dsh-mcp-serve-'))
const home = join(root, 'home')
const cwd = join(root, 'project')
mkdirSync(cwd, { recursive: true })
writeFileSync(join(cwd, 'notes.txt'), 'the password is swordfish\n')

const text = (r: unknown) =>
  ((r as CallToolResult).content ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('')

/** Every file under dir, recursively. */
function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  )
}

let model: MockServer
let client: Client
let stderr = ''

beforeAll(async () => {
  model = await startMockServer({
    steps: [
      { expect: { lastRole: 'user', lastContains: 'what is six times seven' }, text: 'It is 42.' },
      { expect: { lastContains: 'think forever' }, events: [{ text: 'Thinking... ' }, { stall: true }] },
    ] as never,
  })
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [DSH_BIN, 'mcp', 'serve', '--patch', join(import.meta.dirname, 'fixtures', 'noisy.yml')],
    cwd,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? root,
      DSH_HOME: home,
      DEEPSEEK_BASE_URL: model.baseURL,
      DEEPSEEK_API_KEY: 'sk-test',
    },
    stderr: 'pipe',
  })
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  client = new Client({ name: 'dsh-test', version: '1.0.0' })
  await client.connect(transport)
}, 60_000)

afterAll(async () => {
  await client?.close()
  await model?.close()
})

describe('dsh mcp serve (stdio)', () => {
  it('lists the profile tools with their schemas, and dsh_agent', async () => {
    const { tools } = await client.listTools()
    const names = tools.map((t) => t.name)
    expect(names).toEqual(expect.arrayContaining(['read', 'bash', 'dsh_agent']))
    const read = tools.find((t) => t.name === 'read')!
    expect(read.inputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['file_path']) })
    expect(tools.find((t) => t.name === 'dsh_agent')!.inputSchema).toMatchObject({ required: ['task'] })
    expect(client.getServerVersion()).toMatchObject({ name: 'dsh' })
  })

  it('runs read and bash through the tool pipeline', async () => {
    const read = await client.callTool({ name: 'read', arguments: { file_path: 'notes.txt' } })
    expect(read.isError).toBeFalsy()
    expect(text(read)).toContain('the password is swordfish')
    const bash = await client.callTool({
      name: 'bash',
      arguments: { command: 'echo from-bash-$((6*7)) && pwd', description: 'print' },
    })
    expect(bash.isError).toBeFalsy()
    expect(text(bash)).toContain('from-bash-42')
    expect(text(bash)).toContain(cwd)
  })

  it('refuses an escalation with no human to ask, saying so', async () => {
    const { tools } = await client.listTools()
    const props = (tools.find((t) => t.name === 'bash')!.inputSchema.properties ?? {}) as Record<string, unknown>
    // Offered because the commands run sandboxed (bwrap, as everywhere dsh's tests run).
    expect(props).toHaveProperty('sandbox_escalation')
    const escalated = await client.callTool({
      name: 'bash',
      arguments: { command: 'echo escalated', description: 'print', sandbox_escalation: { justification: 'test' } },
    })
    expect(escalated.isError).toBe(true)
    expect(text(escalated)).not.toContain('escalated\n')
    expect(text(escalated)).toContain('needs a human, but this run has no interactive approver')
  })

  it('answers bad input with MCP errors', async () => {
    const unknown = await client.callTool({ name: 'no_such_tool', arguments: {} }).catch((e: unknown) => e)
    expect(unknown).toBeInstanceOf(McpError)
    expect((unknown as McpError).code).toBe(ErrorCode.InvalidParams)
    expect((unknown as McpError).message).toMatch(/unknown tool "no_such_tool"; the tools are: .*read/)
    const bad = await client.callTool({ name: 'read', arguments: { nope: 1 } })
    expect(bad.isError).toBe(true)
    expect(text(bad)).toMatch(/^Error \[INVALID_ARGUMENTS\]: the arguments for tool "read"/)
    const noTask = await client.callTool({ name: 'dsh_agent', arguments: {} }).catch((e: unknown) => e)
    expect((noTask as McpError).code).toBe(ErrorCode.InvalidParams)
    expect((noTask as McpError).message).toContain('dsh_agent: "task" must be a non-empty string')
  })

  it('dsh_agent runs one turn in a fresh, logged session and returns the answer', { timeout: 30_000 }, async () => {
    const result = await client.callTool({ name: 'dsh_agent', arguments: { task: 'what is six times seven?' } })
    expect(result.isError).toBeFalsy()
    expect(text(result)).toBe('It is 42.')
    const sessionId = (result._meta as Record<string, string>)['dsh/sessionId']
    expect(sessionId).toBeTruthy()
    expect(model.served).toBe(1)
    const logged = files(join(home, 'sessions')).filter((f) => readFileSync(f, 'utf8').includes(sessionId))
    expect(logged.length).toBeGreaterThan(0)
  })

  it('cancelling a dsh_agent call stops the agent turn', { timeout: 30_000 }, async () => {
    const cancel = new AbortController()
    const call = client.callTool({ name: 'dsh_agent', arguments: { task: 'think forever' } }, undefined, {
      signal: cancel.signal,
    })
    const settled = call.then(
      () => 'resolved',
      () => 'rejected',
    )
    // The turn's model request arrived (the script stalls it): cancel the MCP request.
    await vi.waitFor(() => expect(model.requests.length).toBe(2), { timeout: 20_000 })
    cancel.abort('enough')
    expect(await settled).toBe('rejected')
    // The server aborted the agent, which dropped its model request.
    await vi.waitFor(() => expect(model.requests[1].aborted).toBe(true), { timeout: 20_000 })
  })

  it('keeps stdout for frames: a plugin writing to stdout lands on stderr', () => {
    // On stdout, that line would have broken the client's first read (or been dropped by it).
    expect(stderr).toContain('noisy-fixture: hello from a plugin on stdout')
  })
})

describe('dsh mcp serve --transport http', () => {
  let proc: ChildProcess
  let url: string
  let http: Client

  const token = 'test-token-0123456789'
  const auth = { authorization: `Bearer ${token}` }

  beforeAll(async () => {
    proc = spawn(process.execPath, [DSH_BIN, 'mcp', 'serve', '--transport', 'http'], {
      cwd,
      // The bearer token comes from dsh's credentials (here: their environment layer).
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? root, DSH_HOME: home, DSH_MCP_SERVE_TOKEN: token },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    url = await new Promise<string>((resolve, reject) => {
      let err = ''
      proc.stderr!.on('data', (chunk: Buffer) => {
        err += chunk.toString()
        const m = /listening on (http:\/\/\S+)/.exec(err)
        if (m) resolve(m[1])
      })
      proc.once('exit', (code) => reject(new Error(`dsh mcp serve exited ${code}: ${err}`)))
    })
    http = new Client({ name: 'dsh-test-http', version: '1.0.0' })
    await http.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }))
  }, 60_000)

  afterAll(async () => {
    await http?.close()
    if (proc && proc.exitCode === null) {
      const exited = new Promise((resolve) => proc.once('exit', resolve))
      proc.kill('SIGTERM')
      await exited
    }
  })

  it('binds loopback and serves the tools over streamable HTTP', async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    const { tools } = await http.listTools()
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['read', 'bash', 'dsh_agent']))
    const bash = await http.callTool({ name: 'bash', arguments: { command: 'echo over-http', description: 'print' } })
    expect(text(bash)).toContain('over-http')
  })

  it('refuses a non-loopback Host (DNS rebinding), a foreign Origin and an unknown session', async () => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    })
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth }
    const { request } = await import('node:http')
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(url, { method: 'POST', headers: { ...headers, host: 'evil.example:80' } }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on('error', reject)
      req.end(body)
    })
    expect(status).toBe(403)
    const page = await fetch(url, { method: 'POST', headers: { ...headers, origin: 'https://evil.example' }, body })
    expect(page.status).toBe(403)
    const stale = await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': 'nope' }, body })
    expect(stale.status).toBe(404)
    expect(((await stale.json()) as { error: { message: string } }).error.message).toBe(
      'unknown MCP session "nope"; initialize a new one',
    )
  })

  it('refuses a request without the bearer token, or with a wrong one (401)', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    const bare = await fetch(url, { method: 'POST', headers, body })
    expect(bare.status).toBe(401)
    expect(bare.headers.get('www-authenticate')).toBe('Bearer realm="dsh mcp serve"')
    expect(((await bare.json()) as { error: { message: string } }).error.message).toBe(
      'unauthorized: send "Authorization: Bearer <token>" with the value of DSH_MCP_SERVE_TOKEN (or the token dsh mcp serve printed at start)',
    )
    const wrong = await fetch(url, { method: 'POST', headers: { ...headers, authorization: 'Bearer nope' }, body })
    expect(wrong.status).toBe(401)
    expect(wrong.headers.get('www-authenticate')).toContain('error="invalid_token"')
    // The SDK client without the header cannot connect either.
    const anonymous = new Client({ name: 'anonymous', version: '1.0.0' })
    await expect(anonymous.connect(new StreamableHTTPClientTransport(new URL(url)))).rejects.toThrow(
      /401|unauthorized/i,
    )
  })

  it('without a configured token, prints a fresh one on stderr and requires it', { timeout: 30_000 }, async () => {
    const fresh = spawn(process.execPath, [DSH_BIN, 'mcp', 'serve', '--transport', 'http'], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? root, DSH_HOME: home },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    try {
      const [freshUrl, freshToken] = await new Promise<[string, string]>((resolve, reject) => {
        let err = ''
        fresh.stderr!.on('data', (chunk: Buffer) => {
          err += chunk.toString()
          const t = /the bearer token of this run is (\S+)/.exec(err)
          const m = /listening on (http:\/\/\S+)/.exec(err)
          if (t && m) resolve([m[1], t[1]])
        })
        fresh.once('exit', (code) => reject(new Error(`dsh mcp serve exited ${code}: ${err}`)))
      })
      expect(freshToken).toMatch(/^[A-Za-z0-9_-]{32}$/)
      const c = new Client({ name: 'fresh', version: '1.0.0' })
      await c.connect(
        new StreamableHTTPClientTransport(new URL(freshUrl), {
          requestInit: { headers: { authorization: `Bearer ${freshToken}` } },
        }),
      )
      expect((await c.listTools()).tools.length).toBeGreaterThan(0)
      await c.close()
      const bare = await fetch(freshUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
      expect(bare.status).toBe(401)
    } finally {
      const exited = new Promise((resolve) => fresh.once('exit', resolve))
      fresh.kill('SIGTERM')
      await exited
    }
  })

  it('the MCP inspector CLI lists and calls the tools', { timeout: 30_000 }, async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        // The CLI finds its own package.json as "../package.json" from the working directory.
        const child = spawn(
          process.execPath,
          [inspector, url, '--transport', 'http', '--header', `Authorization: Bearer ${token}`, ...args],
          {
            cwd: join(inspector, '..'),
          },
        )
        let out = ''
        let err = ''
        child.stdout.on('data', (c: Buffer) => (out += c.toString()))
        child.stderr.on('data', (c: Buffer) => (err += c.toString()))
        child.on('exit', (code) => resolve({ code, out, err }))
      })
    const list = await run(['--method', 'tools/list'])
    expect(list.code, list.err).toBe(0)
    const names = (JSON.parse(list.out) as { tools: { name: string }[] }).tools.map((t) => t.name)
    expect(names).toEqual(expect.arrayContaining(['read', 'bash', 'dsh_agent']))
    const call = await run(['--method', 'tools/call', '--tool-name', 'read', '--tool-arg', 'file_path=notes.txt'])
    expect(call.code, call.err).toBe(0)
    expect(JSON.parse(call.out).content[0].text).toContain('the password is swordfish')
  })
})

describe('dsh mcp serve --permission-mode read-only', () => {
  let ro: Client

  beforeAll(async () => {
    ro = new Client({ name: 'dsh-test-ro', version: '1.0.0' })
    await ro.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [DSH_BIN, 'mcp', 'serve', '--permission-mode', 'read-only', '--no-agent-tool'],
        cwd,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? root, DSH_HOME: home },
        stderr: 'ignore',
      }),
    )
  }, 60_000)

  afterAll(async () => {
    await ro?.close()
  })

  it('confines bash to the preset: the workspace write the default mode allows fails here', async () => {
    const allowed = await client.callTool({
      name: 'bash',
      arguments: { command: 'echo yes > allowed.txt && cat allowed.txt', description: 'write' },
    })
    expect(text(allowed)).toContain('yes')
    expect(existsSync(join(cwd, 'allowed.txt'))).toBe(true)
    const { tools } = await ro.listTools()
    expect(tools.map((t) => t.name)).not.toContain('dsh_agent')
    const refused = await ro.callTool({
      name: 'bash',
      arguments: { command: 'echo no > refused.txt', description: 'write' },
    })
    expect(text(refused)).toMatch(/Read-only file system|Permission denied/)
    expect(existsSync(join(cwd, 'refused.txt'))).toBe(false)
    // Reading still works under read-only.
    const read = await ro.callTool({ name: 'read', arguments: { file_path: 'notes.txt' } })
    expect(text(read)).toContain('swordfish')
  })
})

describe('dsh mcp serve usage errors', () => {
  it('rejects bad flags with one line', async () => {
    const run = await runDsh(['mcp', 'serve', '--transport', 'carrier-pigeon'], { cwd, env: { DSH_HOME: home } })
    expect(run.code).toBe(2)
    expect(run.stderr).toBe(
      'dsh mcp serve: --transport must be stdio or http, not "carrier-pigeon"\ndsh mcp serve: see "dsh mcp serve --help"\n',
    )
    const port = await runDsh(['mcp', 'serve', '--port', '80'], { cwd, env: { DSH_HOME: home } })
    expect(port.code).toBe(2)
    expect(port.stderr).toContain('--port and --host need --transport http')
    const open = await runDsh(['mcp', 'serve', '--transport', 'http', '--host', '0.0.0.0', '--no-auth'], {
      cwd,
      env: { DSH_HOME: home },
    })
    expect(open.code).toBe(2)
    expect(open.stderr).toContain('--no-auth is only allowed on a loopback --host, not "0.0.0.0"')
    const stdio = await runDsh(['mcp', 'serve', '--no-auth'], { cwd, env: { DSH_HOME: home } })
    expect(stdio.code).toBe(2)
    expect(stdio.stderr).toContain('--no-auth needs --transport http')
  })

  it('names the valid presets for an unknown --permission-mode', { timeout: 30_000 }, async () => {
    const run = await runDsh(['mcp', 'serve', '--permission-mode', 'yolo'], { cwd, env: { DSH_HOME: home } })
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toMatch(/^dsh mcp serve: unknown --permission-mode "yolo"; valid: .*read-only/m)
  })

  it('ends with status 0 and nothing on stdout when the client closes stdin', { timeout: 30_000 }, async () => {
    const run = await runDsh(['mcp', 'serve'], { cwd, env: { DSH_HOME: home }, stdin: '', timeoutMs: 20_000 })
    expect(run.code).toBe(0)
    expect(run.stdout).toBe('')
  })
})
