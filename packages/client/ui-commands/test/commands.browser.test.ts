// The `/` command menu in real Chromium against the real `dsh web` and the mock model: `/` lists
// every registered command with its arguments, typing filters it, ↓/Enter pick, Esc closes; Enter
// on `/compact` runs the compaction through commands.execute (no model turn) and the log shows it;
// a failing command shows its error and keeps nothing half-done; text that is not a listed command
// still goes to the model.
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

const PATCH = `- id: compaction
  config: { keepRecentTokens: 1, pinHead: false }
`
const STEPS = [
  { text: 'The first answer, about apples and their many varieties.' },
  { text: 'The second answer, about pears.' },
  // The /compact summary request.
  { text: 'Summary: the user asked about apples, then about pears; both were answered.' },
  // "/usr/bin/env" is not a command line: it reaches the model.
  { text: 'That is a path.' },
  // The second /compact, sent while the menu still waits for the command list.
  { text: 'Summary: the user asked about a path.' },
]

describe.skipIf(!hasChromium())('ui-commands in the browser', () => {
  let app: WebApp
  let browser: Browser
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    app = await startWebApp({ steps: STEPS as never, patch: PATCH })
    browser = await launchBrowser()
    ;({ page, errors } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })
  const input = () => page.locator('textarea.dsh-composer-input')
  const sessionId = () => new URL(page.url()).pathname.split('/').pop()!
  const history = async () =>
    (await app.call<{ events: Array<{ type: string; data: any }> }>('sessions.history', { sessionId: sessionId() }))
      .events

  it('"/" lists every command with its arguments; typing filters; Esc closes', async () => {
    await withArtifacts(page, 'commands-menu', async () => {
      const listed = (await app.call<{ commands: Array<{ name: string }> }>('commands.list')).commands.map(
        (c) => c.name,
      )
      expect(listed).toContain('compact')
      await input().click()
      await page.keyboard.type('/')
      const items = page.locator('[data-trigger-menu="/"] [data-trigger-item]')
      await expect.poll(() => items.count()).toBe(listed.length)
      expect(await page.locator('[data-trigger-item="compact"] .label').textContent()).toBe('/compact [focus]')
      expect(await page.locator('[data-trigger-item="compact"] .detail').textContent()).toMatch(/Summarize/)
      await page.keyboard.type('comp')
      await expect.poll(async () => await items.first().getAttribute('data-trigger-item')).toBe('compact')
      await page.keyboard.press('Escape')
      await expect.poll(() => page.locator('[data-trigger-menu]').count()).toBe(0)
      // Esc closed the menu; the text is untouched.
      expect(await input().inputValue()).toBe('/comp')
      await input().fill('')
    })
  })

  it('/compact picked from the menu runs without a model turn and compacts the log', async () => {
    await withArtifacts(page, 'commands-compact', async () => {
      for (const [text, answer] of [
        ['Tell me about apples', 'apples and their'],
        ['And pears?', 'about pears'],
      ]) {
        await input().fill(text)
        await input().press('Enter')
        await page.locator('[data-node="assistant"]', { hasText: answer }).waitFor()
      }
      await expect.poll(async () => (await app.call('sessions.list')).sessions[0].status).toBe('idle')
      const requestsBefore = app.mock.requests.length
      await input().click()
      await page.keyboard.type('/comp')
      await page.locator('[data-trigger-item="compact"]').click()
      expect(await input().inputValue()).toBe('/compact ')
      await input().press('Enter')
      await expect.poll(() => page.locator('[data-command-result]').getAttribute('data-command-result')).toBe('ok')
      expect(await page.locator('[data-command-result] pre').textContent()).toMatch(/^Compacted the conversation/)
      expect(await input().inputValue()).toBe('')
      // One request (the summary), no turn.
      expect(app.mock.requests.length).toBe(requestsBefore + 1)
      const events = await history()
      expect(events.some((e) => e.type === 'surface/replace')).toBe(true)
      expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(2)
      await page.locator('[data-command-result] button').click()
    })
  })

  it('a failing command shows its error and gives the line back; a path is not a command and reaches the model', async () => {
    await withArtifacts(page, 'commands-errors', async () => {
      await input().fill('/goal --rounds many')
      await input().press('Enter')
      await expect.poll(() => page.locator('[data-command-result]').getAttribute('data-command-result')).toBe('error')
      expect(await page.locator('[data-command-result] pre').textContent()).toMatch(
        /--rounds must be a positive whole number/,
      )
      expect(await input().inputValue()).toBe('/goal --rounds many')
      await page.locator('[data-command-result] button').click()
      await input().fill('/usr/bin/env')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'That is a path.' }).waitFor()
      expect(await page.locator('[data-command-result]').count()).toBe(0)
      expect(errors).toEqual([])
    })
  })

  it('Enter on a command line runs it even while the menu still waits for the list', async () => {
    await withArtifacts(page, 'commands-loading-menu', async () => {
      // Hold the menu's fresh read of the list (a "/" alone re-reads it), so the menu is open and
      // loading with no candidates when Enter comes: on a loaded machine this window is real.
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      let asked!: () => void
      const listAsked = new Promise<void>((resolve) => (asked = resolve))
      let passed: Promise<void> = Promise.resolve()
      await page.route('**/api/commands.list', (route) => {
        asked()
        passed = held.then(() => route.continue())
        return passed
      })
      try {
        const usersBefore = await page.locator('[data-node="user"]').count()
        await input().click()
        await page.keyboard.type('/')
        await listAsked
        await page.keyboard.type('compact')
        await page.locator('[data-trigger-menu="/"]').waitFor()
        expect(await page.locator('[data-trigger-menu="/"] [data-trigger-item]').count()).toBe(0)
        await input().press('Enter')
        await page.locator('[data-command-result]').waitFor({ timeout: 15_000 })
        expect(await input().inputValue()).toBe('')
        await expect.poll(() => page.locator('[data-command-result]').getAttribute('data-command-result')).toBe('ok')
        expect(await page.locator('[data-node="user"]').count()).toBe(usersBefore)
        expect(await page.locator('[data-trigger-menu="/"]').count()).toBe(0)
        await page.locator('[data-command-result] button').click()
      } finally {
        release()
        await passed
        await page.unroute('**/api/commands.list')
      }
    })
  })
})
