// The real `dsh web --no-open --port 0` (base + web bundles) against @dsh/llm-mock-server: a
// session prompted with a scripted bash call and a write, read over the real session stream;
// then SIGTERM, a second process on the same DSH_HOME, and the same history.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { DSH_BIN } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

vi.setConfig({ testTimeout: 90_000 })

const cleanup: Array<() => unknown> = []
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!()
})

function startWeb(env: Record<string, string>, cwd: string) {
  const child = spawn(process.execPath, [DSH_BIN, 'web', '--no-open', '--port', '0'], {
    cwd,
    env: { PATH: process.env.PATH!, HOME: env.DSH_HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8')
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: string) => {
      stdout += d
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0].replace(/\/$/, ''))
    })
    void exited.then(() => reject(new Error(`dsh web exited before printing a URL; stderr: ${stderr}`)))
  })
  cleanup.push(() => child.kill('SIGKILL'))
  return { child, url, exited, stderr: () => stderr }
}

async function raw(url: string, method: string, params: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/api/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify(params),
  })
  return { status: res.status, body: await res.json() }
}

async function call(url: string, method: string, params: unknown): Promise<any> {
  const { status, body } = await raw(url, method, params)
  if (status !== 200) throw new Error(`${method}: ${status} ${JSON.stringify(body)}`)
  return body.result
}

/** Reads a session stream until a turn/end; resolves with the log events (seq order). */
function readTurn(url: string, sessionId: string, after: number, onOpen: () => Promise<unknown>): Promise<any[]> {
  return new Promise((resolve, reject) => {
    const events: any[] = []
    let buffer = ''
    let opened = false
    const req = request(`${url}/api/events/session/${sessionId}?after=${after}`, (res) => {
      res.setEncoding('utf8').on('data', (text: string) => {
        buffer += text
        let cut: number
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          const data = block.split('\n').find((l) => l.startsWith('data: '))
          if (!opened) {
            opened = true
            onOpen().catch(reject)
          }
          if (!block.includes('\nid: ') && !block.startsWith('id: ')) continue
          const event = JSON.parse(data!.slice(6))
          events.push(event)
          if (event.type === 'turn/end') {
            req.destroy()
            resolve(events)
          }
        }
      })
    })
    req.on('error', () => {})
    req.end()
  })
}

describe('dsh web (real bin) with the api gateway', () => {
  it('runs a bash call and a write from the browser wire; history and archive survive a restart; bad calls are JSON errors', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-web-gateway-'))
    cleanup.push(() => rmSync(root, { recursive: true, force: true }))
    const home = join(root, 'home')
    const cwd = join(root, 'project')
    mkdirSync(cwd)
    const mock: MockServer = await startMockServer({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo from-bash', description: 'Say hello' } }] },
        { toolCalls: [{ name: 'write', arguments: { file_path: 'notes.txt', content: 'written over the web\n' } }] },
        { text: 'All done.' },
      ],
    })
    cleanup.push(() => mock.close())
    const env = {
      DSH_HOME: home,
      DEEPSEEK_BASE_URL: mock.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
      DSH_PERMISSION_MODE: 'danger-full-access',
    }

    const web = startWeb(env, cwd)
    const url = await web.url
    const { session } = await call(url, 'sessions.create', { cwd })
    const events = await readTurn(url, session.sessionId, -1, () =>
      call(url, 'sessions.prompt', { sessionId: session.sessionId, text: 'do the things' }),
    )
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    const types = events.map((e) => e.type)
    expect(types).toEqual(
      expect.arrayContaining(['user/message', 'assistant/chunk', 'tool/call', 'tool/result', 'turn/end']),
    )
    expect(events.filter((e) => e.type === 'tool/call').map((e) => e.data.name)).toEqual(['bash', 'write'])
    expect(JSON.stringify(events.find((e) => e.type === 'tool/result').data)).toContain('from-bash')
    expect(events.at(-1).data.reason).toBe('completed')
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('written over the web\n')
    const before = (await call(url, 'sessions.history', { sessionId: session.sessionId })).events
    expect(before).toEqual(events)
    await call(url, 'sessions.archive', { sessionId: session.sessionId })
    web.child.kill('SIGTERM')
    expect(await web.exited).toBe(0)

    const again = startWeb(env, cwd)
    const url2 = await again.url
    expect((await call(url2, 'sessions.list', { cwd })).sessions).toEqual([])
    expect((await call(url2, 'sessions.list', { cwd, includeArchived: true })).sessions).toMatchObject([
      { sessionId: session.sessionId, status: 'stored', turns: 1, archived: true },
    ])
    const refused = await raw(url2, 'sessions.prompt', { sessionId: session.sessionId, text: 'again' })
    expect(refused).toMatchObject({ status: 409, body: { error: { code: 'SESSION_ARCHIVED' } } })
    expect(await raw(url2, 'sessions.frobnicate', {})).toMatchObject({
      status: 404,
      body: { error: { code: 'UNKNOWN_METHOD' } },
    })
    expect(await raw(url2, 'sessions.history', {})).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', field: 'sessionId' } },
    })
    expect((await call(url2, 'sessions.history', { sessionId: session.sessionId })).events).toEqual(before)
    again.child.kill('SIGTERM')
    expect(await again.exited).toBe(0)
  })
})
