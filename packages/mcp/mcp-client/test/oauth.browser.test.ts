// The OAuth consent flow of a remote MCP server driven from the web client, in real Chromium
// against the real `dsh web`, the mock model, and an OAuth-protected MCP server built from the
// official SDK's server-side auth helpers (@dsh/mcp-oauth-server): the first message of a session
// asks the human to sign in (a question in the page, with the authorization address), the human
// opens that address in the browser, the authorization server sends the browser back to dsh's
// loopback callback, and the turn goes on with the server's tools under the new token.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startOAuthMcpServer, type OAuthMcpServer } from '@dsh/mcp-oauth-server'
import {
  hasChromium,
  launchBrowser,
  openPage,
  startWebApp,
  withArtifacts,
  type Browser,
  type Page,
  type WebApp,
} from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 })

describe.skipIf(!hasChromium())('MCP OAuth sign-in from the web client', () => {
  let mcp: OAuthMcpServer
  let app: WebApp
  let browser: Browser
  let page: Page
  beforeAll(async () => {
    mcp = await startOAuthMcpServer()
    app = await startWebApp({
      steps: [
        { toolCalls: [{ id: 'c_who', name: 'mcp__secure__whoami', arguments: {} }] },
        { text: 'Signed in.' },
      ] as never,
      patch: `- id: mcp\n  config:\n    servers:\n      secure: { url: ${JSON.stringify(mcp.url)} }\n`,
    })
    browser = await launchBrowser()
    ;({ page } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
    await mcp?.close()
  })

  it('asks in the page, the browser consents, and the turn uses the signed-in tool', async () => {
    await withArtifacts(page, 'mcp-oauth-web', async () => {
      await page.locator('textarea.dsh-composer-input').click()
      await page.keyboard.type('who am I on the secure server?')
      await page.keyboard.press('Enter')
      const form = page.locator('.dsh-question', { hasText: 'MCP server "secure" needs you to sign in' })
      await form.waitFor({ timeout: 30_000 })
      const address = /http:\/\/127\.0\.0\.1:\d+\/authorize\S+/.exec((await form.textContent()) ?? '')?.[0]
      expect(address).toBeDefined()
      await form.getByLabel('I will open it myself').check()
      await form.getByRole('button', { name: 'Send answers' }).click()
      // The human opens the address: the authorization server consents at once and redirects the
      // browser to dsh's loopback callback.
      const consent = await page.context().newPage()
      await consent.goto(address!)
      await expect.poll(() => consent.url()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?\S*code=/)
      await page.locator('[data-node="assistant"]', { hasText: 'Signed in.' }).waitFor({ timeout: 30_000 })
      expect(mcp.authorizations).toHaveLength(1)
      expect(mcp.tokenGrants).toEqual(['authorization_code'])
      const clientId = mcp.authorizations[0].clientId
      const body = JSON.stringify(app.mock.requests.at(-1)?.body)
      expect(body).toContain(`client ${clientId} with scopes mcp:tools`)
      // No token reached the page.
      const html = await page.content()
      for (const token of mcp.accessTokens) expect(html).not.toContain(token)
    })
  })
})
