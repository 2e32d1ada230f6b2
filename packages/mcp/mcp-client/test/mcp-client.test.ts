// @dsh/mcp-client against real MCP servers: @modelcontextprotocol/server-everything over stdio and
// streamable HTTP, and a small server built on the official SDK (list changes, crash, cancellation).
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import SubprocessLocal from '@dsh/subprocess-local'
import SpillLocal from '@dsh/spill-local'
import * as SpillPolicy from '@dsh/spill-policy'
import { MemorySettings } from '@dsh/settings'
import type { ToolResultPayload } from '@dsh/tools'
import HomePaths from '@dsh/home-paths'
import ProjectTrust, { TrustStore, trustAll, TRUST_OPTION } from '@dsh/project-trust'
import UserQuestions from '@dsh/user-questions'
import McpClient, { projectTrustRequests, type McpServerStatus } from '../src/index.ts'

const require = createRequire(import.meta.url)
const everything = join(
  require.resolve('@modelcontextprotocol/server-everything/package.json'),
  '..',
  'dist',
  'index.js',
)
const changing = fileURLToPath(new URL('./fixtures/changing-server.mjs', import.meta.url))

const fast = { retry: { initialDelayMs: 20, maxDelayMs: 100, maxAttempts: 3, stableMs: 60_000 } }

let harness: Harness | undefined
const children: ChildProcess[] = []
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
  for (const child of children.splice(0)) child.kill('SIGKILL')
})

async function boot(
  config: Record<string, unknown>,
  options: { script?: unknown[]; cwd?: string; before?: Array<[unknown, unknown?]>; noClient?: boolean } = {},
) {
  const cwd = options.cwd ?? mkdtempSync(join(tmpdir(), 'dsh-mcp-'))
  harness = await createHarness({
    cwd,
    script: (options.script ?? []) as never,
    plugins: [
      ...((options.before ?? []) as never[]),
      [SubprocessLocal, {}],
      ...(options.noClient ? [] : [[McpClient, { cwd, ...fast, ...config }]]),
    ] as never,
  })
  return harness
}

/** Trusts the project's current .mcp.json as `dsh trust` would, and returns the trust rows to mount. */
async function trustedProject(cwd: string, home: string): Promise<Array<[unknown, unknown?]>> {
  await trustAll(TrustStore.inHome(home), projectTrustRequests({}, cwd))
  return [
    [HomePaths, { home }],
    [ProjectTrust, {}],
  ]
}

