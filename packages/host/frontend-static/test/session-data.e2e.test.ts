// The page of a session (`/s/<id>`) carries that session's replay as a data block, for a first
// render without an events round trip, and only behind the same fence as the events API: on a
// remote bind (access secret), a caller without the login cookie gets a redirect or a 401 and no
// event of the session, in the page or from the stream. One real `dsh web` bound to 0.0.0.0 with
// the mock model.
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startWebApp, type WebApp } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const SECRET = 'session-data-test-secret-0123456789'
const ANSWER = 'The answer carried in the page.'

let app: WebApp

interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
}

function send(method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body)
    const req = request(
      {
        host: '127.0.0.1',
        port: app.port,
        path,
        method,
        headers: {
          host: `127.0.0.1:${app.port}`,
          ...(data ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)) } : {}),
          ...headers,
        },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8').on('data', (d: string) => (text += d))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
      },
    )
    req.on('error', reject)
    req.end(data)
  })
}

const block = (html: string) =>
  /<script type="application\/json" id="dsh-session">(.*?)<\/script>/s.exec(html)?.[1] as string | undefined

let cookie: string
let sessionId: string

beforeAll(async () => {
  app = await startWebApp({
    args: ['--host', '0.0.0.0'],
    env: { DSH_ACCESS_SECRET: SECRET },
    steps: [{ text: ANSWER }],
  })
  const login = await send('POST', '/auth/login', {}, { secret: SECRET })
  expect(login.status).toBe(200)
  cookie = String((login.headers['set-cookie'] as string[])[0]).split(';')[0]
  const created = await send('POST', '/api/sessions.create', { cookie }, { cwd: app.cwd })
  expect(created.status, created.text).toBe(200)
  sessionId = JSON.parse(created.text).result.session.sessionId
  const prompted = await send('POST', '/api/sessions.prompt', { cookie }, { sessionId, text: 'Answer me' })
  expect(prompted.status, prompted.text).toBe(200)
})

afterAll(async () => {
  await app?.close()
})

describe("a session's page carries its replay, behind the access gate", () => {
  it('a signed-in caller gets the log from seq 0 and the status in the page of /s/<id>', async () => {
    const page = () => send('GET', `/s/${encodeURIComponent(sessionId)}`, { cookie, accept: 'text/html' })
    // The answer lands in the log once the turn ran; the page reads the log as it is then.
    await expect.poll(async () => block((await page()).text) ?? '', { timeout: 30_000 }).toContain(ANSWER)
    const reply = await page()
    expect(reply.status).toBe(200)
    const data = JSON.parse(block(reply.text)!) as { version: number; sessionId: string; frames: [string, any][] }
    expect(data.version).toBe(1)
    expect(data.sessionId).toBe(sessionId)
    const seqs = data.frames.filter(([event]) => event === 'message').map(([, event]) => event.seq)
    expect(seqs).toEqual(seqs.map((_, i) => i))
    expect(data.frames.find(([event]) => event === 'status')?.[1].sessionId).toBe(sessionId)
    // No script runs from it: the CSP still allows scripts from this origin and by hash only.
    expect(String(reply.headers['content-security-policy'])).toMatch(/script-src 'self'( 'sha256-[^']+')*;/)
    // An unknown session and the app's root page: the page without a block.
    const unknown = await send('GET', '/s/no-such-session', { cookie, accept: 'text/html' })
    expect(unknown.status).toBe(200)
    expect(unknown.text).toContain('id="dsh-boot"')
    expect(block(unknown.text)).toBeUndefined()
    expect(block((await send('GET', '/', { cookie })).text)).toBeUndefined()
  })

  it('a caller without the login cookie gets no event of the session, from the page or the stream', async () => {
    const path = `/s/${encodeURIComponent(sessionId)}`
    // A browser page load: redirected to the sign-in form.
    const browser = await send('GET', path, { accept: 'text/html' })
    expect(browser.status).toBe(303)
    expect(browser.headers.location).toMatch(/^\/auth\/login/)
    // A forged cookie and a program: 401, and none of the log.
    const forged = await send('GET', path, { cookie: 'dsh_access=forged', accept: 'text/html' })
    const program = await send('GET', path)
    const stream = await send('GET', `/api/events/session/${encodeURIComponent(sessionId)}`)
    for (const reply of [browser, forged, program, stream]) {
      expect(reply.text).not.toContain(ANSWER)
      expect(reply.text).not.toContain('dsh-session')
    }
    expect([forged.status, program.status, stream.status]).toEqual([303, 401, 401])
  })
})
