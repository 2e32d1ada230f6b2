// The browser client in real Chromium against the real `dsh web` and the mock model: first run,
// a streamed answer, a reload mid-turn, keyboard-only use, the Chinese locale and the
// host-unreachable banner. One host and one browser for the file; each test takes a fresh page.
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
import { SHELL_ONLY_PATCH } from './shell-only.ts'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

const SLOW = ['Alpha ', 'beta ', 'gamma ', 'delta ', 'epsilon ', 'zeta ', 'eta ', 'theta.']
const slowSteps = (words: string[], delayMs: number) => ({
  events: words.flatMap((text, i) => (i === 0 ? [{ text }] : [{ delayMs }, { text }])),
})

let app: WebApp
let browser: Browser

beforeAll(async () => {
  app = await startWebApp({
    patch: SHELL_ONLY_PATCH,
    steps: [
      slowSteps(['Streaming ', 'in ', 'visible ', 'pieces.'], 250) as never,
      slowSteps(SLOW, 300) as never,
      { text: 'Typed without a mouse.' },
      // Reasoning deltas far enough apart that each is published on its own (DELTA_PUBLISH_MS).
      {
        events: [
          ...['Weighing ', 'the ', 'options ', 'one ', 'by ', 'one.'].flatMap((reasoning) => [
            { reasoning },
            { delayMs: 300 },
          ]),
          { text: 'Thought it through.' },
        ],
      } as never,
    ],
  })
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
})

const assistantTexts = (page: Page) => page.locator('[data-kind="assistant"] .body').allTextContents()
const composer = (page: Page) => page.locator('[data-composer="true"]')

