// What a deployment sets up, seen in the page: a third-party package with a browser half, outside
// the app and never built with it, mounted by a patch row (its panel appears, sharing the app's
// React; its dictionary follows the language; unloading it takes the panel away), and a missing
// API key explained in the page and stored from its Settings dialog.
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  hasChromium,
  launchBrowser,
  openPage,
  startWebApp,
  withArtifacts,
  type Browser,
  type WebApp,
} from '@dsh/web-testkit'
import { SHELL_ONLY_PATCH } from './shell-only.ts'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

const FIXTURE = fileURLToPath(new URL('../../../test-support/web-testkit/fixtures/hello-ui/', import.meta.url))

let app: WebApp
let browser: Browser

beforeAll(async () => {
  // The package is copied into the project folder; the patch row names it relative to the patch file.
  app = await startWebApp({
    noKey: true,
    copy: { 'hello-ui': FIXTURE },
    patch: SHELL_ONLY_PATCH + '- insert:\n    - id: hello-ui\n      name: ./hello-ui/index.js\n',
  })
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
})

describe.skipIf(!hasChromium())('a plugin browser half outside the app', () => {
  it('is listed in the boot manifest, renders in the side panel with working hooks, follows the language, and unloads', async () => {
    const manifest = await (await fetch(app.url + '/client-manifest.json')).json()
    expect(manifest.plugins).toContainEqual({
      package: '@dsh-fixture/hello-ui',
      url: '/plugins/@dsh-fixture/hello-ui/index.js',
    })
    expect(manifest.launchCwd).toBe(app.cwd)
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'plugin-half', async () => {
      const panel = page.locator('[data-testid="hello-ui"]')
      await expect.poll(() => panel.locator('h3').textContent()).toBe('Hello from a plugin')
      await panel.locator('button').click()
      await panel.locator('button').click()
      await expect.poll(() => panel.locator('button').textContent()).toBe('Clicked 2 times')
      await page.locator('[data-testid="language"]').selectOption('zh')
      await expect.poll(() => panel.locator('h3').textContent()).toBe('来自插件的问候')
      await page.evaluate(() => (globalThis as any).__dsh.clientPlugins.unload('@dsh-fixture/hello-ui'))
      await expect.poll(() => panel.count()).toBe(0)
      expect(errors).toEqual([])
    })
    await context.close()
  })
})

describe.skipIf(!hasChromium())('a missing API key', () => {
  it('is explained above the composer with a link to Settings, where storing a key clears the notice', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'missing-key', async () => {
      const notice = page.locator('[data-testid="missing-key"]')
      await expect.poll(() => notice.textContent()).toContain('DEEPSEEK_API_KEY')
      await notice.getByRole('button').click()
      const dialog = page.getByRole('dialog')
      await dialog.locator('input[type="password"]').fill('sk-test-stored-from-the-page')
      await dialog.getByRole('button', { name: 'Save' }).click()
      await expect.poll(() => dialog.getByRole('status').textContent()).toBe('Saved.')
      await expect.poll(() => notice.count()).toBe(0)
      const described = await app.call('credentials.describe', { names: ['DEEPSEEK_API_KEY'] })
      expect(described.credentials[0].configured).toBe(true)
      expect(errors).toEqual([])
    })
    await context.close()
  })
})