async function until<T>(probe: () => T | undefined | false, what: string, ms = 15_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = probe()
    if (value) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const status = (h: Harness, name: string): McpServerStatus | undefined => h.ctx.mcp.get(name)
const connected = (h: Harness, name: string) =>
  until(() => status(h, name)?.state === 'connected' && status(h, name), `${name} connected`)

let calls = 0
function call(h: Harness, name: string, args: object, signal?: AbortSignal): Promise<ToolResultPayload> {
  return h.ctx.tools.execute(
    { callId: `c${++calls}`, name, arguments: JSON.stringify(args) },
    { cwd: process.cwd(), sessionId: h.session.id, ...(signal ? { signal } : {}) },
  )
}
const text = (result: ToolResultPayload) =>
  result.message.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n')

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

async function startHttpEverything(): Promise<string> {
  const port = await freePort()
  const child = spawn(process.execPath, [everything, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  children.push(child)
  await new Promise<void>((resolve, reject) => {
    let seen = ''
    child.stderr!.on('data', (data) => {
      seen += String(data)
      if (seen.includes('listening')) resolve()
    })
    child.on('exit', (code) => reject(new Error(`server-everything exited (${code}): ${seen}`)))
  })
  return `http://127.0.0.1:${port}/mcp`
}

describe('@dsh/mcp-client with server-everything over stdio', () => {
  it('offers the tools as mcp__<server>__<tool> with their schemas, and the model calls echo', async () => {
    const h = await boot(
      { servers: { everything: { command: process.execPath, args: [everything, 'stdio'] } } },
      {
        script: [
          { toolCalls: [{ name: 'mcp__everything__echo', arguments: { message: 'hello over stdio' } }] },
          { text: 'done' },
        ],
      },
    )
    const result = await h.prompt('echo it')
    expect(result.reason).toBe('completed')
    const request = h.model.requests[0]
    const echo = request.tools!.find((t) => t.name === 'mcp__everything__echo')!
    expect(echo.parameters).toMatchObject({
      type: 'object',
      properties: { message: { type: 'string' } },
      required: ['message'],
    })
    expect(echo.description).toMatch(/echo/i)
    const logged = h.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data as ToolResultPayload)
    expect(text(logged[0])).toBe('Echo: hello over stdio')
    expect(status(h, 'everything')).toMatchObject({ state: 'connected', transport: 'stdio', source: 'config' })
  })

  it('maps images, structured content and resource links to tool results', async () => {
    const h = await boot({ servers: { everything: { command: process.execPath, args: [everything, 'stdio'] } } })
    await connected(h, 'everything')
    const image = await call(h, 'mcp__everything__get-tiny-image', {})
    const imageBlock = image.message.content.find((b) => b.type === 'image')
    expect(imageBlock).toMatchObject({ type: 'image', mediaType: 'image/png' })
    expect((imageBlock as { data: string }).data.length).toBeGreaterThan(100)
    const structured = await call(h, 'mcp__everything__get-structured-content', { location: 'Chicago' })
    expect(structured.error).toBeUndefined()
    expect(text(structured)).toContain('"temperature":36')
    const links = await call(h, 'mcp__everything__get-resource-links', { count: 2 })
    expect(text(links)).toMatch(/Resource link: .*<demo:\/\/resource\//)
    const bad = await call(h, 'mcp__everything__get-sum', { a: 'not a number' })
    expect(bad.error?.code).toBe('INVALID_ARGUMENTS')
  })

  it('forwards cancellation of a long-running call with progress', async () => {
    const h = await boot({ servers: { everything: { command: process.execPath, args: [everything, 'stdio'] } } })
    await connected(h, 'everything')
    const progress: number[] = []
    const controller = new AbortController()
    h.ctx.on('mcp/progress', (p) => {
      progress.push(p.progress)
      controller.abort(new Error('the user pressed stop'))
    })
    const result = await call(
      h,
      'mcp__everything__trigger-long-running-operation',
      { duration: 30, steps: 60 },
      controller.signal,
    )
    expect(progress.length).toBeGreaterThan(0)
    expect(result.error?.code).toBe('CANCELLED')
    // The server is still usable afterwards.
    expect(text(await call(h, 'mcp__everything__echo', { message: 'still here' }))).toBe('Echo: still here')
  })
})

describe('@dsh/mcp-client over streamable HTTP', () => {
  it('connects to server-everything by url and calls echo', async () => {
    const url = await startHttpEverything()
    const h = await boot({ servers: { web: { url, type: 'http' } } })
    const up = await connected(h, 'web')
    expect(up.transport).toBe('http')
    expect(up.tools).toContain('mcp__web__echo')
    expect(text(await call(h, 'mcp__web__echo', { message: 'over http' }))).toBe('Echo: over http')
  })
})

describe('@dsh/mcp-client reliability', () => {
  it('retries a server whose command does not exist, reports it, and the other servers still work', async () => {
    const h = await boot({
      servers: {
        missing: { command: 'dsh-no-such-mcp-server-binary' },
        everything: { command: process.execPath, args: [everything, 'stdio'] },
      },
    })
    const seen: McpServerStatus['state'][] = []
    h.ctx.on('mcp/status', (s) => void (s.name === 'missing' && seen.push(s.state)))
    await connected(h, 'everything')
    const failed = await until(() => status(h, 'missing')?.state === 'failed' && status(h, 'missing'), 'missing failed')
    expect(failed.failures).toBe(3)
    expect(failed.error).toMatch(/could not start "dsh-no-such-mcp-server-binary": ENOENT/)
    expect(seen).toContain('retrying')
    // The failure is logged in the session, typed and not model-visible.
    const notices = h.session.events
      .filter((e) => e.type === 'mcp/status')
      .map((e) => e.data as { server: string; state: string; message: string })
    expect(notices.some((n) => n.server === 'missing' && n.state === 'failed' && /ENOENT/.test(n.message))).toBe(true)
    expect(text(await call(h, 'mcp__everything__echo', { message: 'fine' }))).toBe('Echo: fine')
  })

  it('names the exit code and last stderr line of a server that exits at once', async () => {
    const h = await boot({
      servers: {
        quitter: { command: process.execPath, args: ['-e', 'console.error("config file missing"); process.exit(3)'] },
      },
    })
    const failed = await until(() => status(h, 'quitter')?.state === 'failed' && status(h, 'quitter'), 'quitter failed')
    expect(failed.error).toBe('the server process exited with code 3; its last stderr line: config file missing')
  })

  it('restarts a server that crashed, keeps its tools, and the next call reaches the new process', async () => {
    const h = await boot({
      servers: { changing: { command: process.execPath, args: [changing], env: { DSH_TEST_VALUE: 'from-env' } } },
    })
    await connected(h, 'changing')
    const before = text(await call(h, 'mcp__changing__whoami', {}))
    expect(before).toMatch(/^\d+ from-env$/)
    expect(text(await call(h, 'mcp__changing__crash', {}))).toBe('crashing')
    await until(() => status(h, 'changing')?.restarts === 1 && status(h, 'changing')?.state === 'connected', 'restart')
    const after = text(await call(h, 'mcp__changing__whoami', {}))
    expect(after).toMatch(/^\d+ from-env$/)
    expect(after).not.toBe(before)
    const notices = h.session.events
      .filter((e) => e.type === 'mcp/status')
      .map((e) => (e.data as { message: string }).message)
    expect(notices.some((m) => /stopped \(the server process exited with code 7\); restarting/.test(m))).toBe(true)
  })

  it('follows tools/list_changed', async () => {
    const h = await boot({ servers: { changing: { command: process.execPath, args: [changing] } } })
    await connected(h, 'changing')
    expect(h.ctx.tools.get('mcp__changing__late')).toBeUndefined()
    expect(text(await call(h, 'mcp__changing__add_tool', { name: 'late' }))).toBe('added late')
    await until(() => h.ctx.tools.get('mcp__changing__late'), 'the new tool')
    expect(text(await call(h, 'mcp__changing__late', {}))).toBe('late ran')
  })

  it('times out a hanging call and cancels it on the server', async () => {
    const mark = join(mkdtempSync(join(tmpdir(), 'dsh-mcp-mark-')), 'mark')
    const h = await boot({
      callTimeoutMs: 300,
      servers: { changing: { command: process.execPath, args: [changing], env: { DSH_TEST_MARK: mark } } },
    })
    await connected(h, 'changing')
    const result = await call(h, 'mcp__changing__wait', {})
    expect(result.error?.code).toBe('MCP_TIMEOUT')
    expect(text(result)).toContain('did not answer within 300 ms')
    // writeFileSync creates the file before it writes it: wait for the content, not the file.
    await until(
      () => existsSync(mark) && readFileSync(mark, 'utf8') === 'cancelled',
      'the server to see the cancellation',
    )
    expect(readFileSync(mark, 'utf8')).toBe('cancelled')
  })

  it('spills a big text result through the spill policy', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-mcp-spill-'))
    const h = await boot(
      { servers: { changing: { command: process.execPath, args: [changing] } } },
      {
        before: [
          [SpillLocal, { dir: home }],
          [SpillPolicy, { maxInlineBytes: 8192, headBytes: 4096, tailBytes: 2048 }],
        ],
      },
    )
    await connected(h, 'changing')
    const result = await call(h, 'mcp__changing__big', { kib: 64 })
    expect(Buffer.byteLength(text(result))).toBeLessThan(8192)
    expect(text(result)).toContain(home)
    expect(result.meta).toMatchObject({ mcp: { server: 'changing', tool: 'big' } })
  })

  it('removes its tools and stops its servers when unloaded', async () => {
    const h = await boot({}, { noClient: true })
    const mounted = await h.mount(McpClient as never, {
      ...fast,
      servers: { changing: { command: process.execPath, args: [changing] } },
    })
    await until(() => h.ctx.tools.get('mcp__changing__whoami'), 'tools')
    const pid = Number(text(await call(h, 'mcp__changing__whoami', {})).split(' ')[0])
    await mounted.dispose()
    expect(h.ctx.tools.get('mcp__changing__whoami')).toBeUndefined()
    await until(() => {
      try {
        process.kill(pid, 0)
        return false
      } catch {
        return true
      }
    }, 'the server process to end')
  })
})

describe('@dsh/mcp-client configuration', () => {
  it('lists malformed rows as invalid with a reason and starts the good ones', async () => {
    const h = await boot({
      servers: {
        number: 42,
        empty: { args: ['x'] },
        both: { command: 'x', url: 'http://127.0.0.1:1/mcp' },
        'bad name!': { command: 'x' },
        unset: { command: '${DSH_TEST_SURELY_UNSET_VAR}' },
        ftp: { url: 'ftp://example.invalid/' },
        off: { command: 'x', disabled: true },
        everything: { command: process.execPath, args: [everything, 'stdio'] },
      },
    })
    await connected(h, 'everything')
    const byName = Object.fromEntries(h.ctx.mcp.list().map((s) => [s.name, s]))
    expect(byName.number).toMatchObject({
      state: 'invalid',
      error: 'expected an object with "command" or "url", got number',
    })
    expect(byName.empty.error).toBe('expected "command" (a local server) or "url" (a remote one)')
    expect(byName.both.error).toMatch(/not both/)
    expect(byName['bad name!'].error).toMatch(/server name/)
    expect(byName.unset.error).toMatch(/DSH_TEST_SURELY_UNSET_VAR/)
    expect(byName.ftp.error).toMatch(/http or https/)
    expect(byName.off.state).toBe('disabled')
    // Invalid servers are logged for a session created afterwards.
    const session = h.ctx.sessions.create({ cwd: process.cwd() })
    const notices = session.events
      .filter((e) => e.type === 'mcp/status')
      .map((e) => (e.data as { server: string }).server)
    expect(notices.sort()).toEqual(['bad name!', 'both', 'empty', 'ftp', 'number', 'unset'])
  })

  it('reads the project .mcp.json and the mcpServers settings; the row wins over both', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-mcp-project-'))
    const home = mkdtempSync(join(tmpdir(), 'dsh-mcp-home-'))
    writeFileSync(
      join(cwd, '.mcp.json'),
      JSON.stringify({
        mcpServers: {
          project: {
            command: process.execPath,
            args: [changing],
            env: { DSH_TEST_VALUE: '${DSH_TEST_PROJECT_VALUE:-fallback}' },
          },
          shared: { command: 'from-project' },
        },
      }),
    )
    const h = await boot(
      { servers: { shared: { command: process.execPath, args: [changing] } } },
      {
        cwd,
        before: [
          // The project's servers start once the user trusted them, as `dsh trust` records it.
          ...(await trustedProject(cwd, home)),
          [
            MemorySettings,
            {
              initial: {
                mcpServers: {
                  user: { command: process.execPath, args: [changing] },
                  project: { command: 'from-settings' },
                },
              },
            },
          ],
        ],
      },
    )
    await connected(h, 'project')
    await connected(h, 'user')
    await connected(h, 'shared')
    expect(status(h, 'project')).toMatchObject({ source: 'project', origin: join(cwd, '.mcp.json') })
    expect(status(h, 'user')?.source).toBe('user')
    expect(status(h, 'shared')?.source).toBe('config')
    expect(text(await call(h, 'mcp__project__whoami', {}))).toMatch(/ fallback$/)
  })

  it("holds the project's servers until the project is trusted, and starts them on a human's yes", async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-mcp-untrusted-'))
    const home = mkdtempSync(join(tmpdir(), 'dsh-mcp-home-'))
    writeFileSync(
      join(cwd, '.mcp.json'),
      JSON.stringify({
        mcpServers: { project: { command: process.execPath, args: [changing] }, off: { command: 'x', disabled: true } },
      }),
    )
    const asked: string[] = []
    const human = {
      name: 'human',
      inject: ['userQuestions'],
      apply(ctx: import('cordis').Context) {
        ctx.userQuestions.registerAnswerer({
          name: 'tui',
          answer: (request) => (asked.push(request.questions[0]!.question), { trust: { selected: [TRUST_OPTION] } }),
        })
      },
    }
    const h = await boot(
      { servers: { row: { command: process.execPath, args: [changing] } } },
      {
        cwd,
        script: [{ text: 'ok' }],
        before: [[HomePaths, { home }], [UserQuestions, {}], [ProjectTrust, {}], [human]],
      },
    )
    await connected(h, 'row')
    expect(status(h, 'project')).toMatchObject({
      state: 'disabled',
      source: 'project',
      transport: 'stdio',
      error: expect.stringContaining('the project is not trusted'),
    })
    expect(status(h, 'off')?.state).toBe('disabled')
    // The first step asks once, showing the command; the yes starts the server before the request.
    await h.prompt('hello')
    expect(asked).toHaveLength(1)
    expect(asked[0]).toContain(`project (.mcp.json): ${process.execPath} ${changing}`)
    await connected(h, 'project')
    expect(new TrustStore(join(home, 'trusted-projects.json')).list()).toHaveLength(1)
  })

  it('does not restart a trusted project server whose script was rewritten meanwhile', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-mcp-pinned-'))
    const home = mkdtempSync(join(tmpdir(), 'dsh-mcp-home-'))
    writeFileSync(join(cwd, 'server.mjs'), `import ${JSON.stringify(changing)}\n`)
    writeFileSync(
      join(cwd, '.mcp.json'),
      JSON.stringify({ mcpServers: { srv: { command: process.execPath, args: ['server.mjs'] } } }),
    )
    const h = await boot({}, { cwd, before: await trustedProject(cwd, home) })
    await connected(h, 'srv')
    // A confined command rewrites the script; then the server crashes.
    writeFileSync(join(cwd, 'server.mjs'), `import ${JSON.stringify(changing)}\n// changed\n`)
    expect(text(await call(h, 'mcp__srv__crash', {}))).toBe('crashing')
    const held = await until(() => status(h, 'srv')?.state === 'disabled' && status(h, 'srv'), 'the server held')
    expect(held.error).toMatch(/a file it executes changed after the project was trusted/)
    expect(held.restarts).toBe(0)
  })

  it("without a project-trust row the project's servers never start", async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-mcp-no-trust-'))
    writeFileSync(
      join(cwd, '.mcp.json'),
      JSON.stringify({ mcpServers: { project: { command: process.execPath, args: [changing] } } }),
    )
    const h = await boot(
      { servers: { row: { command: process.execPath, args: [changing] } } },
      { cwd, script: [{ text: 'ok' }] },
    )
    await connected(h, 'row')
    await h.prompt('hello')
    expect(status(h, 'project')?.state).toBe('disabled')
  })

  it('keeps going when .mcp.json is not valid JSON', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-mcp-broken-'))
    writeFileSync(join(cwd, '.mcp.json'), '{"mcpServers": {')
    const warnings: string[] = []
    const h = await boot({ servers: { changing: { command: process.execPath, args: [changing] } } }, { cwd })
    h.ctx.on('mcp/status', (_s, notice) => void (notice && warnings.push(notice)))
    await connected(h, 'changing')
    expect(h.ctx.mcp.list().map((s) => s.name)).toEqual(['changing'])
  })
})

