// The real dsh-jsonrpc-agent in a subprocess, spoken to frame by frame (no client library), with
// the DeepSeek adapter pointed at @dsh/llm-mock-server.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

// Each test boots whole dsh processes; on a loaded 2-core runner that can take a while.
vi.setConfig({ testTimeout: 60_000 })

const bin = fileURLToPath(new URL('../bin/dsh-jsonrpc-agent.mjs', import.meta.url))
const fixture = fileURLToPath(new URL('./fixtures/guarded-tool.ts', import.meta.url))

interface Frame {
  jsonrpc: '2.0'
  id?: number | null
  method?: string
  params?: any
  result?: any
  error?: any
}

class Raw {
  frames: Frame[] = []
  stdout = ''
  stderr = ''
  private nextId = 1
  private waiters: Array<() => void> = []
  readonly exit: Promise<number | null>

  constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8')
    child.stdout!.on('data', (d: string) => {
      this.stdout += d
      const lines = this.stdout.split('\n')
      this.stdout = lines.pop()!
      // Every stdout line must be a frame: JSON.parse throws (and fails the test) otherwise.
      for (const line of lines) this.frames.push(JSON.parse(line))
      for (const w of this.waiters.splice(0)) w()
    })
    child.stderr!.on('data', (d) => (this.stderr += d))
    this.exit = new Promise((r) =>
      child.on('close', (code) => {
        r(code)
        for (const w of this.waiters.splice(0)) w()
      }),
    )
  }

  send(line: string): void {
    this.child.stdin!.write(line + '\n')
  }

  async waitFor(pred: (f: Frame) => boolean): Promise<Frame> {
    for (;;) {
      const found = this.frames.find(pred)
      if (found) return found
      if (this.child.exitCode !== null || this.child.signalCode !== null)
        throw new Error(`server exited; stderr: ${this.stderr}`)
      await new Promise<void>((r) => this.waiters.push(r))
    }
  }

  async request(method: string, params?: unknown): Promise<Frame> {
    const id = this.nextId++
    this.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }))
    return this.waitFor((f) => f.id === id)
  }

  async ok(method: string, params?: unknown): Promise<any> {
    const frame = await this.request(method, params)
    if (frame.error) throw new Error(`${method}: ${JSON.stringify(frame.error)}`)
    return frame.result
  }

  notifications(method: string, sessionId?: string): Frame[] {
    return this.frames.filter(
      (f) => f.method === method && (sessionId === undefined || f.params.sessionId === sessionId),
    )
  }
}

let mock: MockServer | undefined
const children: ChildProcess[] = []
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL')
  await mock?.close()
  mock = undefined
})

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-sdk-server-'))
  return { home: join(root, 'home'), cwd: root }
}

