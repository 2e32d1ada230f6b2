// The page `dsh web` serves, for a fast first paint (issue 38's Lighthouse goal): every enabled
// browser half's entry is preloaded from the HTML (fetched in parallel with the app's entry, not
// one round trip after it, and used by the runtime's import), under the page's CSP; and the
// conversation view's headings step down one level at a time (the side panel's section titles
// follow the session title). The app's entry script comes before the halves' preloads (asked for
// first), and on a phone the conversation has the whole width while the side panel is empty (no
// squeeze-then-widen layout shift). A page whose URL names a session carries that session's
// replay as a data block, so its first render needs no events round trip: the conversation shows
// while the events stream is held, which then resumes after the carried seq; a block that does
// not fit the log is dropped and the stream replays from the start. One real `dsh web` with the
// web bundle's halves and the mock model.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, launchBrowser, openPage, startWebApp, type Browser, type WebApp } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

let app: WebApp
let browser: Browser | undefined

beforeAll(async () => {
  app = await startWebApp({ steps: [{ text: 'Hello from the mock model.' }, { text: 'Hello from the mock model.' }] })
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
})

const attr = (tag: string, name: string) => new RegExp(`\\s${name}="([^"]*)"`).exec(tag)?.[1]

describe('the page dsh web serves', () => {
  it("preloads each enabled browser half's entry after the import map, under the page's CSP", async () => {
    const res = await fetch(app.url)
    expect(res.status).toBe(200)
    const html = await res.text()
    const boot = /<script type="application\/json" id="dsh-boot">(.*?)<\/script>/s.exec(html)
    expect(boot).not.toBeNull()
    const manifest = JSON.parse(boot![1]) as { plugins: { package: string; url: string; defer?: boolean }[] }
    // The halves whose package defers them are asked for after the first screen (first-screen.browser.test.ts).
    manifest.plugins = manifest.plugins.filter((p) => !p.defer)
    // The web bundle mounts many halves (conversation, tools, settings...).
    expect(manifest.plugins.length).toBeGreaterThan(5)
    const links = [...html.matchAll(/<link\b[^>]*>/g)].filter((m) => attr(m[0], 'rel') === 'modulepreload')
    const preloaded = new Map(links.map((m) => [attr(m[0], 'href'), m.index!]))
    const importMap = html.indexOf('<script type="importmap">')
    expect(importMap).toBeGreaterThan(-1)
    for (const plugin of manifest.plugins) {
      expect(preloaded.has(plugin.url), `no modulepreload for ${plugin.package} (${plugin.url})`).toBe(true)
      // After the import map (a module fetch before it would make the browser drop the map).
      expect(preloaded.get(plugin.url)!).toBeGreaterThan(importMap)
    }
    // Same-origin paths only: the CSP's script-src 'self' covers them, with no new exception.
    for (const href of preloaded.keys()) expect(href).toMatch(/^\/[^/]/)
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/)
    // The shared libraries' code comes in few files (one chunk and the bundler's small runtime),
    // not one per set of importing names: each preloaded file is a request the browser queues.
    const libChunks = [...preloaded.keys()].filter((href) => href!.startsWith('/shared/lib-'))
    expect(libChunks.length, libChunks.join(' ')).toBeLessThanOrEqual(2)
    // The app's entry is asked for before any half: its script comes before their preloads.
    const entry = /<script type="module"[^>]*\ssrc="([^"]+)"/.exec(html)
    expect(entry).not.toBeNull()
    for (const plugin of manifest.plugins) expect(preloaded.get(plugin.url)!).toBeGreaterThan(entry!.index)
  })

  it.skipIf(!hasChromium())(
    'on a phone the conversation has the whole width while the side panel is empty',
    async () => {
      browser ??= await launchBrowser()
      const context = await browser.newContext({
        viewport: { width: 412, height: 823 },
        isMobile: true,
        hasTouch: true,
      })
      try {
        const page = await context.newPage()
        await page.goto(app.url)
        await page.waitForSelector('html[data-ready="true"]')
        await page.waitForURL(/\/s\/[^/]+$/)
        const layout = () =>
          page.evaluate(() => ({
            panel: document.querySelector('.app')?.className,
            empty: document.querySelector('[data-testid="side-panel"]')?.children.length,
            width: Math.round(document.querySelector('main.conversation')!.getBoundingClientRect().width),
          }))
        // A new session: the panel is open but has only its unseen heading.
        const seen = await layout()
        expect(seen.panel).toContain('panel-open')
        expect(seen.empty).toBe(1)
        expect(seen.width).toBe(412)
      } finally {
        await context.close()
      }
    },
  )

  it.skipIf(!hasChromium())(
    'in Chromium the halves are fetched with the entry, once each; the headings step down one level at a time',
    async () => {
      browser ??= await launchBrowser()
      const { page, errors } = await openPage(browser, app.url)
      const urls = (await (await fetch(new URL('/client-manifest.json', app.url))).json()).plugins
        .filter((p: { defer?: boolean }) => !p.defer)
        .map((p: { url: string }) => p.url) as string[]
      const fetched = await page.evaluate(() =>
        performance.getEntriesByType('resource').map((r) => ({
          // With the query: a hot reload (client-hmr, when a half is rebuilt meanwhile) imports
          // `<entry>?v=...`, a new module, not a second fetch of the preloaded one.
          path: new URL(r.name).pathname + new URL(r.name).search,
          start: r.startTime,
          end: (r as PerformanceResourceTiming).responseEnd,
        })),
      )
      // The app's entry module (the page's one <script src>); the runtime imports the halves only
      // after it has run, so a half whose fetch started before the entry arrived came from a preload.
      const entryPath = /<script type="module"[^>]*\ssrc="([^"]+)"/.exec(await (await fetch(app.url)).text())![1]
      const entry = fetched.find((f) => f.path === entryPath)
      expect(entry, entryPath).toBeDefined()
      for (const url of urls) {
        const path = new URL(url, app.url).pathname
        const hits = fetched.filter((f) => f.path === path)
        // Fetched once: the runtime's import(url) reused the preloaded module.
        expect(hits.length, path).toBe(1)
        expect(hits[0].start, `${path} started after the app's entry arrived`).toBeLessThan(entry!.end)
      }
      // A CSP refusal or a failed module would be logged as a console error.
      expect(errors).toEqual([])

      // A conversation with the side panel showing (the context section, after an answer).
      await page.waitForURL(/\/s\/[^/]+$/)
      const input = page.locator('textarea[data-composer="true"]')
      await input.fill('Say hello')
      await input.press('Enter')
      await page.getByText('Hello from the mock model.').waitFor()
      await page.locator('[data-testid="side-panel"] h3').first().waitFor()
      const levels = await page.evaluate(() =>
        [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]
          .filter((h) => h.getClientRects().length > 0)
          .map((h) => `${h.tagName.toLowerCase()} ${h.textContent?.trim().slice(0, 30)}`),
      )
      expect(levels.some((l) => l.startsWith('h1 '))).toBe(true)
      // axe's heading-order: no heading is more than one level below the one before it.
      const jumps = levels.filter((l, i) => i > 0 && Number(l[1]) > Number(levels[i - 1][1]) + 1)
      expect(jumps, levels.join(' | ')).toEqual([])
    },
  )

  it.skipIf(!hasChromium())(
    "a session's page carries its replay: the conversation shows with the events stream held, then resumes after it",
    async () => {
      browser ??= await launchBrowser()
      const context = await browser.newContext()
      try {
        // One answered conversation, typed in the page as a user would.
        const first = await context.newPage()
        await first.goto(app.url)
        await first.waitForSelector('html[data-ready="true"]')
        await first.waitForURL(/\/s\/[^/]+$/)
        await first.locator('textarea[data-composer="true"]').fill('Say hello again')
        await first.locator('textarea[data-composer="true"]').press('Enter')
        await first.locator('[data-node="assistant"]', { hasText: 'Hello from the mock model.' }).waitFor()
        const url = first.url()
        const sessionId = decodeURIComponent(url.split('/s/')[1])
        await first.close()

        // The page as served: the block names the session and holds its log from seq 0, then its status.
        const res = await fetch(url)
        const html = await res.text()
        const block = /<script type="application\/json" id="dsh-session">(.*?)<\/script>/s.exec(html)
        expect(block, 'no dsh-session block').not.toBeNull()
        const data = JSON.parse(block![1]) as { sessionId: string; frames: [string, any][] }
        expect(data.sessionId).toBe(sessionId)
        const messages = data.frames.filter(([event]) => event === 'message').map(([, e]) => e)
        expect(messages.map((e) => e.seq)).toEqual(messages.map((_, i) => i))
        expect(JSON.stringify(messages)).toContain('Say hello again')
        expect(data.frames.some(([event]) => event === 'status')).toBe(true)
        // The CSP is as strict as before: still no inline script allowed by keyword.
        expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'( 'sha256-[^']+')*;/)
        // The app's root page names no session: no block.
        expect(await (await fetch(app.url)).text()).not.toContain('id="dsh-session"')

        // The events stream held: the conversation still shows, and the stream asks only for what follows.
        const page = await context.newPage()
        const streams: string[] = []
        let release!: () => void
        const released = new Promise<void>((resolve) => (release = resolve))
        await page.route('**/api/events/session/**', async (route) => {
          streams.push(route.request().url())
          await released
          await route.continue().catch(() => {})
        })
        await page.goto(url)
        await page
          .locator('[data-node="assistant"]', { hasText: 'Hello from the mock model.' })
          .waitFor({ timeout: 20_000 })
        await page.locator('[data-node="user"]', { hasText: 'Say hello again' }).first().waitFor()
        expect(streams.length).toBeGreaterThan(0)
        expect(new URL(streams[0]).searchParams.get('after')).toBe(String(messages.length - 1))
        release()
        await page.waitForSelector('html[data-ready="true"]')
        await page.close()

        // A block that does not fit (a gap in its seqs) is dropped whole: the stream replays from seq 0.
        const stale = await context.newPage()
        const staleStreams: string[] = []
        await stale.route('**/api/events/session/**', async (route) => {
          staleStreams.push(route.request().url())
          await route.continue().catch(() => {})
        })
        await stale.route(url, async (route) => {
          const response = await route.fetch()
          const body = (await response.text()).replace(
            /(<script type="application\/json" id="dsh-session">)(.*?)(<\/script>)/s,
            (_, open: string, json: string, close: string) => {
              const parsed = JSON.parse(json) as { frames: [string, any][] }
              parsed.frames = parsed.frames.filter(([event, e]) => !(event === 'message' && e.seq === 0))
              return open + JSON.stringify(parsed).replace(/</g, '\\u003c') + close
            },
          )
          await route.fulfill({ response, body })
        })
        await stale.goto(url)
        await stale.locator('[data-node="assistant"]', { hasText: 'Hello from the mock model.' }).waitFor()
        expect(staleStreams.length).toBeGreaterThan(0)
        expect(new URL(staleStreams[0]).searchParams.get('after')).toBeNull()
        expect(await stale.locator('#dsh-session').count()).toBe(0)
      } finally {
        await context.close()
      }
    },
  )
})