describe('@dsh/mcp-client per-session servers (ACP mcpServers)', () => {
  it("mounts an editor's servers for one agent scope only, and removes them with the disposer", async () => {
    const h = await boot(
      {},
      { script: [{ toolCalls: [{ name: 'mcp__editor__whoami', arguments: {} }] }, { text: 'done' }] },
    )
    const dispose = h.ctx.mcp.addAcpServers(
      [
        {
          name: 'editor',
          command: process.execPath,
          args: [changing],
          env: [{ name: 'DSH_TEST_VALUE', value: 'from-acp' }],
        },
        { command: 'nameless' },
        { type: 'http', name: 'remote', url: 'ftp://nope', headers: [] },
      ],
      { scope: h.agent.scope, cwd: process.cwd(), origin: 'session test' },
    )
    // The first request waits for the session's server: no polling here.
    expect(h.ctx.mcp.get('remote', h.agent.scope)).toMatchObject({
      state: 'invalid',
      source: 'session',
      scope: h.agent.scope,
    })
    await h.prompt('who')
    expect(h.ctx.tools.get('mcp__editor__whoami')).toBeUndefined()
    expect(h.ctx.tools.get('mcp__editor__whoami', h.agent.scope)).toBeDefined()
    const result = h.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data as ToolResultPayload)[0]
    expect(text(result)).toMatch(/^\d+ from-acp$/)
    dispose()
    expect(h.ctx.tools.get('mcp__editor__whoami', h.agent.scope)).toBeUndefined()
    expect(h.ctx.mcp.list()).toEqual([])
  })
})
