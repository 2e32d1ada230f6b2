// Settings → Providers in real Chromium against the real `dsh web`: each provider says where the
// key in use comes from (the environment, the credentials file) and which other layer's key is
// set but not used, never the key itself; a key change lists the provider's models at once,
// without a reload or a second click; an endpoint that accepts connections and never answers
// is reported within 3 s in a plain sentence, and a refused one names the failure. The
// provider is a loopback server speaking DeepSeek's (OpenAI's) model listing.
import { createServer, type Server } from 'node:http'
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net'
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

const ENV_KEY = 'sk-from-env-5e6f7a8b'
const STORED_KEY = 'sk-stored-1a2b3c4d'
const MODELS = ['deepseek-v4-flash', 'deepseek-v4-pro', 'deepseek-reasoner-next']

let app: WebApp
let browser: Browser
let page: Page
let errors: string[]
let provider: Server
/** Accepts connections and never answers. */
let silent: TcpServer
const held: Socket[] = []
let silentPort = 0
let closedPort = 0

beforeAll(async () => {
  provider = createServer((req, res) => {
    const auth = req.headers.authorization
    if (req.url !== '/v1/models') return void res.writeHead(404).end()
    if (auth !== `Bearer ${ENV_KEY}` && auth !== `Bearer ${STORED_KEY}`)
      return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"bad key"}}')
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ object: 'list', data: MODELS.map((id) => ({ id, object: 'model' })) }))
  })
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve))
  silent = createTcpServer((socket) => void held.push(socket))
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  silentPort = (silent.address() as { port: number }).port
  // A port that was free a moment ago: nothing listens there.
  const probe = createTcpServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  closedPort = (probe.address() as { port: number }).port
  await new Promise((resolve) => probe.close(resolve))
  const port = (provider.address() as { port: number }).port
  app = await startWebApp({
    env: { DEEPSEEK_API_KEY: ENV_KEY, DEEPSEEK_BASE_URL: `http://127.0.0.1:${port}/v1` },
  })
  browser = await launchBrowser()
  ;({ page, errors } = await openPage(browser, app.url))
  await page.waitForURL(/\/s\/[^/]+$/)
  await page.locator('.footer-controls button[aria-label="Settings"]').click()
  await page.locator('[data-testid="settings-dialog"] [data-section="models"]').click()
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
  for (const socket of held) socket.destroy()
  await new Promise((resolve) => silent?.close(resolve))
  await new Promise((resolve) => provider?.close(resolve))
})

describe.skipIf(!hasChromium())('Settings: providers', () => {
  const deepseek = () => page.locator('[data-provider="deepseek-official"]')

  it('says the key in use comes from the environment, then that a stored key is set but not used; never a key', async () => {
    await withArtifacts(page, 'providers-key-source', async () => {
      const source = deepseek().locator('[data-testid="key-source"]')
      await expect.poll(() => source.textContent()).toBe('Key in use: from the environment (DEEPSEEK_API_KEY).')
      expect(await source.getAttribute('data-source')).toBe('env')
      // A key stored on top: the environment's still wins, and the page says which is used.
      await deepseek().locator('[data-testid="key-input"]').fill(STORED_KEY)
      await deepseek().locator('[data-testid="key-save"]').click()
      await expect.poll(() => source.getAttribute('data-shadowed')).not.toBeNull()
      expect(await source.getAttribute('data-source')).toBe('env')
      expect(await source.textContent()).toMatch(
        /^Key in use: from the environment \(DEEPSEEK_API_KEY\)\. Also set in .*\.credentials\.yaml, not used\.$/,
      )
      const text = (await page.locator('[data-testid="settings-dialog"]').textContent()) ?? ''
      expect(text).not.toContain(ENV_KEY)
      expect(text).not.toContain(STORED_KEY)
    })
  })

  it('the models appear right after the key change, with no reload and no second click', async () => {
    await withArtifacts(page, 'providers-models-after-key', async () => {
      // (The key saved in the test before.) Its listing shows in the provider without "Discover".
      await expect
        .poll(() => deepseek().locator('[data-testid="provider-models"] code').allTextContents(), { timeout: 10_000 })
        .toEqual([...MODELS].sort())
      expect(await deepseek().locator('[data-testid="provider-status"]').textContent()).toBe(
        'Key stored and accepted by the provider.',
      )
    })
  })

  it('an endpoint that never answers is reported within 3 s; a refused one names the failure', async () => {
    await withArtifacts(page, 'providers-unreachable', async () => {
      const form = page.locator('[data-testid="add-endpoint"]')
      const status = form.locator('[data-testid="endpoint-status"]')
      const url = `http://127.0.0.1:${silentPort}/v1`
      await form.locator('input[name="baseURL"]').fill(url)
      const started = Date.now()
      await form.getByRole('button', { name: 'Discover models' }).click()
      await expect
        .poll(() => status.textContent(), { timeout: 4_500 })
        .toBe(`${url} did not answer within 3 s. Check the address and that the server is running.`)
      expect(Date.now() - started).toBeLessThan(4_000)
      expect(await status.getAttribute('role')).toBe('alert')
      const refused = `http://127.0.0.1:${closedPort}/v1`
      await form.locator('input[name="baseURL"]').fill(refused)
      await form.getByRole('button', { name: 'Discover models' }).click()
      await expect.poll(() => status.textContent(), { timeout: 4_500 }).toMatch(`Could not reach ${refused}: `)
      // Failed host calls log their status to the console; nothing else may.
      expect(errors.filter((e) => !/status of (4|5)\d\d/.test(e))).toEqual([])
    })
  })
})
