// Hot reload of browser halves in real Chromium against the real `dsh web`: a third-party half
// (copied into the project and mounted by a patch row) is rewritten on disk, as a rebuild would;
// the open page shows the new half without reloading (a marker set on the window survives), and
// the host stream carried exactly that package.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
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

const FIXTURE = fileURLToPath(new URL('../../../test-support/web-testkit/fixtures/hello-ui/', import.meta.url))

describe.skipIf(!hasChromium())('client hot reload', () => {
  let app: WebApp
  let browser: Browser
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    app = await startWebApp({
      copy: { 'hello-ui': FIXTURE },
      patch:
        '- insert:\n    - id: hello-ui\n      name: ./hello-ui/index.js\n- id: client-hmr\n  config: { pollMs: 200 }\n',
    })
    browser = await launchBrowser()
    ;({ page, errors } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })

  it('re-imports a half rewritten on disk without reloading the page', async () => {
    await withArtifacts(page, 'client-hmr', async () => {
      const panel = page.locator('[data-testid="hello-ui"]')
      await expect.poll(() => panel.locator('h3').textContent()).toBe('Hello from a plugin')
      // Anything a reload would lose.
      await page.evaluate(() => ((globalThis as { __marker?: number }).__marker = 41))
      const events: string[] = []
      page.on('console', (m) => m.text().startsWith('[dsh] hot reload') && events.push(m.text()))
      const file = join(app.cwd, 'hello-ui/client/index.js')
      writeFileSync(
        file,
        readFileSync(file, 'utf8').replace("title: 'Hello from a plugin'", "title: 'Hello, reloaded'"),
      )
      await expect.poll(() => panel.locator('h3').textContent()).toBe('Hello, reloaded')
      expect(await page.evaluate(() => (globalThis as { __marker?: number }).__marker)).toBe(41)
      expect(events).toEqual(['[dsh] hot reload: @dsh-fixture/hello-ui'])
      // The plugin list shows one active copy of the half.
      const listed = await page.evaluate(() =>
        (globalThis as any).__dsh.clientPlugins.list
          .get()
          .filter((p: { package: string }) => p.package === '@dsh-fixture/hello-ui'),
      )
      expect(listed).toEqual([expect.objectContaining({ state: 'active', url: expect.stringMatching(/\?v=/) })])
      expect(await panel.count()).toBe(1)
      expect(errors).toEqual([])
    })
  })
})
