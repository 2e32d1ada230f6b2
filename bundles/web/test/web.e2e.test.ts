// `dsh web` end to end: the real bin, the real base + web bundles, HTTP on loopback.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DSH_BIN, runDsh } from '@dsh/cli-testkit'

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-web-'))
  const cwd = join(root, 'project')
  mkdirSync(cwd)
  return { home: join(root, 'home'), cwd }
}

/** Starts `dsh web ...`, resolves with the first stdout line and a way to signal it and wait. */
function startWeb(args: string[], env: Record<string, string>, cwd: string) {
  const child = spawn(process.execPath, [DSH_BIN, 'web', ...args], {
    cwd,
    env: { PATH: process.env.PATH!, HOME: env.DSH_HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8')
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  )
  const firstLine = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: string) => {
      stdout += d
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0])
    })
    void exited.then(() => reject(new Error(`dsh web exited before printing a URL; stderr: ${stderr}`)))
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  void exited.then(() => clearTimeout(timer))
  return { child, firstLine, exited, output: () => ({ stdout, stderr }) }
}

interface Reply {
  status: number
  body: string
  headers: import('node:http').IncomingHttpHeaders
}

function get(url: string, headers: Record<string, string> = {}, method = 'GET', body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    request(url, { method, headers: { connection: 'close', ...headers } }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (c) => (text += c))
      res.on('end', () => resolve({ status: res.statusCode!, body: text, headers: res.headers }))
    })
      .on('error', reject)
      .end(body)
  })
}

