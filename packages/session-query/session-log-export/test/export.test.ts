// The export against the real `dsh web` (HTTP, no browser): the ZIP of a finished session holds
// its log line for line and its pasted image; a running session exports a consistent prefix and
// says it was running; an unknown session is a 404; the /export command names the URL. ZIPs are
// checked with independent readers (Python's zipfile for names, unzip for contents).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { useWebApp } from '@dsh/web-testkit'
import { png } from '@dsh/attachment/test-png'
import { zip } from '../src/zip.ts'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const STEPS = [
  { text: 'Done.' },
  { events: [{ text: 'Working ' }, { delayMs: 100 }, { text: 'on it' }, { stall: true }] },
]

const web = useWebApp({ steps: STEPS as never })
let scratch: string
beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'dsh-export-test-'))
})
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

const download = async (sessionId: string) => fetch(`${web.url.replace(/\/$/, '')}/export/${sessionId}.zip`)
const unzip = (buffer: Buffer, name: string) => {
  const file = join(scratch, `${Math.random().toString(36).slice(2)}.zip`)
  writeFileSync(file, buffer)
  return {
    list: execFileSync(
      'python3',
      ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', file],
      { encoding: 'utf8' },
    )
      .trim()
      .split('\n'),
    read: (entry: string) => execFileSync('unzip', ['-p', file, entry]),
    name,
  }
}
const waitFor = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 100))
}

describe('session-log-export', () => {
  it('a finished session: the log line for line, its image, a manifest', async () => {
    const { session } = await web.call('sessions.create', { cwd: web.cwd })
    const upload = await fetch(`${web.url.replace(/\/$/, '')}/attachments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'a.png', data: png(3, 3).toString('base64') }),
    })
    const { token, attachment } = (await upload.json()) as { token: string; attachment: { id: string } }
    await web.call('sessions.prompt', { sessionId: session.sessionId, text: `look ${token}` })
    await waitFor(
      async () =>
        (await web.call('sessions.list')).sessions.find((s: any) => s.sessionId === session.sessionId)?.status ===
        'idle',
    )
    const response = await download(session.sessionId)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/zip')
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="dsh-session-${session.sessionId}.zip"`,
    )
    const archive = unzip(Buffer.from(await response.arrayBuffer()), 'finished')
    const hex = attachment.id.slice(7)
    expect(archive.list).toEqual(['manifest.json', 'session.jsonl', `attachments/${hex}.png`])
    const { events } = await web.call('sessions.history', { sessionId: session.sessionId })
    const lines = archive
      .read('session.jsonl')
      .toString('utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines).toEqual(events)
    expect(archive.read(`attachments/${hex}.png`).equals(png(3, 3))).toBe(true)
    const manifest = JSON.parse(archive.read('manifest.json').toString('utf8'))
    expect(manifest).toMatchObject({
      format: 'dsh-session-export/1',
      sessionId: session.sessionId,
      cwd: web.cwd,
      events: events.length,
      running: false,
      attachments: [{ id: attachment.id, file: `attachments/${hex}.png` }],
      missingAttachments: [],
    })
    const command = await web.call('commands.execute', { sessionId: session.sessionId, line: '/export' })
    expect(command).toMatchObject({ ok: true, output: `Session log: /export/${session.sessionId}.zip` })
  })

  it('a running session exports a consistent prefix and says it was running', async () => {
    const { session } = await web.call('sessions.create', { cwd: web.cwd })
    await web.call('sessions.prompt', { sessionId: session.sessionId, text: 'work slowly' })
    await waitFor(async () =>
      (await web.call('sessions.history', { sessionId: session.sessionId })).events.some(
        (e: any) => e.type === 'assistant/chunk',
      ),
    )
    const archive = unzip(Buffer.from(await (await download(session.sessionId)).arrayBuffer()), 'running')
    const lines = archive
      .read('session.jsonl')
      .toString('utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.map((e) => e.seq)).toEqual(lines.map((_, i) => i))
    expect(lines.some((e) => e.type === 'turn/start')).toBe(true)
    expect(lines.some((e) => e.type === 'turn/end')).toBe(false)
    const manifest = JSON.parse(archive.read('manifest.json').toString('utf8'))
    expect(manifest).toMatchObject({ running: true, events: lines.length })
    await web.call('sessions.cancel', { sessionId: session.sessionId })
  })

  it('an unknown session is a 404, a bad path is a 404 naming the route', async () => {
    const missing = await download('no-such-session')
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as { error: unknown }).error).toEqual({
      code: 'SESSION_NOT_FOUND',
      message: 'no session "no-such-session"',
    })
    const bad = await fetch(`${web.url.replace(/\/$/, '')}/export/x`)
    expect(bad.status).toBe(404)
    expect(((await bad.json()) as { error: { message: string } }).error.message).toBe('GET /export/<sessionId>.zip')
  })

  it('the ZIP writer: stored and deflated entries, UTF-8 names, an empty archive', () => {
    const archive = unzip(
      zip([
        { name: 'a.txt', data: Buffer.from('x'.repeat(1000)) },
        { name: 'ü/b.bin', data: Buffer.from([1, 2, 3]) },
      ]),
      'writer',
    )
    expect(archive.list).toEqual(['a.txt', 'ü/b.bin'])
    expect(archive.read('a.txt').toString()).toBe('x'.repeat(1000))
    expect(zip([]).length).toBe(22)
  })
})
