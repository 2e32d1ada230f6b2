// Issue #35: the sign-in page of a remote bind is an HTML document with its own CSP (its inline
// style by hash, its form posting to this origin) on top of the webserver's no-framing headers.
// In real Chromium the page is styled, signs in through its form, and reports no CSP violation.
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import WebServer, { type WebServerConfig } from '@dsh/webserver'
import { hasChromium, launchBrowser, type Browser } from '@dsh/web-testkit'
import * as gate from '../src/index.ts'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

const SECRET = 'a-long-enough-access-secret-0123'
const fibers: { dispose(): unknown }[] = []
let browser: Browser | undefined
let port = 0
let saved: string | undefined

beforeAll(async () => {
  saved = process.env.DSH_ACCESS_SECRET
  process.env.DSH_ACCESS_SECRET = SECRET
  const ctx = new Context()
  const server = ctx.plugin(WebServer, { host: '0.0.0.0', port: 0 } as WebServerConfig)
  fibers.push(server)
  await server
  const fiber = ctx.plugin(gate, {} as gate.Config)
  fibers.push(fiber)
  await fiber
  ctx.webServer.registerFallback((_req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8')
    res.end('<!doctype html><p id="in">signed in</p>')
  })
  port = ctx.webServer.port
  if (hasChromium()) browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  for (const f of fibers.splice(0).reverse()) await f.dispose()
  if (saved === undefined) delete process.env.DSH_ACCESS_SECRET
  else process.env.DSH_ACCESS_SECRET = saved
})

describe.skipIf(!hasChromium())('the sign-in page under its CSP', () => {
  it('is styled, signs in through its form, and reports no violation', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/auth/login`)
    expect(response.headers.get('x-frame-options')).toBe('DENY')
    // Not no-referrer on this page: under it Chromium sends `Origin: null` with the form's POST,
    // which the gate's origin check refuses (BAD_ORIGIN). Cross-origin requests still get none.
    expect(response.headers.get('referrer-policy')).toBe('same-origin')
    const csp = response.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).toContain("form-action 'self'")
    expect(csp).toMatch(/style-src 'self' 'sha256-[A-Za-z0-9+/=]+'/)
    expect(csp).not.toContain('unsafe-inline')
    await response.arrayBuffer()

    const context = await browser!.newContext()
    // (Page code as a string: this package's type check has no DOM library.)
    await context.addInitScript({
      content:
        "window.__violations = []; document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sample))",
    })
    const page = await context.newPage()
    await page.goto(`http://127.0.0.1:${port}/somewhere`)
    await page.waitForURL(/\/auth\/login\?next=/)
    // The inline style applied (max-width: 22rem at a 16px font).
    expect(await page.evaluate('getComputedStyle(document.body).maxWidth')).toBe('352px')
    expect(await page.evaluate('window.__violations')).toEqual([])
    await page.fill('#secret', SECRET)
    await page.click('button[type="submit"]')
    await page.waitForURL(/\/somewhere$/)
    expect(await page.locator('#in').textContent()).toBe('signed in')
    await context.close()
  })
})
