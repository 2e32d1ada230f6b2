// The telemetry modes through the real bins (`dsh -p`, `dsh web`) with @dsh/llm-mock-server as the
// model and a real OTLP/HTTP receiver (node:http, decoding the JSON the OTel exporter sends):
// off sends nothing; live streams a session's records while the host runs; feedback sends nothing
// until a like, then the replay of that session; local writes a file and opens no connection to
// the endpoint; a failing collector never fails a turn and is reported once; bad config is one line.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { DSH_BIN, runDsh } from '@dsh/cli-testkit'
import { type MockServer, startMockServer } from '@dsh/llm-mock-server'

vi.setConfig({ testTimeout: 90_000 })

const SCOPE = '@dsh/session-telemetry-otel'
const OPS_SCOPE = '@dsh/session-telemetry-otel/ops'
const KEY = 'sk-test-e2e-key-0123456789'

let root: string
let server: Server
let url: string
let connections = 0
const bodies: any[] = []
const waiters: Array<() => void> = []
const cleanup: Array<() => unknown> = []

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-otel-modes-')))
  server = createServer((req, res) => {
    let text = ''
    req
      .setEncoding('utf8')
      .on('data', (d: string) => (text += d))
      .on('end', () => {
        bodies.push(JSON.parse(text))
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
        for (const wake of waiters.splice(0)) wake()
      })
  })
  server.on('connection', () => void connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/logs`
})
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!()
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  rmSync(root, { recursive: true, force: true })
})

const value = (v: any): unknown =>
  v.stringValue ??
  (v.intValue !== undefined
    ? Number(v.intValue)
    : v.kvlistValue
      ? Object.fromEntries(v.kvlistValue.values.map((kv: any) => [kv.key, value(kv.value)]))
      : (v.doubleValue ?? v.boolValue))
function records(from = 0) {
  return bodies.slice(from).flatMap((body) =>
    body.resourceLogs.flatMap((rl: any) =>
      rl.scopeLogs.flatMap((sl: any) =>
        sl.logRecords.map((lr: any) => ({
          scope: sl.scope.name as string,
          resource: Object.fromEntries(rl.resource.attributes.map((a: any) => [a.key, value(a.value)])),
          name: lr.eventName as string,
          body: lr.body ? value(lr.body) : undefined,
          attrs: Object.fromEntries(lr.attributes.map((a: any) => [a.key, value(a.value)])) as Record<string, any>,
        })),
      ),
    ),
  )
}
type Rec = ReturnType<typeof records>[number]

/** Resolves once `test` holds for the records received (checked at each request). */
function until(test: (all: Rec[]) => boolean): Promise<Rec[]> {
  return new Promise((resolve) => {
    const check = () => {
      const all = records()
      if (test(all)) resolve(all)
      else waiters.push(check)
    }
    check()
  })
}

/** A fresh DSH_HOME and project directory, and a model that answers `answers` in order. */
async function world(name: string, answers: string[]) {
  const dir = join(root, name)
  mkdirSync(join(dir, 'work'), { recursive: true })
  const mock: MockServer = await startMockServer({ steps: answers.map((text) => ({ text })) as never })
  cleanup.push(() => mock.close())
  const home = join(dir, 'home')
  const env = (extra: Record<string, string> = {}) => ({
    DSH_HOME: home,
    HOME: home,
    DEEPSEEK_BASE_URL: mock.baseURL,
    DEEPSEEK_API_KEY: KEY,
    DSH_TELEMETRY_ENDPOINT: url,
    ...extra,
  })
  return { home, cwd: join(dir, 'work'), env, mock }
}

function startWeb(env: Record<string, string>, cwd: string) {
  const child = spawn(process.execPath, [DSH_BIN, 'web', '--no-open', '--port', '0'], {
    cwd,
    env: { PATH: process.env.PATH!, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const base = new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0].replace(/\/$/, ''))
    })
    void exited.then(() => reject(new Error(`dsh web exited before printing a URL; stderr: ${stderr}`)))
  })
  cleanup.push(async () => {
    child.kill('SIGTERM')
    await exited
  })
  const call = async (method: string, params: unknown): Promise<any> => {
    const at = await base
    const res = await fetch(`${at}/api/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: at },
      body: JSON.stringify(params),
    })
    const body = (await res.json()) as any
    if (res.status !== 200) throw new Error(`${method}: ${res.status} ${JSON.stringify(body)}`)
    return body.result
  }
  return { child, call, exited }
}

const userId = (home: string) => readFileSync(join(home, '.anonymous-user-id'), 'utf8').trim()

