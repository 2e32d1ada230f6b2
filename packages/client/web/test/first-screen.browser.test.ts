// What a session's page paints first (issue 38's Lighthouse goal on a phone): the host puts the
// session's last prompts and answers in the static shell as plain text, so the conversation shows
// before any script has run; the shell does not render its own fallback log while the halves the
// first screen needs are loading (the log is rendered once, by the conversation half, which then
// replaces the preview); and the halves whose package says `dsh.clientLoad: "deferred"` are not
// preloaded and are asked for only after the conversation has painted, yet all end up active. One
// real `dsh web` with the web bundle's halves and the mock model; one answered conversation.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, launchBrowser, startWebApp, type Browser, type WebApp } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

let app: WebApp
let browser: Browser | undefined
let url: string

const ANSWER = 'The project holds two files, a README and a script.'

beforeAll(async () => {
  app = await startWebApp({ steps: [{ text: ANSWER }] })
  if (!hasChromium()) return
  browser = await launchBrowser()
  const page = await browser.newPage()
  await page.goto(app.url)
  await page.waitForSelector('html[data-ready="true"]')
  await page.waitForURL(/\/s\/[^/]+$/)
  await page.locator('textarea[data-composer="true"]').fill('What is <in> this project?')
  await page.locator('textarea[data-composer="true"]').press('Enter')
  await page.locator('[data-node="assistant"]', { hasText: ANSWER }).waitFor()
  url = page.url()
  await page.close()
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
})

describe("a session's first screen", () => {
  it.skipIf(!hasChromium())('shows the last prompt and answer as text before any script has run', async () => {
    const html = await (await fetch(url)).text()
    const preview = /<div class="boot-preview"[^>]*>(.*?)<\/div><\/div>/s.exec(html)
    expect(preview, 'no preview in the static shell').not.toBeNull()
    // Text, escaped: the prompt's `<in>` is not markup.
    expect(preview![1]).toContain('What is &lt;in&gt; this project?')
    expect(preview![1]).toContain(ANSWER)
    // In Chromium with every script held: the shell alone paints the conversation.
    const context = await browser!.newContext({ javaScriptEnabled: false })
    try {
      const page = await context.newPage()
      await page.goto(url)
      await page.locator('.boot-shell .boot-assistant', { hasText: ANSWER }).waitFor({ state: 'visible' })
      await page.locator('.boot-shell .boot-user', { hasText: 'What is <in> this project?' }).waitFor()
    } finally {
      await context.close()
    }
  })

  it.skipIf(!hasChromium())(
    'renders the log once: no fallback log while the conversation half loads, the preview until it is in',
    async () => {
      const page = await browser!.newPage()
      try {
        await page.addInitScript(() => {
          const seen: string[] = []
          ;(globalThis as { __seen?: string[] }).__seen = seen
          new MutationObserver((records) => {
            for (const r of records)
              for (const n of r.addedNodes)
                if (n instanceof Element) {
                  if (n.matches('.fallback-conversation') || n.querySelector('.fallback-conversation'))
                    seen.push('fallback')
                  if (n.matches('.kept-preview') || n.querySelector('.kept-preview .boot-preview')) seen.push('kept')
                }
          }).observe(document, { childList: true, subtree: true })
        })
        await page.goto(url)
        await page.locator('[data-node="assistant"]', { hasText: ANSWER }).waitFor()
        await page.waitForSelector('html[data-ready="true"]')
        const seen = await page.evaluate(() => (globalThis as { __seen?: string[] }).__seen)
        // The app's first render kept the host's preview in the conversation's seat...
        expect(seen).toContain('kept')
        // ...and never rendered the shell's own fallback log.
        expect(seen).not.toContain('fallback')
        // The conversation half replaced the preview.
        expect(await page.locator('.boot-preview').count()).toBe(0)
      } finally {
        await page.close()
      }
    },
  )

  it.skipIf(!hasChromium())(
    'asks for the deferred halves only after the conversation has painted, and loads them all',
    async () => {
      const manifest = (await (await fetch(new URL('/client-manifest.json', app.url))).json()) as {
        plugins: { package: string; url: string; defer?: boolean }[]
      }
      const deferred = manifest.plugins.filter((p) => p.defer)
      // Overlays, settings, sidebar and panel extras wait; the conversation and its tool cards do not.
      expect(deferred.map((p) => p.package)).toEqual(expect.arrayContaining(['@dsh/ui-settings', '@dsh/ui-schedule']))
      expect(deferred.map((p) => p.package)).not.toContain('@dsh/ui-conversation')
      expect(deferred.map((p) => p.package)).not.toContain('@dsh/ui-tool')
      // The service deferred halves inject (`inputTriggers`) is there before they mount.
      expect(deferred.map((p) => p.package)).not.toContain('@dsh/ui-input-trigger')
      const html = await (await fetch(url)).text()
      for (const p of deferred) expect(html, `${p.package} is preloaded`).not.toContain(`href="${p.url}"`)

      const page = await browser!.newPage()
      try {
        await page.addInitScript(() => {
          new MutationObserver((_, observer) => {
            if (document.querySelector('[data-node="assistant"]')) {
              ;(globalThis as { __painted?: number }).__painted = performance.now()
              observer.disconnect()
            }
          }).observe(document, { childList: true, subtree: true })
        })
        await page.goto(url)
        await page.waitForSelector('html[data-ready="true"]')
        const seen = await page.evaluate(() => ({
          painted: (globalThis as { __painted?: number }).__painted,
          fetched: performance
            .getEntriesByType('resource')
            .map((r) => ({ path: new URL(r.name).pathname, start: r.startTime })),
          states: (
            globalThis as { __dsh?: { clientPlugins: { list: { get(): { package: string; state: string }[] } } } }
          ).__dsh!.clientPlugins.list.get(),
        }))
        expect(seen.painted).toBeGreaterThan(0)
        for (const p of deferred) {
          const hit = seen.fetched.find((f) => f.path === new URL(p.url, app.url).pathname)
          expect(hit, `${p.package} was never fetched`).toBeDefined()
          expect(hit!.start, `${p.package} was asked for before the conversation painted`).toBeGreaterThan(
            seen.painted!,
          )
        }
        // Every half, deferred or not, is active once the page says it is ready.
        const byPackage = new Map(seen.states.map((s) => [s.package, s.state]))
        for (const p of manifest.plugins) expect(byPackage.get(p.package), p.package).toBe('active')
        // A deferred half works: the settings dialog is ui-settings' seat.
        await page.keyboard.press('Escape')
        await page.getByRole('button', { name: 'Settings' }).first().click()
        await page.locator('[data-testid="settings-dialog"]').waitFor()
      } finally {
        await page.close()
      }
    },
  )
})