async function serve(
  steps: unknown[],
  opts: { ws?: ReturnType<typeof workspace>; args?: string[]; env?: Record<string, string> } = {},
) {
  const ws = opts.ws ?? workspace()
  mock ??= await startMockServer({ steps: steps as never })
  const child = spawn(process.execPath, [bin, ...(opts.args ?? [])], {
    cwd: ws.cwd,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DSH_HOME: ws.home,
      DEEPSEEK_BASE_URL: mock.baseURL,
      DEEPSEEK_API_KEY: 'sk-test',
      ...opts.env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  children.push(child)
  return { raw: new Raw(child), ws }
}

/** `--patch FILE` arguments adding the guarded-tool fixture to the default composition. */
function configWithFixture(dir: string): string[] {
  const file = join(dir, 'fixture.patch.yml')
  writeFileSync(file, `- insert:\n    - id: guarded-tool\n      name: ${JSON.stringify(fixture)}\n`)
  return ['--patch', file]
}

const init = (raw: Raw) => raw.ok('initialize', { protocolVersion: 1 })

/** `--patch FILE` arguments storing session logs as plain JSONL, so tests can read them. */
function plainLogs(dir: string): string[] {
  const file = join(dir, 'plain-log.patch.yml')
  writeFileSync(file, '- id: session-persistence-jsonl\n  config:\n    compression: none\n')
  return ['--patch', file]
}

function sessionDir(home: string, id: string): string {
  const root = join(home, 'sessions')
  const key = readdirSync(root).find((k) => existsSync(join(root, k, id)))
  return join(root, key!, id)
}

describe('dsh-jsonrpc-agent: protocol edges', () => {
  it('initialize gates the methods, checks the version, and malformed frames get JSON-RPC errors', async () => {
    const { raw } = await serve([])
    expect((await raw.request('session/list', {})).error).toMatchObject({
      code: -32002,
      data: { code: 'NOT_INITIALIZED' },
    })
    expect((await raw.request('initialize', { protocolVersion: 99 })).error).toMatchObject({
      data: { code: 'PROTOCOL_VERSION_MISMATCH', supported: [1] },
    })
    expect((await raw.request('initialize', {})).error).toMatchObject({ data: { code: 'PROTOCOL_VERSION_MISMATCH' } })
    const info = await init(raw)
    expect(info).toMatchObject({
      protocolVersion: 1,
      serverInfo: { name: 'dsh-jsonrpc-agent' },
      capabilities: { persistence: true, approval: true },
    })

    raw.send('{this is not json')
    expect(await raw.waitFor((f) => f.id === null && f.error?.code === -32700)).toMatchObject({
      error: { data: { code: 'PARSE_ERROR' } },
    })
    raw.send('[{"jsonrpc":"2.0","id":50,"method":"session/list"}]')
    await raw.waitFor((f) => f.id === null && f.error?.code === -32600)
    expect((await raw.request('session/frobnicate', {})).error).toMatchObject({
      code: -32601,
      data: { code: 'METHOD_NOT_FOUND' },
    })
    expect((await raw.request('session/create', { cwd: 'relative/dir' })).error).toMatchObject({
      code: -32602,
      data: { code: 'INVALID_PARAMS', field: 'cwd' },
    })
    expect((await raw.request('session/create', 'nope')).error).toMatchObject({ data: { code: 'INVALID_REQUEST' } })
    expect((await raw.request('session/prompt', { sessionId: 'missing', prompt: 'x' })).error).toMatchObject({
      data: { code: 'SESSION_NOT_FOUND', sessionId: 'missing' },
    })
    expect((await raw.request('session/history', { sessionId: 'missing' })).error).toMatchObject({
      data: { code: 'SESSION_NOT_FOUND' },
    })
    expect((await raw.request('approval/respond', { requestId: 'r1', decision: 'allowed-once' })).error).toMatchObject({
      data: { code: 'APPROVAL_NOT_FOUND' },
    })
    expect((await raw.request('approval/respond', { requestId: 'r1', decision: 'yes' })).error).toMatchObject({
      data: { code: 'INVALID_PARAMS', field: 'decision' },
    })
    // Still serving after all of that; shutdown answers, then the process exits 0.
    expect(await raw.ok('session/list', {})).toEqual({ sessions: [] })
    expect(await raw.ok('shutdown', {})).toEqual({})
    expect(await raw.exit).toBe(0)
  })

  it('prompt answers with the turn after its turn/start; events carry contiguous seq; BUSY while running', async () => {
    const { raw, ws } = await serve([{ events: [{ text: 'hel' }, { delayMs: 100 }, { text: 'lo' }] }])
    await init(raw)
    const { sessionId } = await raw.ok('session/create', { cwd: ws.cwd })
    const promptId = 100
    raw.send(
      JSON.stringify({ jsonrpc: '2.0', id: promptId, method: 'session/prompt', params: { sessionId, prompt: 'hi' } }),
    )
    const response = await raw.waitFor((f) => f.id === promptId)
    expect(response.result).toEqual({ turn: 0 })
    const at = raw.frames.indexOf(response)
    const turnStart = raw.frames.findIndex((f) => f.method === 'session/event' && f.params.event.type === 'turn/start')
    expect(turnStart).toBeGreaterThanOrEqual(0)
    expect(turnStart).toBeLessThan(at)
    expect((await raw.request('session/prompt', { sessionId, prompt: 'again' })).error).toMatchObject({
      data: { code: 'BUSY', sessionId, turn: 0 },
    })
    const idle = await raw.waitFor((f) => f.method === 'session/status' && f.params.status === 'idle')
    expect(idle.params).toMatchObject({ sessionId, turn: 0, result: { turn: 0, reason: 'completed', text: 'hello' } })
    const statuses = raw.notifications('session/status', sessionId).map((f) => f.params.status)
    expect(statuses).toEqual(['running', 'idle'])
    const events = raw.notifications('session/event', sessionId).map((f) => f.params.event)
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    expect(events.at(-1).type).toBe('turn/end')
    // The idle status follows the last event of the turn.
    expect(raw.frames.indexOf(idle)).toBeGreaterThan(raw.frames.findIndex((f) => f.params?.event?.type === 'turn/end'))
    const history = await raw.ok('session/history', { sessionId, fromSeq: 2, limit: 3 })
    expect(history.events).toEqual(events.slice(2, 5))
    expect(history.nextSeq).toBe(5)
    expect((await raw.ok('session/list', {})).sessions).toEqual([
      expect.objectContaining({ sessionId, live: true, status: 'idle', turns: 1 }),
    ])
    raw.child.stdin!.end()
    expect(await raw.exit).toBe(0)
  })

  it('subagent/started and subagent/finished follow the session/event frame of the logged event they describe', async () => {
    const { raw, ws } = await serve([
      { toolCalls: [{ name: 'subagent', arguments: { description: 'look around', prompt: 'list files' } }] },
      { text: 'two files' },
      { text: 'done' },
    ])
    await init(raw)
    const { sessionId } = await raw.ok('session/create', { cwd: ws.cwd })
    await raw.ok('session/prompt', { sessionId, prompt: 'delegate' })
    await raw.waitFor((f) => f.method === 'session/status' && f.params.status === 'idle')
    for (const type of ['subagent/started', 'subagent/finished']) {
      const logged = raw.frames.findIndex(
        (f) => f.method === 'session/event' && f.params.sessionId === sessionId && f.params.event.type === type,
      )
      const notified = raw.frames.findIndex((f) => f.method === type)
      expect(logged).toBeGreaterThanOrEqual(0)
      expect(notified).toBe(logged + 1)
    }
    const [started] = raw.notifications('subagent/started', sessionId)
    const [finished] = raw.notifications('subagent/finished', sessionId)
    expect(started.params).toMatchObject({
      parentSessionId: sessionId,
      id: 'sub-1',
      provider: 'spawn',
      description: 'look around',
      status: 'running',
      depth: 1,
      background: false,
    })
    expect(started.params.callId).toEqual(expect.any(String))
    expect(finished.params).toMatchObject({
      id: 'sub-1',
      provider: 'spawn',
      description: 'look around',
      status: 'completed',
      text: 'two files',
      childSessionId: started.params.childSessionId,
    })
    expect(raw.notifications('subagent/started')).toHaveLength(1)
  })

  it('exits when stdin closes, even mid-turn, and the interrupted log reloads in a new process', async () => {
    const ws = workspace()
    const { raw } = await serve([{ events: [{ text: 'partial' }, { stall: true }] }], { ws })
    await init(raw)
    const { sessionId } = await raw.ok('session/create', { cwd: ws.cwd })
    await raw.ok('session/prompt', { sessionId, prompt: 'go' })
    await raw.waitFor((f) => f.params?.event?.type === 'assistant/chunk')
    raw.child.stdin!.end()
    expect(await raw.exit).toBe(0)

    const next = await serve([], { ws })
    await init(next.raw)
    const stored = await next.raw.ok('session/history', { sessionId })
    expect(stored.events.map((e: any) => e.type)).toContain('turn/start')
    const resumed = await next.raw.ok('session/resume', { sessionId })
    expect(resumed).toMatchObject({ sessionId, cwd: ws.cwd, loaded: true, model: { provider: 'deepseek-official' } })
    const history = await next.raw.ok('session/history', { sessionId })
    expect(history.events.at(-1)).toMatchObject({ type: 'turn/end' })
    expect(await next.raw.ok('session/resume', { sessionId })).toMatchObject({ loaded: false })
    expect((await next.raw.request('session/resume', { sessionId: 'nope' })).error).toMatchObject({
      data: { code: 'SESSION_NOT_FOUND' },
    })
  })

  it('a clean exit (end of stdin) removes the writer lock of every session it wrote', async () => {
    const ws = workspace()
    const { raw } = await serve([{ text: 'done' }], { ws, args: plainLogs(ws.cwd) })
    await init(raw)
    const { sessionId } = await raw.ok('session/create', { cwd: ws.cwd })
    await raw.ok('session/prompt', { sessionId, prompt: 'go' })
    await raw.waitFor(
      (f) => f.method === 'session/status' && f.params.status === 'idle' && f.params.sessionId === sessionId,
    )
    raw.child.stdin!.end()
    expect(await raw.exit).toBe(0)
    const dir = sessionDir(ws.home, sessionId)
    expect(existsSync(join(dir, 'session.jsonl'))).toBe(true)
    expect(existsSync(join(dir, 'writer.lock'))).toBe(false)
  })

  for (const [signal, status] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal} mid-turn exits ${status} with the cancelled turn end logged and no lock left`, async () => {
      const ws = workspace()
      const { raw } = await serve([{ events: [{ text: 'partial' }, { stall: true }] }], { ws, args: plainLogs(ws.cwd) })
      await init(raw)
      const { sessionId } = await raw.ok('session/create', { cwd: ws.cwd })
      await raw.ok('session/prompt', { sessionId, prompt: 'go' })
      await raw.waitFor((f) => f.params?.event?.type === 'assistant/chunk')
      raw.child.kill(signal)
      expect(await raw.exit).toBe(status)
      expect(raw.stderr).not.toMatch(/inactive context|\n\s+at /)
      const dir = sessionDir(ws.home, sessionId)
      const log = readFileSync(join(dir, 'session.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
      expect(log.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 0, reason: 'cancelled' } })
      expect(existsSync(join(dir, 'writer.lock'))).toBe(false)
    })
  }

  it('the bin: --help, usage errors, a bad CONFIG file, --dump-config', async () => {
    const run = (args: string[], env: Record<string, string> = {}) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(process.execPath, [bin, ...args], {
          env: { PATH: process.env.PATH, DSH_HOME: workspace().home, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        })
        let out = ''
        let err = ''
        child.stdout.on('data', (d) => (out += d))
        child.stderr.on('data', (d) => (err += d))
        child.on('close', (code) => resolve({ code, out, err }))
      })
    const help = await run(['--help'])
    expect(help).toMatchObject({ code: 0 })
    expect(help.out).toContain('DSH_CORDIS_CONFIG')
    expect(await run(['--frob'])).toMatchObject({ code: 2, err: expect.stringContaining('unknown option --frob') })
    const missing = await run(['/nonexistent/cordis.yml'])
    expect(missing.code).toBe(1)
    expect(missing.err).toContain('/nonexistent/cordis.yml')
    const dump = await run(['--dump-config'])
    expect(dump.code).toBe(0)
    expect(dump.out).toContain('@dsh/sdk-server')
    expect(dump.out).toContain('@dsh/agent-loop')
    const dir = mkdtempSync(join(tmpdir(), 'dsh-sdk-cfg-'))
    const bad = join(dir, 'bad.yml')
    writeFileSync(bad, '- insert:\n    - id: x\n      name: "@dsh/does-not-exist"\n')
    const failed = await run([], { DSH_CORDIS_CONFIG: bad })
    expect(failed.code).toBe(1)
    expect(failed.err).toContain('row x')
  })
})

describe('dsh-jsonrpc-agent: approvals', () => {
  it('forwards approval requests, resolves them from approval/respond, and keeps stray prints off stdout', async () => {
    const ws = workspace()
    const config = configWithFixture(ws.cwd)
    const { raw } = await serve(
      [{ toolCalls: [{ name: 'guarded', arguments: { what: 'deploy' } }] }, { text: 'Deployed.' }],
      { ws, args: config },
    )
    await init(raw)
    const { sessionId } = await raw.ok('session/create', { cwd: ws.cwd })
    await raw.ok('session/prompt', { sessionId, prompt: 'deploy it' })
    const asked = await raw.waitFor((f) => f.method === 'approval/requested')
    expect(asked.params).toMatchObject({
      sessionId,
      request: {
        kind: 'tool',
        title: 'guarded: deploy',
        action: { what: 'deploy' },
        options: ['allowed-once', 'rejected'],
      },
    })
    await raw.waitFor((f) => f.method === 'session/status' && f.params.status === 'waiting-approval')
    expect(
      (await raw.request('approval/respond', { requestId: asked.params.requestId, decision: 'allowed-always' })).result,
    ).toEqual({})
    const idle = await raw.waitFor((f) => f.method === 'session/status' && f.params.status === 'idle')
    expect(idle.params.result).toMatchObject({ reason: 'completed', text: 'Deployed.' })
    // allowed-always was not offered: the approval service turns it into a rejection.
    const toolResult = raw.notifications('session/event', sessionId).find((f) => f.params.event.type === 'tool/result')!
    expect(JSON.stringify(toolResult.params.event.data)).toContain('decision: rejected')
    expect(raw.notifications('session/status', sessionId).map((f) => f.params.status)).toEqual([
      'running',
      'waiting-approval',
      'running',
      'idle',
    ])
    expect(raw.stderr).toContain('fixture: a stray print')
    expect(
      (await raw.request('approval/respond', { requestId: asked.params.requestId, decision: 'allowed-once' })).error,
    ).toMatchObject({ data: { code: 'APPROVAL_NOT_FOUND' } })
  })

  it('an allowed-once answer lets the tool run; a disconnect while waiting fails closed', async () => {
    const ws = workspace()
    const config = configWithFixture(ws.cwd)
    const { raw } = await serve(
      [
        { toolCalls: [{ name: 'guarded', arguments: { what: 'first' } }] },
        { text: 'ok' },
        { toolCalls: [{ name: 'guarded', arguments: { what: 'second' } }] },
        { text: 'never reached' },
      ],
      { ws, args: config },
    )
    await init(raw)
    const { sessionId } = await raw.ok('session/create', { cwd: ws.cwd })
    await raw.ok('session/prompt', { sessionId, prompt: 'one' })
    const first = await raw.waitFor((f) => f.method === 'approval/requested')
    await raw.ok('approval/respond', { requestId: first.params.requestId, decision: 'allowed-once' })
    await raw.waitFor((f) => f.method === 'session/status' && f.params.status === 'idle')
    const results = () =>
      raw
        .notifications('session/event', sessionId)
        .filter((f) => f.params.event.type === 'tool/result')
        .map((f) => JSON.stringify(f.params.event.data))
    expect(results()[0]).toContain('decision: allowed-once')

    await raw.ok('session/prompt', { sessionId, prompt: 'two' })
    await raw.waitFor((f) => f.method === 'approval/requested' && f.params.requestId !== first.params.requestId)
    raw.child.stdin!.end()
    expect(await raw.exit).toBe(0)
    // The stored log shows the second call was not approved.
    const next = await serve([], { ws, args: config })
    await init(next.raw)
    const stored = await next.raw.ok('session/history', { sessionId })
    const second = stored.events.filter((e: any) => e.type === 'tool/result').map((e: any) => JSON.stringify(e.data))[1]
    expect(second).toBeDefined()
    expect(second).not.toContain('allowed')
  })
})
