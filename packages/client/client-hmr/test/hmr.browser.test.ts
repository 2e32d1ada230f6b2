// Hot reload of browser halves in real Chromium against the real `dsh web`: a third-party half
// (copied into the project and mounted by a patch row) is rewritten on disk, as a rebuild would;
// the open page shows the new half without reloading (a marker set on the window survives), and
// the host stream carried exactly that package. With no page open the host reads nothing: its
// scans (logged under DSH_DEBUG) start when a page connects and stop when the last one leaves.
import { cpSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
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
  let file: string
  /** The host's fingerprint scans so far, from its debug log. */
  const scans = () => app.stderr().match(/hot reload scan \d+:/g)?.length ?? 0
  const rewrite = (from: string, to: string) =>
    writeFileSync(file, readFileSync(file, 'utf8').replace(`title: '${from}'`, `title: '${to}'`))
  beforeAll(async () => {
    app = await startWebApp({
      copy: { 'hello-ui': FIXTURE },
      env: { DSH_DEBUG: '1' },
      // pollMs is the fallback only; a poll would show here as scans with no page open.
      patch:
        '- insert:\n    - id: hello-ui\n      name: ./hello-ui/index.js\n- id: client-hmr\n  config: { pollMs: 100 }\n',
    })
    file = join(app.cwd, 'hello-ui/client/index.js')
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })

  it('reads nothing while no page is connected', async () => {
    // Positive control: the app answers (booted, its rows up), and a rebuild lands on disk.
    const res = await fetch(`${app.url}/client-manifest.json`)
    expect((await res.json()).plugins.map((p: { package: string }) => p.package)).toContain('@dsh-fixture/hello-ui')
    rewrite('Hello from a plugin', 'Hello, idle build')
    await fetch(`${app.url}/client-manifest.json`)
    expect(scans()).toBe(0)
    // A page connects: the first scan runs, and the page shows the build made while idle.
    ;({ page, errors } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
    await expect.poll(scans).toBeGreaterThan(0)
    await expect.poll(() => page.locator('[data-testid="hello-ui"] h3').textContent()).toBe('Hello, idle build')
  })

  it('re-imports a half rewritten on disk without reloading the page', async () => {
    await withArtifacts(page, 'client-hmr', async () => {
      const panel = page.locator('[data-testid="hello-ui"]')
      await expect.poll(() => panel.locator('h3').textContent()).toBe('Hello, idle build')
      // Anything a reload would lose.
      await page.evaluate(() => ((globalThis as { __marker?: number }).__marker = 41))
      const events: string[] = []
      page.on('console', (m) => m.text().startsWith('[dsh] hot reload') && events.push(m.text()))
      rewrite('Hello, idle build', 'Hello, reloaded')
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
      // Its stylesheet was replaced, not stacked (installStyles removes it with the old copy).
      expect(await page.locator('style[data-owner="hello-ui"]').count()).toBe(1)
      expect(errors).toEqual([])
    })
  })

  it('follows a half whose directory was replaced by a new one', async () => {
    const panel = page.locator('[data-testid="hello-ui"]')
    await expect.poll(() => panel.locator('h3').textContent()).toBe('Hello, reloaded')
    // A build tool that writes a fresh directory and swaps it in: the old watcher's inode is gone.
    const dir = join(app.cwd, 'hello-ui/client')
    renameSync(dir, `${dir}.old`)
    cpSync(`${dir}.old`, dir, { recursive: true })
    rewrite('Hello, reloaded', 'Hello, new directory')
    await expect.poll(() => panel.locator('h3').textContent()).toBe('Hello, new directory')
    // The new directory is watched: the next write inside it is seen too.
    rewrite('Hello, new directory', 'Hello, reloaded')
    await expect.poll(() => panel.locator('h3').textContent()).toBe('Hello, reloaded')
  })

  it('stops when the last page leaves and reports an idle rebuild to the next page', async () => {
    await page.close()
    await expect.poll(() => app.stderr()).toContain('no page connected: stopped watching')
    const idle = scans()
    const changes = () => app.stderr().split('browser halves changed: @dsh-fixture/hello-ui').length - 1
    const changedBefore = changes()
    rewrite('Hello, reloaded', 'Hello, second idle build')
    // Another connection (no page) proves the host is up and still idle.
    await fetch(`${app.url}/client-manifest.json`)
    expect(scans()).toBe(idle)
    ;({ page, errors } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
    await expect.poll(() => page.locator('[data-testid="hello-ui"] h3').textContent()).toBe('Hello, second idle build')
    // The host compares against the state it last saw, so a page that reconnects gets the change.
    await expect.poll(changes).toBe(changedBefore + 1)
    expect(scans()).toBeGreaterThan(idle)
    // File events drove all of it: the poll fallback never started.
    expect(app.stderr()).not.toContain('cannot watch the client directories')
    expect(errors).toEqual([])
  })
})
