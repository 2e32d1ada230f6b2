// Issue #35: every response of the real `dsh web` carries X-Frame-Options DENY, nosniff, no
// referrer and a CSP that forbids framing; the page's CSP allows scripts from itself and, inline,
// only what the page really serves (its import map and boot data, by sha256). In real Chromium the
// full app (every browser half) boots and answers a prompt without a CSP violation, and a page on
// another loopback origin cannot frame it. Real bin, the mock model, Debian chromium.
import { createHash } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, launchBrowser, startWebApp, withArtifacts, type Browser, type WebApp } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 })

let app: WebApp
let browser: Browser | undefined
let other: Server | undefined

beforeAll(async () => {
  app = await startWebApp({ steps: [{ text: 'Answered under the CSP.' }] })
  if (hasChromium()) browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
  await new Promise((resolve) => (other ? other.close(resolve) : resolve(undefined)))
})

function expectSecurityHeaders(headers: Headers, what: string): void {
  expect(headers.get('x-frame-options'), what).toBe('DENY')
  expect(headers.get('x-content-type-options'), what).toBe('nosniff')
  expect(headers.get('referrer-policy'), what).toBe('no-referrer')
  const csp = headers.get('content-security-policy') ?? ''
  expect(csp, what).toContain("frame-ancestors 'none'")
  expect(csp, what).toMatch(/default-src 'none'/)
}

const directive = (csp: string, name: string) =>
  csp
    .split(';')
    .map((d) => d.trim())
    .find((d) => d.startsWith(`${name} `)) ?? ''
