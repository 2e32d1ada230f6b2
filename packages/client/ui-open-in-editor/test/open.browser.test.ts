// The sidebar's per-workspace "Open in editor" action in real Chromium against the real `dsh web`
// (web bundle rows open-in-editor + ui-open-in-editor). $VISUAL is a real editor stand-in script
// that appends its working directory and arguments to a file; the host starts it through the
// subprocess seam. The host listens on all addresses (with an access secret), so the same app
// also gets a call from a non-loopback address, which `host.openPath` refuses.
import { request } from 'node:http'
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  hasChromium,
  launchBrowser,
  startWebApp,
  withArtifacts,
  type Browser,
  type BrowserContext,
  type Page,
  type WebApp,
} from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const SECRET = 'open-in-editor-test-secret-0123'
const outside = Object.values(networkInterfaces())
  .flatMap((list) => list ?? [])
  .find((a) => a.family === 'IPv4' && !a.internal)?.address

/** One HTTP call to the app from `from`'s address, as a program (no Origin), with `cookie`. */
function post(
  app: WebApp,
  address: string,
  path: string,
  body: unknown,
  cookie?: string,
): Promise<{ status: number; body: any; cookie?: string }> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body)
    const req = request(
      {
        host: address,
        port: app.port,
        path,
        method: 'POST',
        headers: {
          host: `${address}:${app.port}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(data),
          ...(cookie ? { cookie } : {}),
        },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8').on('data', (d: string) => (text += d))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: text ? JSON.parse(text) : undefined,
            cookie: res.headers['set-cookie']?.[0]?.split(';')[0],
          }),
        )
      },
    )
    req.on('error', reject)
    req.end(data)
  })
}

async function login(app: WebApp, address: string): Promise<string> {
  const res = await post(app, address, '/auth/login', { secret: SECRET })
  if (res.status !== 200 || !res.cookie) throw new Error(`login from ${address}: ${res.status}`)
  return res.cookie
}

describe.skipIf(!hasChromium())('ui-open-in-editor in the browser', () => {
  let dir: string
  let record: string
  let app: WebApp
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let project: string
  let broken: string
  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-open-web-')))
    record = join(dir, 'editor.txt')
    const editor = join(dir, 'my-editor')
    writeFileSync(
      editor,
      [
        '#!/bin/sh',
        `case "$*" in *broken*) echo "cannot open display" >&2; exit 3;; esac`,
        `printf '%s|' "$PWD" >> '${record}'`,
        `for a in "$@"; do printf '%s|' "$a" >> '${record}'; done`,
        `echo >> '${record}'`,
        '',
      ].join('\n'),
    )
    chmodSync(editor, 0o755)
    project = join(dir, 'project')
    broken = join(dir, 'broken')
    mkdirSync(project)
    mkdirSync(broken)
    app = await startWebApp({
      args: ['--host', '0.0.0.0'],
      env: { DSH_ACCESS_SECRET: SECRET, VISUAL: `${editor} --new-window` },
    })
    browser = await launchBrowser()
    context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } })
    // The remote bind asks for the secret: sign the browser in (the cookie is the context's).
    await context.request.post(new URL('/auth/login', app.url).href, { data: { secret: SECRET } })
    const cookie = await login(app, '127.0.0.1')
    for (const path of [project, broken]) {
      const res = await post(app, '127.0.0.1', '/api/workspaces.create', { path }, cookie)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
    }
    page = await context.newPage()
    await page.goto(app.url)
    await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 })
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it("opens a workspace's folder in $VISUAL from the sidebar, and shows an editor's failure", async () => {
    await withArtifacts(page, 'open-in-editor', async () => {
      const action = page.locator(`[data-open-in-editor="${project}"]`)
      await action.waitFor()
      expect(await action.getAttribute('aria-label')).toBe('Open project in editor')
      await action.click()
      await expect
        .poll(() => (existsSync(record) ? readFileSync(record, 'utf8') : ''))
        .toBe(`${project}|--new-window|${project}|\n`)
      await page.locator(`[data-open-in-editor="${broken}"]`).click()
      const alert = page.locator('.dsh-open-in-editor-error[role="alert"]')
      await alert.waitFor()
      expect(await alert.textContent()).toMatch(
        /^Could not open broken: .*my-editor exited with 3: cannot open display$/,
      )
      expect(readFileSync(record, 'utf8').split('\n').filter(Boolean)).toHaveLength(1)
    })
  })

  it.skipIf(!outside)('refuses host.openPath to a caller that is not on loopback', async () => {
    const before = readFileSync(record, 'utf8')
    const cookie = await login(app, outside!)
    // The same app answers other methods to that caller (the refusal is the method's, not the login's).
    expect((await post(app, outside!, '/api/workspaces.list', {}, cookie)).status).toBe(200)
    const refused = await post(app, outside!, '/api/host.openPath', { path: project }, cookie)
    expect(refused).toMatchObject({
      status: 403,
      body: { error: { code: 'FORBIDDEN', message: 'host.openPath is only available to loopback callers' } },
    })
    // From loopback the same call opens the editor (the positive control), and only that one did.
    const local = await post(app, '127.0.0.1', '/api/host.openPath', { path: project }, await login(app, '127.0.0.1'))
    expect(local).toMatchObject({
      status: 200,
      body: { result: { path: project, editor: 'my-editor', running: false } },
    })
    expect(readFileSync(record, 'utf8')).toBe(`${before}${project}|--new-window|${project}|\n`)
  })

  it('says what is wrong with a bad path', async () => {
    const cookie = await login(app, '127.0.0.1')
    expect(await post(app, '127.0.0.1', '/api/host.openPath', { path: 'relative/dir' }, cookie)).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', message: 'relative/dir: not an absolute path' } },
    })
    expect(await post(app, '127.0.0.1', '/api/host.openPath', { path: join(dir, 'nope') }, cookie)).toMatchObject({
      status: 404,
      body: { error: { code: 'NOT_FOUND', message: `${join(dir, 'nope')}: no such file or directory` } },
    })
  })
})
