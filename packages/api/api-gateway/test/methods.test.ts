// The gateway mounted on the real @dsh/webserver (port 0): method registration and unloading,
// loopback-only methods, questions over the wire, model and permission mode, commands, the host
// stream, and the idle unload of a session (resumed on the next use).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import * as DeepSeek from '@dsh/llm-deepseek'
import DurableSessions from '@dsh/session-persistence'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import UserQuestions from '@dsh/user-questions'
import PermissionPresets from '@dsh/permission-presets'
import Commands from '@dsh/commands'
import WebServer from '@dsh/webserver'
import { defineMethod } from '@dsh/web-protocol'
import MemoryStorage from '@dsh/storage'
import ApiGateway from '../src/index.ts'

vi.setConfig({ testTimeout: 30_000 })

const ENV = 'DSH_TEST_API_GATEWAY_METHODS_KEY'
const MODEL = 'deepseek-official/deepseek-v4-flash'
const cleanup: Array<() => Promise<void> | void> = []
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!()
})

const askingTool = {
  name: 'asking-tool',
  inject: ['tools', 'userQuestions'],
  apply(ctx: Context) {
    const c = ctx as unknown as {
      tools: { register(def: unknown): () => void }
      userQuestions: { ask(q: unknown, o: unknown): Promise<unknown> }
    }
    c.tools.register({
      name: 'ask',
      description: 'Asks the human.',
      parameters: { type: 'object', properties: {} },
      async execute(_args: unknown, call: { sessionId?: string; signal: AbortSignal }) {
        const outcome = await c.userQuestions.ask(
          [{ id: 'db', question: 'Which database?', options: [{ label: 'Postgres' }, { label: 'SQLite' }] }],
          { sessionId: call.sessionId, signal: call.signal },
        )
        return { content: JSON.stringify(outcome) }
      },
    })
  },
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-api-methods-'))
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function boot(steps: MockStep[], gateway: Record<string, unknown> = {}, before: Array<[unknown, unknown?]> = []) {
  const mock: MockServer = await startMockServer({ steps })
  cleanup.push(() => mock.close())
  process.env[ENV] = 'sk-test'
  const home = tempDir()
  const harness: Harness = await createHarness({
    plugins: [
      [DeepSeek, { baseURL: mock.baseURL, apiKeyEnv: ENV }],
      [JsonlPersistence, { root: join(home, 'sessions'), fsync: false, batchWindowMs: 1 }],
      [DurableSessions, {}],
      [UserQuestions, {}],
      [PermissionPresets, { env: '' }],
      [Commands, {}],
      [askingTool],
      ...before,
      [WebServer, { port: 0 }],
      [ApiGateway, { metaFile: join(home, 'web', 'sessions.json'), heartbeatMs: 0, ...gateway }],
    ] as never,
  })
  cleanup.push(() => harness.dispose())
  const ctx = harness.ctx as Context & { api: ApiGateway; webServer: WebServer }
  const url = ctx.webServer.url
  const post = async (method: string, params: unknown) => {
    const res = await fetch(`${url}/api/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: url },
      body: JSON.stringify(params),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  const call = async (method: string, params: unknown) => {
    const { status, body } = await post(method, params)
    if (status !== 200) throw new Error(`${method}: ${status} ${JSON.stringify(body)}`)
    return body.result
  }
  return { harness, ctx, url, post, call, cwd: tempDir() }
}

/** Reads an SSE stream with fetch until `done(frames)`; returns the parsed data frames. */
async function readStream(
  url: string,
  done: (frames: Array<{ event: string; data: any; id?: number }>) => boolean,
  onOpen?: () => Promise<void>,
) {
  const abort = new AbortController()
  cleanup.push(() => abort.abort())
  const res = await fetch(url, { signal: abort.signal })
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  const frames: Array<{ event: string; data: any; id?: number }> = []
  let buffer = ''
  let opened = false
  while (!done(frames)) {
    const { value, done: end } = await reader.read()
    if (end) break
    buffer += value
    let cut: number
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 2)
      const frame: { event: string; data: any; id?: number } = { event: 'message', data: undefined }
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) frame.id = Number(line.slice(4))
        if (line.startsWith('event: ')) frame.event = line.slice(7)
        if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6))
      }
      if (frame.data !== undefined) frames.push(frame)
    }
    if (!opened && frames.length > 0 && onOpen) {
      opened = true
      void onOpen().catch((error) => frames.push({ event: 'test-error', data: String(error) }))
    }
  }
  abort.abort()
  return frames
}

describe('api-gateway on ctx.webServer', () => {
  it('a registered method is served, validated, refused to non-loopback callers when loopbackOnly, and gone after unload', async () => {
    const { harness, ctx, post } = await boot([])
    const echo = defineMethod('demo.echo', {
      params: Schema.object({ word: Schema.string().required() }),
      result: Schema.object({ word: Schema.string() }),
      loopbackOnly: true,
    })
    const fiber = await harness.mount({
      name: 'demo',
      inject: ['api'],
      apply: (c: Context) =>
        void (c as any).api.register(echo, (p: { word: string }) => ({ word: p.word.toUpperCase() })),
    } as never)
    expect(await post('demo.echo', { word: 'hi' })).toEqual({ status: 200, body: { result: { word: 'HI' } } })
    expect(await post('demo.echo', {})).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', field: 'word' } },
    })
    await expect(
      ctx.api.call('demo.echo', { word: 'x' }, { loopback: false, signal: new AbortController().signal }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN', status: 403 })
    expect(() => ctx.api.register(echo, () => ({ word: '' }))).toThrow(/already registered/)
    await fiber.dispose()
    expect(await post('demo.echo', { word: 'hi' })).toMatchObject({
      status: 404,
      body: { error: { code: 'UNKNOWN_METHOD' } },
    })
  })

  it('a question is answered over the wire', async () => {
    const { url, call, post, cwd } = await boot([
      { toolCalls: [{ name: 'ask', arguments: {} }] },
      { text: 'using Postgres' },
    ])
    const { session } = await call('sessions.create', { cwd, model: MODEL })
    let answered: Promise<unknown> | undefined
    const frames = await readStream(
      `${url}/api/events/session/${session.sessionId}`,
      (f) => {
        const question = f.find((x) => x.event === 'question')
        if (question && !answered) {
          expect(question.data.questions).toEqual([
            { id: 'db', question: 'Which database?', options: [{ label: 'Postgres' }, { label: 'SQLite' }] },
          ])
          answered = (async () => {
            expect(await post('questions.respond', { requestId: 'nope', answers: {} })).toMatchObject({
              status: 404,
              body: { error: { code: 'REQUEST_NOT_FOUND', field: 'requestId' } },
            })
            return call('questions.respond', {
              requestId: question.data.requestId,
              answers: { db: { selected: ['Postgres'] } },
            })
          })()
        }
        return f.some((x) => x.data?.type === 'turn/end')
      },
      async () => {
        await call('sessions.prompt', { sessionId: session.sessionId, text: 'pick a db' })
      },
    )
    expect(await answered).toEqual({})
    expect(frames.find((x) => x.event === 'question/resolved')!.data.status).toBe('answered')
    const result = frames.find((x) => x.data?.type === 'tool/result')!
    expect(JSON.stringify(result.data.data)).toContain('Postgres')
    expect(frames.find((x) => x.data?.type === 'turn/end')!.data.data.reason).toBe('completed')
  })

  it('setModel, setPermissionMode and commands act on the session', async () => {
    const { call, post, cwd } = await boot([])
    const { session } = await call('sessions.create', { cwd, model: MODEL })
    const id = session.sessionId
    expect(session).toMatchObject({
      status: 'idle',
      model: { provider: 'deepseek-official', model: 'deepseek-v4-flash' },
      permissionMode: 'workspace-write',
    })
    expect(await call('sessions.setModel', { sessionId: id, model: MODEL, reasoningEffort: 'high' })).toEqual({
      model: { provider: 'deepseek-official', model: 'deepseek-v4-flash', reasoningEffort: 'high' },
    })
    expect(await post('sessions.setModel', { sessionId: id, model: MODEL, reasoningEffort: 'huge' })).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', field: 'reasoningEffort' } },
    })
    expect(await call('sessions.setPermissionMode', { sessionId: id, mode: 'read-only' })).toEqual({
      mode: 'read-only',
    })
    const bad = await post('sessions.setPermissionMode', { sessionId: id, mode: 'yolo' })
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'INVALID_PARAMS', field: 'mode' } } })
    expect(bad.body.error.message).toContain('read-only')
    const listed = (await call('sessions.list', { cwd })).sessions[0]
    expect(listed).toMatchObject({ sessionId: id, permissionMode: 'read-only', model: { reasoningEffort: 'high' } })
    expect((await call('commands.list', {})).commands.map((c: { name: string }) => c.name)).toContain('help')
    expect(await call('commands.execute', { sessionId: id, line: '/help' })).toMatchObject({
      ok: true,
      name: 'help',
      output: expect.stringContaining('/help'),
    })
    expect(await call('commands.execute', { sessionId: id, line: '/nope' })).toMatchObject({
      ok: false,
      error: { code: 'UNKNOWN_COMMAND' },
    })
    expect(await post('commands.execute', { sessionId: id, line: 'plain text' })).toMatchObject({
      status: 400,
      body: { error: { field: 'line' } },
    })
    expect(await call('llm.providers', {})).toMatchObject({ providers: expect.arrayContaining(['deepseek-official']) })
    expect(
      (await call('llm.models', { provider: 'deepseek-official' })).models.map((m: { id: string }) => m.id),
    ).toContain('deepseek-v4-flash')
    expect(await post('llm.models', { provider: 'nope' })).toMatchObject({
      status: 400,
      body: { error: { field: 'provider' } },
    })
  })

  it('the host stream reports added and status; an idle session is unloaded and resumes on the next prompt', async () => {
    const { harness, url, call, cwd } = await boot([{ text: 'one' }, { text: 'two' }], { idleMs: 20 })
    let id = ''
    const frames = await readStream(
      `${url}/api/events/host`,
      (f) =>
        f.some((x) => x.event === 'test-error') ||
        (f.findLastIndex((x) => x.data.status === 'stored') > f.findIndex((x) => x.data.status === 'idle') &&
          f.some((x) => x.data.status === 'idle')),
      async () => {
        id = (await call('sessions.create', { cwd, model: MODEL, title: 'kept' })).session.sessionId
        // A connected stream client keeps the session loaded; it unloads once the client leaves.
        await readStream(
          `${url}/api/events/session/${id}`,
          (f) => f.some((x) => x.data?.type === 'turn/end'),
          async () => {
            await call('sessions.prompt', { sessionId: id, text: 'first' })
          },
        )
      },
    )
    const types = frames.map((f) => `${f.data.type}${f.data.status ? ':' + f.data.status : ''}`)
    // (On a slow machine the new session may also unload between create and the stream opening.)
    expect(types.slice(0, 2)).toEqual(['hello', 'session/added'])
    expect(types.slice(-3)).toEqual(['session/status:running', 'session/status:idle', 'session/status:stored'])
    expect(harness.ctx.sessions.get(id)).toBeUndefined()
    expect((await call('sessions.list', { cwd })).sessions[0]).toMatchObject({
      sessionId: id,
      status: 'stored',
      turns: 1,
    })
    await call('sessions.prompt', { sessionId: id, text: 'second' })
    const history = await readStream(
      `${url}/api/events/session/${id}`,
      (f) => f.filter((x) => x.data?.type === 'turn/end').length === 2,
    )
    expect(history.filter((f) => f.data.type === 'user/message').map((f) => f.data.data.content[0].text)).toEqual([
      'first',
      'second',
    ])
  })

  it('an idle session that a plugin keeps alive (session/keep-alive) stays loaded until it lets go', async () => {
    const { harness, call, cwd } = await boot([{ text: 'one' }], { idleMs: 20 })
    let keep: string | undefined = 'a pending reminder'
    let asked = 0
    harness.ctx.on('session/keep-alive', () => (asked++, keep))
    const id = (await call('sessions.create', { cwd, model: MODEL })).session.sessionId
    await call('sessions.prompt', { sessionId: id, text: 'first' })
    while (asked < 3) await new Promise((r) => setTimeout(r, 20))
    expect(harness.ctx.sessions.get(id)).toBeDefined()
    keep = undefined
    while (harness.ctx.sessions.get(id)) await new Promise((r) => setTimeout(r, 20))
    expect((await call('sessions.list', { cwd })).sessions[0]).toMatchObject({ sessionId: id, status: 'stored' })
  })

  it('sessions.fork copies the log before a turn; a stream ahead of the log gets resync', async () => {
    const { url, call, post, cwd } = await boot([{ text: 'one' }, { text: 'two' }])
    const { session } = await call('sessions.create', { cwd, model: MODEL })
    const id = session.sessionId
    const source = await readStream(
      `${url}/api/events/session/${id}`,
      (f) => f.filter((x) => x.data?.type === 'turn/end').length === 2,
      async () => {
        await call('sessions.prompt', { sessionId: id, text: 'first' })
        await call('sessions.prompt', { sessionId: id, text: 'second' })
      },
    )
    const turnOne = source.find((x) => x.data?.type === 'turn/start' && x.data.data.turn === 1)!.id!
    const { session: fork } = await call('sessions.fork', { sessionId: id, beforeTurn: 1 })
    expect(fork).toMatchObject({ cwd, turns: 1, status: 'idle' })
    const events = (await call('sessions.history', { sessionId: fork.sessionId })).events
    expect(events.slice(0, -1)).toEqual(source.filter((x) => x.id !== undefined && x.id < turnOne).map((x) => x.data))
    expect(events.at(-1)).toMatchObject({ type: 'seed/end', data: { fromSession: id, boundary: turnOne } })
    expect(await post('sessions.fork', { sessionId: id, beforeTurn: 7 })).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', field: 'beforeTurn' } },
    })
    const ahead = await readStream(`${url}/api/events/session/${id}?after=999`, (f) =>
      f.some((x) => x.event === 'resync'),
    )
    expect(ahead.map((x) => x.event)).toEqual(['resync'])
    const bad = await fetch(`${url}/api/events/session/${id}?after=soon`)
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { code: 'INVALID_PARAMS', field: 'after' } })
  })

  it('with ctx.storage mounted (and no metaFile) session metadata lives in the web-sessions domain', async () => {
    const { ctx, call, cwd } = await boot([], { metaFile: undefined }, [[MemoryStorage, {}]])
    const { session } = await call('sessions.create', { cwd, model: MODEL })
    await call('sessions.archive', { sessionId: session.sessionId })
    await call('sessions.setPermissionMode', { sessionId: session.sessionId, mode: 'read-only' })
    const storage = (
      ctx as unknown as { storage: { domain(name: string, schema: unknown): { get(key: string): Promise<unknown> } } }
    ).storage
    expect(await storage.domain('web-sessions', Schema.any()).get(session.sessionId)).toMatchObject({
      archived: true,
      permissionMode: 'read-only',
      model: { provider: 'deepseek-official' },
    })
  })
})