const sha = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`

describe('dsh web response headers', () => {
  it('every kind of response carries them: the page, modules, styles, API JSON, errors, streams', async () => {
    const page = await fetch(app.url)
    const html = await page.text()
    expectSecurityHeaders(page.headers, 'GET /')
    const csp = page.headers.get('content-security-policy')!
    // Scripts: this origin plus each inline script of the page as served, by hash; nothing else inline.
    const inline = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
      .filter((m) => !/\bsrc=/.test(m[1]))
      .map((m) => m[2])
    expect(inline.length).toBeGreaterThanOrEqual(2) // the import map and the boot manifest
    expect(html).toContain('<script type="importmap">')
    expect(directive(csp, 'script-src').split(' ').slice(1).sort()).toEqual(
      ["'self'", ...new Set(inline.map(sha))].sort(),
    )
    expect(directive(csp, 'script-src')).not.toContain('unsafe')
    expect(directive(csp, 'connect-src')).toBe("connect-src 'self'")
    expect(directive(csp, 'object-src')).toBe("object-src 'none'")

    const module = /<script type="module"[^>]*src="([^"]+)"/.exec(html)![1]
    const style = /<link rel="stylesheet"[^>]*href="([^"]+)"/.exec(html)![1]
    const shared = /"(\/shared\/[^"]+\.js)"/.exec(html)![1]
    const manifest = (await (await fetch(`${app.url}/client-manifest.json`)).json()) as {
      plugins: Array<{ url: string }>
    }
    expect(manifest.plugins.length).toBeGreaterThan(3)
    const post = (method: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${app.url}/api/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: app.url, ...headers },
        body: JSON.stringify(body),
      })
    const responses: Array<[string, () => Promise<Response>, number]> = [
      ['an ES module', () => fetch(app.url + module), 200],
      ['a shared module of the import map', () => fetch(app.url + shared), 200],
      ['a stylesheet', () => fetch(app.url + style), 200],
      ['a browser half of a plugin', () => fetch(app.url + manifest.plugins[0].url), 200],
      ['the boot manifest', () => fetch(`${app.url}/client-manifest.json`), 200],
      ['an SPA route (the page again)', () => fetch(`${app.url}/s/some-session`), 200],
      ['API JSON', () => post('sessions.list', {}), 200],
      ['an API error', () => post('no.such.method', {}), 404],
      ['an API call from a foreign origin', () => post('sessions.list', {}, { origin: 'http://evil.example' }), 403],
      [
        'a malformed JSON body',
        () =>
          fetch(`${app.url}/api/sessions.list`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', origin: app.url },
            body: '{',
          }),
        400,
      ],
      [
        'a wrong method on a static file',
        () =>
          fetch(app.url + module, {
            method: 'DELETE',
            headers: { 'content-type': 'application/json', origin: app.url },
          }),
        405,
      ],
      ['a refused request (no JSON content type)', () => fetch(app.url + module, { method: 'DELETE' }), 415],
      ['a missing plugin file', () => fetch(`${app.url}/plugins/@dsh/no-such-plugin/x.js`), 404],
    ]
    for (const [what, request, status] of responses) {
      const res = await request()
      expect(res.status, what).toBe(status)
      expectSecurityHeaders(res.headers, what)
      await res.arrayBuffer()
    }
    // A document's CSP is only on the page; everything else gets the allow-nothing one.
    const json = await post('sessions.list', {})
    expect(json.headers.get('content-security-policy')).toBe(
      "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    )

    // An event stream (headers only; the stream stays open).
    const controller = new AbortController()
    const stream = await fetch(`${app.url}/api/events/host`, {
      headers: { origin: app.url, accept: 'text/event-stream' },
      signal: controller.signal,
    })
    expect(stream.headers.get('content-type')).toMatch(/text\/event-stream/)
    expectSecurityHeaders(stream.headers, 'an event stream')
    controller.abort()

    // A request line node:http cannot parse is answered before any route, with the headers too.
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(app.port, '127.0.0.1', () => socket.write('NOT A REQUEST\r\n\r\n'))
      let text = ''
      socket
        .setEncoding('utf8')
        .on('data', (d) => (text += d))
        .on('end', () => resolve(text))
        .on('error', reject)
    })
    expect(raw).toMatch(/^HTTP\/1\.1 400/)
    expect(raw.toLowerCase()).toContain('x-frame-options: deny')
    expect(raw.toLowerCase()).toContain("frame-ancestors 'none'")
  })
})

describe.skipIf(!hasChromium())('dsh web under its CSP in Chromium', () => {
  it('the full app boots and answers a prompt with no CSP violation and no console error', async () => {
    const context = await browser!.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } })
    // Every violation is reported to the page as an event: record them before any script runs.
    // (Page code as a string: this package's type check has no DOM library.)
    await context.addInitScript({
      content:
        "window.__violations = []; document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sample))",
    })
    const page = await context.newPage()
    const errors: string[] = []
    page.on('console', (msg) => void (msg.type() === 'error' && errors.push(msg.text())))
    page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
    await page.goto(app.url)
    await withArtifacts(page, 'csp-full-app', async () => {
      await page.waitForSelector('html[data-ready="true"]', { timeout: 30_000 })
      await page.waitForURL(/\/s\/[^/]+$/)
      // The browser halves loaded (they add their <style> elements at run time).
      await expect.poll(() => page.evaluate('document.querySelectorAll("style").length')).toBeGreaterThan(3)
      const input = page.locator('textarea.dsh-composer-input')
      await input.fill('hello under the policy')
      await input.press('Enter')
      await expect
        .poll(() => page.locator('[data-node="assistant"] .dsh-md').allTextContents(), { timeout: 30_000 })
        .toEqual(['Answered under the CSP.'])
      expect(await page.evaluate('window.__violations')).toEqual([])
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('a page on another loopback origin cannot frame it; a frameable page is the positive control', async () => {
    // The other origin: same host, another port. It frames the app and, as a control, its own page.
    other = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      if (req.url === '/inner') res.end('<!doctype html><p id="inner">framed fine</p>')
      else
        res.end(
          `<!doctype html><iframe id="app" src="${app.url}/"></iframe><iframe id="control" src="/inner"></iframe>`,
        )
    })
    await new Promise<void>((resolve) => other!.listen(0, '127.0.0.1', () => resolve()))
    const otherUrl = `http://127.0.0.1:${(other.address() as { port: number }).port}`
    const context = await browser!.newContext()
    const page = await context.newPage()
    const messages: string[] = []
    page.on('console', (msg) => void messages.push(msg.text()))
    const requested: string[] = []
    const blocked: string[] = []
    page.on('request', (req) => void (req.url().startsWith(app.url) && requested.push(new URL(req.url()).pathname)))
    page.on(
      'requestfailed',
      (req) => void (req.url().startsWith(app.url) && blocked.push(req.failure()?.errorText ?? '')),
    )
    await page.goto(otherUrl)
    await withArtifacts(page, 'csp-framing', async () => {
      // Positive control: a frame of a page without those headers renders.
      await expect
        .poll(() =>
          page
            .frame({ url: `${otherUrl}/inner` })
            ?.locator('#inner')
            .textContent()
            .catch(() => null),
        )
        .toBe('framed fine')
      // The browser blocks the app's document in the frame and says why.
      await expect.poll(() => blocked).toEqual(['net::ERR_BLOCKED_BY_RESPONSE'])
      expect(messages.some((m) => m.includes("frame-ancestors 'none'"))).toBe(true)
      const appFrame = page.frames().find((f) => f !== page.mainFrame() && !f.url().startsWith(otherUrl))
      expect(appFrame?.url()).toMatch(/^chrome-error:/)
      // Nothing of the app ran in the frame: the document alone was asked for, no module.
      expect(requested).toEqual(['/'])
    })
    await context.close()
  })
})