describe('dsh web (real bin)', () => {
  it('--no-open --port 0 prints the URL, answers JSON over HTTP, refuses a foreign Host, and exits 0 on SIGTERM', async () => {
    const { home, cwd } = workspace()
    const web = startWeb(['--no-open', '--port', '0'], { DSH_HOME: home }, cwd)
    const url = await web.firstLine
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    const root = await get(url)
    // Without a frontend row the answer is the webserver's 404 JSON; with one, the client page.
    if (root.status === 404) expect(JSON.parse(root.body)).toMatchObject({ error: { code: 'NOT_FOUND' } })
    else expect(root.status).toBe(200)
    const foreign = await get(url, { host: 'rebind.example' })
    expect(foreign.status).toBe(421)
    expect(JSON.parse(foreign.body).error.code).toBe('BAD_HOST')
    // An open event stream (the API gateway's host stream) is ended by the graceful stop.
    const stream = await new Promise<{ first: string; closed: Promise<void> }>((resolve, reject) => {
      request(`${url}api/events/host`, (res) => {
        const closed = new Promise<void>((done) => res.on('close', () => done()))
        res.setEncoding('utf8').once('data', (first: string) => resolve({ first, closed }))
      })
        .on('error', reject)
        .end()
    })
    expect(stream.first).toContain('data:')
    web.child.kill('SIGTERM')
    await stream.closed
    expect(await web.exited).toEqual({ code: 0, signal: null })
    expect(web.output()).toEqual({ stdout: `${url}\n`, stderr: '' })
  })

  it('serves the page while slow rows still mount; API calls made meanwhile wait for the whole app and succeed', async () => {
    const { home, cwd } = workspace()
    // A row that holds app/ready back (the loader waits for every row) until the test has read
    // the page: it waits for a marker file (at most 60 s).
    const marker = join(cwd, 'page-served')
    writeFileSync(
      join(cwd, 'slow.mjs'),
      `import { existsSync } from 'node:fs'\nexport const name = 'slow-row'\nexport async function apply() {\n  for (let i = 0; i < 6000 && !existsSync(${JSON.stringify(marker)}); i++) await new Promise((r) => setTimeout(r, 10))\n}\n`,
    )
    writeFileSync(join(cwd, 'slow.patch.yml'), '- insert:\n    - id: slow-row\n      name: ./slow.mjs\n')
    const web = startWeb(['--no-open', '--port', '0', '--patch', 'slow.patch.yml'], { DSH_HOME: home }, cwd)
    const url = await web.firstLine
    const events: string[] = []
    const api = get(`${url}api/plugins.list`, { 'content-type': 'application/json' }, 'POST', '{}').then(
      (r) => (events.push('api'), r),
    )
    const stream = get(`${url}api/events/nothing-here`).then((r) => (events.push('unknown-api-path'), r))
    const page = await get(url)
    events.push('page')
    expect(page.status).toBe(200)
    // The API call is still waiting for the slow row.
    await new Promise((r) => setTimeout(r, 100))
    expect(events).toEqual(['page'])
    writeFileSync(marker, '')
    expect(page.headers['content-type']).toMatch(/^text\/html/)
    const listed = await api
    expect(listed.status).toBe(200)
    // The API call waited for every row, so the slow one is listed active.
    const rows = JSON.parse(listed.body).result.plugins as { id: string; state: string }[]
    expect(rows.find((r) => r.id === 'slow-row')?.state).toBe('active')
    // An API path is never answered with the page, even before its route exists.
    const unknown = await stream
    expect(unknown.headers['content-type']).toMatch(/^application\/json/)
    web.child.kill('SIGTERM')
    expect(await web.exited).toEqual({ code: 0, signal: null })
  })

  it('a page loaded during the boot lists the browser halves of rows still coming up, and its hashed assets load', async () => {
    const { home, cwd } = workspace()
    const marker = join(cwd, 'go-on')
    // A built client of our own: index.html with the boot-manifest slot and one hashed asset.
    const dist = join(cwd, 'dist')
    mkdirSync(join(dist, 'assets'), { recursive: true })
    writeFileSync(
      join(dist, 'index.html'),
      '<!doctype html><title>t</title><script type="application/json" id="dsh-boot"></script><script type="module" src="/assets/app-1a2b3c4d5e.js"></script>\n',
    )
    writeFileSync(join(dist, 'assets', 'app-1a2b3c4d5e.js'), 'console.log("app")\n')
    // A plugin package with a browser half whose row is still applying while the page is asked for.
    const pkg = join(cwd, 'slow-ui')
    mkdirSync(pkg)
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name: 'slow-ui', type: 'module', exports: { '.': './index.mjs', './client': './client.js' } }),
    )
    writeFileSync(join(pkg, 'client.js'), 'export default {}\n')
    writeFileSync(
      join(pkg, 'index.mjs'),
      `import { existsSync } from 'node:fs'\nexport const name = 'slow-ui'\nexport async function apply() {\n  for (let i = 0; i < 6000 && !existsSync(${JSON.stringify(marker)}); i++) await new Promise((r) => setTimeout(r, 10))\n}\n`,
    )
    writeFileSync(
      join(cwd, 'early.patch.yml'),
      `- id: frontend-static\n  config:\n    dist: ${JSON.stringify(dist)}\n- insert:\n    - id: slow-ui\n      name: ./slow-ui/index.mjs\n`,
    )
    const web = startWeb(['--no-open', '--port', '0', '--patch', 'early.patch.yml'], { DSH_HOME: home }, cwd)
    const url = await web.firstLine
    const manifestOf = (html: string) =>
      JSON.parse(/<script type="application\/json" id="dsh-boot">(.*?)<\/script>/.exec(html)![1])
    const api = get(`${url}api/plugins.list`, { 'content-type': 'application/json' }, 'POST', '{}')
    let answered = false
    void api.then(() => (answered = true))
    const early = await get(url)
    expect(early.status).toBe(200)
    const asset = await get(`${url}assets/app-1a2b3c4d5e.js`)
    expect(asset).toMatchObject({ status: 200, body: 'console.log("app")\n' })
    expect(asset.headers['cache-control']).toContain('immutable')
    // Still booting: the row has not come up, the API call waits.
    expect(answered).toBe(false)
    const rowsNow = manifestOf(early.body).plugins.map((p: { package: string }) => p.package)
    expect(rowsNow).toContain('slow-ui')
    writeFileSync(marker, '')
    expect((await api).status).toBe(200)
    const late = await get(url)
    expect(manifestOf(late.body)).toEqual(manifestOf(early.body))
    web.child.kill('SIGTERM')
    expect(await web.exited).toEqual({ code: 0, signal: null })
  })

  it("a row failing after the page was served closes the listener and exits 1 with that row's error", async () => {
    const { home, cwd } = workspace()
    const marker = join(cwd, 'fail-now')
    writeFileSync(
      join(cwd, 'fail.mjs'),
      `import { existsSync } from 'node:fs'\nexport const name = 'fail-row'\nexport async function apply() {\n  for (let i = 0; i < 6000 && !existsSync(${JSON.stringify(marker)}); i++) await new Promise((r) => setTimeout(r, 10))\n  throw new Error('the fixture row gave up')\n}\n`,
    )
    writeFileSync(join(cwd, 'fail.patch.yml'), '- insert:\n    - id: fail-row\n      name: ./fail.mjs\n')
    const web = startWeb(['--no-open', '--port', '0', '--patch', 'fail.patch.yml'], { DSH_HOME: home }, cwd)
    const url = await web.firstLine
    expect((await get(url)).status).toBe(200)
    // An API call made during the boot ends with the connection, never with a wrong answer.
    const api = get(`${url}api/sessions.list`, { 'content-type': 'application/json' }, 'POST', '{}').then(
      (r) => r.status,
      (e: Error) => e.message,
    )
    writeFileSync(marker, '')
    expect(await web.exited).toEqual({ code: 1, signal: null })
    expect(web.output().stderr).toMatch(/^dsh: boot failed: row fail-row \(.*fail\.mjs\): .*the fixture row gave up$/m)
    expect(await api).not.toBe(200)
    await expect(get(url)).rejects.toThrow(/ECONNREFUSED/)
  })

  it('refuses a non-loopback bind without DSH_ACCESS_SECRET, a port in use, and bad flags, each with one line', async () => {
    const { home, cwd } = workspace()
    const noSecret = await runDsh(['web', '--no-open', '--host', '0.0.0.0', '--port', '0'], {
      cwd,
      env: { DSH_HOME: home },
    })
    expect(noSecret.code).toBe(1)
    expect(noSecret.stdout).toBe('')
    expect(noSecret.stderr).toBe(
      'dsh: listening on 0.0.0.0 (not loopback) needs DSH_ACCESS_SECRET set to a secret of at least 16 characters; refusing to start\n',
    )

    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as { port: number }).port
    try {
      const busy = await runDsh(['web', '--no-open', '--port', String(port)], { cwd, env: { DSH_HOME: home } })
      expect(busy.code).toBe(1)
      expect(busy.stdout).toBe('')
      expect(busy.stderr).toBe(
        `dsh: cannot listen on 127.0.0.1:${port}: the port is already in use (pick another with --port, or --port 0 for any free one)\n`,
      )
    } finally {
      blocker.close()
    }

    // A row that needs ctx.webServer (as the API gateway does) waits on the server that a usage
    // error never starts: the usage error still wins, as one line with exit 2.
    writeFileSync(
      join(cwd, 'needs-server.mjs'),
      "export const name = 'needs-server'\nexport const inject = ['webServer']\nexport function apply() {}\n",
    )
    writeFileSync(
      join(cwd, 'dependent.patch.yml'),
      '- insert:\n    - id: needs-server\n      name: ./needs-server.mjs\n',
    )
    const bad = await runDsh(['web', '--patch', 'dependent.patch.yml', '--port', 'eighty'], {
      cwd,
      env: { DSH_HOME: home },
    })
    expect(bad).toMatchObject({
      code: 2,
      stdout: '',
      stderr: "dsh: --port must be a number from 0 to 65535, not 'eighty' (see: dsh web --help)\n",
    })

    const help = await runDsh(['web', '--patch', 'dependent.patch.yml', '--help'], { cwd, env: { DSH_HOME: home } })
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^Usage: dsh web \[options\]/)
    expect(help.stderr).toBe('')
  }, 60_000) // four launches of the bin

  it('--host 0.0.0.0 with DSH_ACCESS_SECRET: requests need the login cookie; SIGINT also exits 0', async () => {
    const { home, cwd } = workspace()
    const secret = 'e2e-secret-of-enough-length'
    const web = startWeb(
      ['--no-open', '--host', '0.0.0.0', '--port', '0'],
      { DSH_HOME: home, DSH_ACCESS_SECRET: secret },
      cwd,
    )
    const url = await web.firstLine
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    const json = { 'content-type': 'application/json' }
    const anonymous = await get(`${url}api/plugins.list`, json, 'POST', '{}')
    expect(anonymous.status).toBe(401)
    expect(JSON.parse(anonymous.body).error.code).toBe('UNAUTHENTICATED')
    const wrong = await get(`${url}auth/login`, json, 'POST', JSON.stringify({ secret: 'not-the-secret-at-all' }))
    expect(wrong.status).toBe(401)
    const login = await get(`${url}auth/login`, json, 'POST', JSON.stringify({ secret }))
    expect(login.status).toBe(200)
    const cookie = String(login.headers['set-cookie']).split(';')[0]
    expect(String(login.headers['set-cookie'])).toContain('HttpOnly; SameSite=Strict')
    const listed = await get(`${url}api/plugins.list`, { ...json, cookie }, 'POST', '{}')
    expect(listed.status).toBe(200)
    web.child.kill('SIGINT')
    expect(await web.exited).toEqual({ code: 0, signal: null })
    expect(web.output().stderr).toBe('')
  })
})