describe('telemetry modes through the real bins', () => {
  it('off, the default and explicit: dsh -p sends nothing and writes no telemetry file or anonymous id', async () => {
    const w = await world('off', ['first answer', 'second answer'])
    const before = connections
    for (const extra of [{}, { DSH_TELEMETRY_MODE: 'off' }] as Array<Record<string, string>>) {
      const run = await runDsh(['-p', 'quiet prompt'], { cwd: w.cwd, env: w.env(extra) })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toContain('answer')
    }
    // The app flushed and exited: nothing reached the receiver (which the live tests below reach).
    expect(connections).toBe(before)
    expect(existsSync(join(w.home, 'telemetry'))).toBe(false)
    expect(existsSync(join(w.home, '.anonymous-user-id'))).toBe(false)
  })

  it('live: dsh web sends the records of a turn while it runs, identity on the resource once per batch', async () => {
    const w = await world('live', ['the live answer', 'spare', 'spare'])
    const web = startWeb(w.env({ DSH_TELEMETRY_MODE: 'live' }), w.cwd)
    const { session } = await web.call('sessions.create', { cwd: w.cwd })
    const from = bodies.length
    await web.call('sessions.prompt', { sessionId: session.sessionId, text: 'live prompt words' })
    const all = await until((all) =>
      all.some((r) => r.name === 'dsh.turn' && r.attrs['dsh.session_id'] === session.sessionId),
    )
    // Received while the host still runs: nothing waited for an exit.
    expect(web.child.exitCode).toBeNull()
    const mine = all.filter((r) => r.attrs['dsh.session_id'] === session.sessionId)
    expect(mine.map((r) => r.name)).toEqual(['dsh.model_call', 'dsh.turn'])
    expect(mine[0].attrs).toMatchObject({ 'dsh.provider': 'deepseek-official', 'dsh.tool_calls': 0 })
    expect(mine[1].attrs).toMatchObject({ 'dsh.reason': 'completed', 'dsh.model_calls': 1 })
    const id = userId(w.home)
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    for (const r of mine) {
      expect(r.scope).toBe(SCOPE)
      expect(r.resource).toMatchObject({ 'service.name': 'dsh', 'user.id': id })
      expect(Object.keys(r.attrs).some((k) => k.includes('user.id'))).toBe(false)
    }
    for (const body of bodies.slice(from)) expect(body.resourceLogs).toHaveLength(1)
    expect(JSON.stringify(bodies.slice(from))).not.toContain('live prompt words')
  })

  it('live with content: dsh -p delivers before exit, the API key the answer echoes is redacted', async () => {
    const w = await world('content', [`the key is ${KEY} indeed`])
    const from = bodies.length
    const run = await runDsh(['-p', `prompt naming ${KEY}`], {
      cwd: w.cwd,
      env: w.env({ DSH_TELEMETRY_MODE: 'live', DSH_TELEMETRY_INCLUDE_CONTENT: '1' }),
    })
    expect(run.code, run.stderr).toBe(0)
    const raw = JSON.stringify(bodies.slice(from))
    expect(raw).toContain('the key is [REDACTED] indeed')
    expect(raw).toContain('prompt naming [REDACTED]')
    expect(raw).not.toContain(KEY)
  })

  it('feedback: dsh -p sends nothing; a like in dsh web replays that session, with the feedback', async () => {
    const w = await world('feedback', ['the answer to rate', 'spare', 'spare'])
    const env = w.env({ DSH_TELEMETRY_MODE: 'feedback' })
    const before = connections
    const run = await runDsh(['-p', 'question to rate'], { cwd: w.cwd, env })
    expect(run.code, run.stderr).toBe(0)
    expect(connections).toBe(before)
    expect(existsSync(join(w.home, '.anonymous-user-id'))).toBe(false)

    const web = startWeb(env, w.cwd)
    const { sessions } = await web.call('sessions.list', { cwd: w.cwd })
    expect(sessions).toHaveLength(1)
    const sessionId = sessions[0].sessionId as string
    // Rating needs the session loaded in the host: renaming it loads it.
    await web.call('sessions.rename', { sessionId, title: 'rated' })
    const { events } = await web.call('sessions.history', { sessionId })
    const answer = events.findLast((e: any) => e.type === 'assistant/message')
    expect(connections).toBe(before)
    const put = await web.call('messageFeedback.put', { sessionId, messageSeq: answer.seq, rating: 'like' })
    const all = await until((all) =>
      all.some((r) => r.name === 'dsh.feedback' && r.attrs['dsh.session_id'] === sessionId),
    )
    const mine = all.filter((r) => r.attrs['dsh.session_id'] === sessionId)
    expect(mine.map((r) => [r.scope, r.name])).toEqual([
      [OPS_SCOPE, 'dsh.telemetry.replay'],
      [SCOPE, 'dsh.model_call'],
      [SCOPE, 'dsh.turn'],
      [SCOPE, 'dsh.feedback'],
    ])
    expect(mine[0].attrs).toMatchObject({ 'dsh.trigger_seq': put.seq, 'dsh.from_seq': 0, 'dsh.records': 3 })
    expect(mine[2].attrs).toMatchObject({ 'dsh.reason': 'completed', 'dsh.model_calls': 1 })
    expect(mine[3].attrs).toMatchObject({
      'dsh.rating': 'like',
      'dsh.message_seq': answer.seq,
      'dsh.target': 'message',
    })
    expect(mine[3].resource['user.id']).toBe(userId(w.home))
  })

  it('local: dsh -p writes the records to $DSH_HOME/telemetry/logs.jsonl and opens no connection to the endpoint', async () => {
    const w = await world('local', ['a local answer'])
    const before = connections
    const run = await runDsh(['-p', 'local prompt'], { cwd: w.cwd, env: w.env({ DSH_TELEMETRY_MODE: 'local' }) })
    expect(run.code, run.stderr).toBe(0)
    expect(connections).toBe(before)
    const lines = readFileSync(join(w.home, 'telemetry', 'logs.jsonl'), 'utf8')
      .trim()
      .split('\n')
    const names = lines.flatMap((l) =>
      JSON.parse(l).resourceLogs.flatMap((rl: any) =>
        rl.scopeLogs.flatMap((sl: any) => sl.logRecords.map((lr: any) => [sl.scope.name, lr.eventName])),
      ),
    )
    expect(names).toEqual([
      [SCOPE, 'dsh.model_call'],
      [SCOPE, 'dsh.turn'],
    ])
    expect(existsSync(join(w.home, '.anonymous-user-id'))).toBe(false)
  })

  it('a collector answering 500 never fails the turn and is reported in one stderr line', async () => {
    let hits = 0
    const failing = createServer((req, res) => {
      req.resume().on('end', () => {
        hits++
        res.writeHead(500).end('collector down')
      })
    })
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve))
    cleanup.push(() => new Promise<void>((resolve) => failing.close(() => resolve())))
    const endpoint = `http://127.0.0.1:${(failing.address() as AddressInfo).port}/v1/logs`
    const w = await world('failing', ['still answered'])
    const run = await runDsh(['-p', 'prompt'], {
      cwd: w.cwd,
      env: w.env({ DSH_TELEMETRY_MODE: 'live', DSH_TELEMETRY_ENDPOINT: endpoint }),
    })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('still answered')
    expect(hits).toBeGreaterThan(0)
    const lines = run.stderr.split('\n').filter((l) => l.includes('telemetry'))
    expect(lines).toEqual([
      `dsh: telemetry export to ${endpoint} failed (Internal Server Error); its records are dropped and further failures are not reported`,
    ])
  })

  it('a bad mode or endpoint stops the boot with one line naming the key', async () => {
    const w = await world('bad', [])
    const mode = await runDsh(['-p', 'x'], { cwd: w.cwd, env: w.env({ DSH_TELEMETRY_MODE: 'chatty' }) })
    expect(mode.code).toBe(1)
    expect(mode.stderr).toBe(
      'dsh: boot failed: row session-telemetry-otel (@dsh/session-telemetry-otel): apply failed: session-telemetry-otel: mode must be one of off, live, feedback, local; got "chatty" (from $DSH_TELEMETRY_MODE)\n',
    )
    const endpoint = await runDsh(['-p', 'x'], {
      cwd: w.cwd,
      env: w.env({ DSH_TELEMETRY_MODE: 'live', DSH_TELEMETRY_ENDPOINT: 'collector:4318' }),
    })
    expect(endpoint.code).toBe(1)
    expect(endpoint.stderr).toMatch(
      /^dsh: boot failed: row session-telemetry-otel \(@dsh\/session-telemetry-otel\): apply failed: session-telemetry-otel: endpoint must be an http\(s\) URL such as http:\/\/127\.0\.0\.1:4318\/v1\/logs; got [^\n]+ \(from \$DSH_TELEMETRY_ENDPOINT\)\n$/,
    )
    expect(w.mock.requests).toHaveLength(0)
  })
})