describe.skipIf(!hasChromium())('dsh web in Chromium', () => {
  it('first run opens a session in the launch folder; the sidebar lists it; no console errors', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'first-run', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      const sessionId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
      await expect.poll(() => page.locator(`.session-item[data-session-id="${sessionId}"]`).count()).toBe(1)
      const group = page.locator('.session-group h3')
      await expect.poll(() => group.first().getAttribute('title')).toBe(app.cwd)
      await expect.poll(() => composer(page).count()).toBe(1)
      // A second visit to / reuses the empty session instead of making another.
      await page.goto(app.url)
      await page.waitForURL(/\/s\/[^/]+$/)
      expect(decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)).toBe(sessionId)
      expect((await app.call('sessions.list', {})).sessions).toHaveLength(1)
      // New session while the open session is still empty stays on it, decided at the click: no
      // request at all (a request answered after a prompt typed at once moved the page under it).
      let requests = 0
      await page.route('**/api/workspaces.create', (route) => (requests++, route.continue()))
      await page.route('**/api/sessions.create', (route) => (requests++, route.continue()))
      // A positive control: a request the page sends after the click. A request of the click's
      // own would have left within the click's task (openFreshSession calls fetch at once),
      // before this one reaches the route.
      let control!: () => void
      const controlSeen = new Promise<void>((resolve) => (control = resolve))
      await page.route('**/__after-click', (route) => (control(), route.fulfill({ status: 204 })))
      await page.locator('[data-testid="new-session"]').click()
      await page.evaluate(() => fetch('/__after-click').then(() => undefined))
      await controlSeen
      expect(requests).toBe(0)
      expect(decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)).toBe(sessionId)
      await page.unrouteAll()
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('a prompt streams its answer in increasing pieces', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'stream', async () => {
      await page.waitForURL(/\/s\//)
      // Every text the last assistant card shows, recorded in the page as the DOM changes: a
      // poll from here could miss a piece when the machine is busy (the pieces are 250 ms apart).
      await page.evaluate(() => {
        const seen: string[] = []
        ;(window as unknown as { __seen: string[] }).__seen = seen
        const record = () => {
          const bodies = document.querySelectorAll('[data-kind="assistant"] .body')
          const last = bodies[bodies.length - 1]?.textContent ?? ''
          if (last && seen[seen.length - 1] !== last) seen.push(last)
        }
        new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true })
      })
      await composer(page).fill('stream something')
      await composer(page).press('Enter')
      const final = 'Streaming in visible pieces.'
      await expect.poll(() => assistantTexts(page), { timeout: 20_000 }).toEqual([final])
      const seen = await page.evaluate(() => (window as unknown as { __seen: string[] }).__seen)
      expect(seen.at(-1)).toBe(final)
      // At least one partial text before the final one (an answer drawn only when complete would
      // leave one entry). Not two: under load (a five-run check beside a spinning core) two of
      // the four pieces 250 ms apart once reached the page in one publish.
      expect(seen.length).toBeGreaterThanOrEqual(2)
      for (const partial of seen) expect(final.startsWith(partial)).toBe(true)
      await expect.poll(() => page.locator('.msg-user .body').allTextContents()).toEqual(['stream something'])
      // The sidebar names the session by its first prompt once it has one.
      await expect.poll(() => page.locator('.session-item.active .title').textContent()).toBe('stream something')
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('a reload in the middle of a turn resumes it: every piece once, none lost', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'reload', async () => {
      // Clicked while the page's first-run session may still be opening: both are one session.
      await page.locator('[data-testid="new-session"]').click()
      await page.waitForURL(/\/s\/[^/]+$/)
      await expect.poll(() => composer(page).count()).toBe(1)
      await composer(page).fill('go slowly')
      await composer(page).press('Enter')
      await expect.poll(async () => (await assistantTexts(page)).at(-1) ?? '').toContain('beta')
      await page.reload()
      await page.waitForSelector('html[data-ready="true"]')
      await expect.poll(async () => await assistantTexts(page), { timeout: 20_000 }).toEqual([SLOW.join('')])
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('works from the keyboard alone: shortcuts under ?, a prompt typed and sent with Enter', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'keyboard', async () => {
      await page.waitForURL(/\/s\//)
      await page.keyboard.press('Alt+N')
      await page.keyboard.press('?')
      await expect.poll(() => page.locator('[data-testid="shortcuts"]').isVisible()).toBe(true)
      await page.keyboard.press('Escape')
      await expect.poll(() => page.locator('[data-testid="shortcuts"]').count()).toBe(0)
      // Tab until the composer has focus.
      let reached = false
      for (let i = 0; i < 60 && !reached; i++) {
        await page.keyboard.press('Tab')
        reached = await page.evaluate(() => document.activeElement?.getAttribute('data-composer') === 'true')
      }
      expect(reached).toBe(true)
      await page.keyboard.type('no mouse here')
      await page.keyboard.press('Enter')
      await expect.poll(async () => (await assistantTexts(page)).at(-1)).toBe('Typed without a mouse.')
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('switches sessions from the sidebar, and renames, forks and archives one', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'sidebar', async () => {
      await page.waitForURL(/\/s\//)
      const rows = page.locator('.session-item')
      // Switching: the session named by its first prompt shows its own conversation.
      await page.locator('.session-item a', { hasText: 'go slowly' }).click()
      await expect.poll(() => assistantTexts(page)).toEqual([SLOW.join('')])
      await page.locator('.session-item a', { hasText: 'stream something' }).click()
      await expect.poll(() => assistantTexts(page)).toEqual(['Streaming in visible pieces.'])
      const streamed = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
      const item = page.locator(`.session-item[data-session-id="${streamed}"]`)
      // Rename inline.
      await item.getByRole('button', { name: 'Session actions' }).click()
      await page.getByRole('menuitem', { name: 'Rename' }).click()
      await item.locator('input.rename').fill('Renamed by the test')
      await item.locator('input.rename').press('Enter')
      await expect.poll(() => item.locator('.title').textContent()).toBe('Renamed by the test')
      await expect.poll(() => page.locator('.session-title').textContent()).toBe('Renamed by the test')
      // Fork: a new session holding the same conversation opens.
      const before = await rows.count()
      await item.getByRole('button', { name: 'Session actions' }).click()
      await page.getByRole('menuitem', { name: 'Fork' }).click()
      await expect.poll(() => rows.count()).toBe(before + 1)
      await expect.poll(() => decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)).not.toBe(streamed)
      await expect.poll(() => assistantTexts(page)).toEqual(['Streaming in visible pieces.'])
      // Archive: gone from the sidebar (and from the host's default list).
      await item.getByRole('button', { name: 'Session actions' }).click()
      await page.getByRole('menuitem', { name: 'Archive' }).click()
      await expect.poll(() => item.count()).toBe(0)
      expect(
        (await app.call('sessions.list', {})).sessions.map((r: { sessionId: string }) => r.sessionId),
      ).not.toContain(streamed)
      // Two "New session" requests in one task (Alt+N twice) open one session, not two: with no
      // empty session left to reuse, both would otherwise create one.
      type Row = { sessionId: string; turns: number }
      const empties = async () => ((await app.call('sessions.list', {})).sessions as Row[]).filter((r) => r.turns === 0)
      for (const r of await empties()) await app.call('sessions.archive', { sessionId: r.sessionId, archived: true })
      const fromUrl = page.url()
      await page.evaluate(() => {
        for (let i = 0; i < 2; i++)
          window.dispatchEvent(new KeyboardEvent('keydown', { code: 'KeyN', key: 'n', altKey: true }))
      })
      await expect.poll(() => page.url()).not.toBe(fromUrl)
      await page.waitForTimeout(500) // anything a second request would create has been created by now
      const opened = await empties()
      expect(opened).toHaveLength(1)
      expect(decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)).toBe(opened[0]!.sessionId)
      // Search by title.
      await page.keyboard.press('/')
      await page.keyboard.type('go slow')
      await expect.poll(() => rows.count()).toBe(1)
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('speaks Chinese to a Chinese browser, switches language and theme from the footer, and remembers both', async () => {
    const { page, context, errors } = await openPage(browser, app.url, { locale: 'zh-CN' })
    await withArtifacts(page, 'locale', async () => {
      await expect.poll(() => page.locator('[data-testid="new-session"]').textContent()).toContain('新建会话')
      expect(await page.getAttribute('html', 'lang')).toBe('zh-CN')
      await page.locator('[data-testid="language"]').selectOption('en')
      await expect.poll(() => page.locator('[data-testid="new-session"]').textContent()).toContain('New session')
      // The theme follows the system until one is picked; the pick survives a reload.
      await page.emulateMedia({ colorScheme: 'dark' })
      await expect.poll(() => page.getAttribute('html', 'data-theme')).toBe('dark')
      await page.getByRole('combobox', { name: 'Theme' }).selectOption('light')
      await expect.poll(() => page.getAttribute('html', 'data-theme')).toBe('light')
      await page.reload()
      await page.waitForSelector('html[data-ready="true"]')
      expect(await page.getAttribute('html', 'data-theme')).toBe('light')
      await expect.poll(() => page.locator('[data-testid="new-session"]').textContent()).toContain('New session')
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('slot entries get the settled feed: streamed deltas alone re-render none of them, and `useT` keeps its identity', async () => {
    const sessionId = (await app.call('sessions.create', { cwd: app.cwd, title: 'settled' })).session.sessionId
    const { page, context, errors } = await openPage(browser, `${app.url}/s/${encodeURIComponent(sessionId)}`)
    await withArtifacts(page, 'settled-feed', async () => {
      await expect.poll(() => composer(page).count()).toBe(1)
      // A side-panel entry that records each render: the feed version it got, the type of that
      // feed's last event, and the identity of the runtime's `t`.
      await page.evaluate(async () => {
        const w = window as any
        // The page's own copy of the runtime (through its import map; eval keeps vitest from rewriting the import).
        // biome-ignore lint/security/noGlobalEval: a constant string run in the test page; written as code, vitest would rewrite the import to its own module graph
        const runtime = await (0, eval)("import('@dsh/client-runtime')")
        w.__renders = []
        w.__ts = new Set()
        w.__dsh.slots.register('panel.side', {
          id: 'render-probe',
          component: (props: any) => {
            w.__ts.add(runtime.useT('web'))
            const feed = props.feed
            w.__renders.push({ version: feed.version, last: feed.events[feed.lastSeq]?.type })
            return null
          },
        })
      })
      await composer(page).fill('think in steps')
      await composer(page).press('Enter')
      await expect
        .poll(async () => (await assistantTexts(page)).at(-1) ?? '', { timeout: 20_000 })
        .toBe('Thought it through.')
      await expect.poll(() => page.evaluate(() => (window as any).__renders.at(-1)?.last)).toBe('turn/end')
      const renders: Array<{ version: number; last?: string }> = await page.evaluate(() => (window as any).__renders)
      // Six reasoning deltas 300 ms apart are six publishes of the full feed; the settled feed
      // changes only with other events (a delta can share a frame with one at most at the start).
      const atDelta = new Set(renders.filter((r) => r.last === 'assistant/chunk').map((r) => r.version))
      expect(atDelta.size).toBeLessThanOrEqual(1)
      expect(new Set(renders.map((r) => r.version)).size).toBeGreaterThan(2)
      expect(await page.evaluate(() => (window as any).__ts.size)).toBe(1)
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('shows a banner while the host is unreachable and drops it when the host is back', async () => {
    const { page, context } = await openPage(browser, app.url)
    await withArtifacts(page, 'offline', async () => {
      await page.waitForURL(/\/s\//)
      expect(await page.locator('[data-testid="offline-banner"]').count()).toBe(0)
      expect(await app.stop()).toBe(0)
      await expect.poll(() => page.locator('[data-testid="offline-banner"]').count(), { timeout: 15_000 }).toBe(1)
      await app.restart()
      await expect.poll(() => page.locator('[data-testid="offline-banner"]').count(), { timeout: 15_000 }).toBe(0)
    })
    await context.close()
  })
})
