// A DeepSeek key the provider rejects: Settings says so and the key is not stored; an accepted
// one is. The provider here is a loopback server speaking DeepSeek's (OpenAI's) model listing,
// with its 401 error shape, in place of api.deepseek.com.
import { createServer, type Server } from 'node:http'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
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

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const GOOD = 'sk-accepted-0a1b2c3d'
const BAD = 'sk-rejected-9z8y7x6w'

let app: WebApp
let browser: Browser
let gate: Server

beforeAll(async () => {
  gate = createServer((req, res) => {
    if (req.url !== '/v1/models') return void res.writeHead(404).end()
    if (req.headers.authorization !== `Bearer ${GOOD}`) {
      res.writeHead(401, { 'content-type': 'application/json' })
      return void res.end(
        JSON.stringify({
          error: {
            message: 'Authentication Fails, Your api key is invalid',
            type: 'authentication_error',
            code: 'invalid_request_error',
          },
        }),
      )
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'deepseek-v4-flash', object: 'model' }] }))
  })
  await new Promise<void>((resolve) => gate.listen(0, '127.0.0.1', resolve))
  const port = (gate.address() as { port: number }).port
  app = await startWebApp({ noKey: true, env: { DEEPSEEK_BASE_URL: `http://127.0.0.1:${port}/v1` } })
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
  await new Promise((resolve) => gate?.close(resolve))
})

const credentialsFile = () => join(app.home, '.dsh', '.credentials.yaml')
const stored = () => (existsSync(credentialsFile()) ? readFileSync(credentialsFile(), 'utf8') : '')

/** Pastes a key and saves it; resolves with the new status line. */
async function paste(page: Page, key: string): Promise<string | null> {
  const deepseek = page.locator('[data-provider="deepseek-official"]')
  const status = deepseek.locator('[data-testid="provider-status"]')
  const read = async () => ((await status.count()) ? status.textContent() : null)
  const before = await read()
  await deepseek.locator('[data-testid="key-input"]').fill(key)
  await deepseek.locator('[data-testid="key-save"]').click()
  await expect.poll(read, { timeout: 20_000 }).not.toBe(before)
  // A stored key is followed by a model listing whose progress shows in the same status line
  // ("… Listing the models…"); the line is `aria-busy` until the save and that listing have ended.
  await expect.poll(() => status.getAttribute('aria-busy'), { timeout: 20_000 }).toBe('false')
  return read()
}

describe.skipIf(!hasChromium())('a key the provider rejects', () => {
  it('is reported in Settings and not stored; an accepted one is', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'settings-key-rejected', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      await page.locator('.footer-controls button[aria-label="Settings"]').click()
      await page.locator('[data-testid="settings-dialog"] [data-section="models"]').click()
      const status = await paste(page, BAD)
      expect(status).toMatch(
        /^The provider rejected this key; it was not stored\. DeepSeek rejected the key \(HTTP 401: Authentication Fails, Your api key is invalid\)/,
      )
      expect(status).not.toContain(BAD)
      expect(stored()).not.toContain(BAD)
      const { credentials } = await app.call('credentials.describe', { names: ['DEEPSEEK_API_KEY'] })
      expect(credentials[0].configured).toBe(false)
      await expect
        .poll(() => page.locator('[data-provider="deepseek-official"] [data-testid="key-badge"]').textContent())
        .toBe('no key')
      expect(await paste(page, GOOD)).toBe('Key stored and accepted by the provider.')
      expect(stored()).toContain('DEEPSEEK_API_KEY')
      await expect
        .poll(() => page.locator('[data-provider="deepseek-official"] [data-testid="key-badge"]').textContent())
        .toBe('key set')
      // Forgetting it takes it out of the credentials file.
      await page.locator('[data-provider="deepseek-official"] [data-testid="key-forget"]').click()
      await expect
        .poll(() => page.locator('[data-provider="deepseek-official"] [data-testid="key-badge"]').textContent())
        .toBe('no key')
      expect(stored()).not.toContain(GOOD)
      // The failed call's 400 is the only console error the page may log.
      expect(errors.filter((e) => !/status of 400/.test(e))).toEqual([])
    })
    await context.close()
  })
})
