// Browser notifications (a finished turn, a question, an approval) in real Chromium against the
// real `dsh web` (web bundle rows desktop-notifications + ui-notifications) and the scripted mock
// model. A page-side hook, installed before the app loads, wraps `Notification` (recording each
// one shown and each permission request) and lets the test mark the page hidden (headless
// Chromium always reports its pages visible). The browser's permission is granted through the
// browser context.
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  hasChromium,
  launchBrowser,
  startWebApp,
  withArtifacts,
  type Browser,
  type BrowserContext,
  type Page,
  type WebApp,
} from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const ASK_USER = fileURLToPath(new URL('../../../interaction/tool-ask-user/dist/index.js', import.meta.url))

const STEPS = [
  { text: 'Seen while visible.' },
  { text: 'All   tests\npass now.' },
  {
    toolCalls: [
      {
        name: 'ask_user_question',
        arguments: { questions: [{ id: 'db', question: 'Which database should I migrate?' }] },
      },
    ],
  },
  {
    toolCalls: [
      {
        name: 'bash',
        arguments: {
          command: 'echo deploy-now',
          description: 'Deploy',
          sandbox_escalation: { justification: 'needs the network' },
        },
      },
    ],
  },
  { text: 'Nobody is told.' },
]

// Page code as a string (this file is checked without the DOM library's globals in scope).
const HOOK = `
(() => {
  const Real = window.Notification
  const notes = (window.__notes = [])
  window.__asks = 0
  window.__focus = 0
  class Hooked extends Real {
    constructor(title, options) {
      super(title, options)
      notes.push({ title, body: options && options.body, tag: options && options.tag, note: this })
    }
    static get permission() { return Real.permission }
    static requestPermission(...args) { window.__asks++; return Real.requestPermission(...args) }
  }
  window.Notification = Hooked
  let hidden = false
  Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') })
  Object.defineProperty(document, 'hidden', { configurable: true, get: () => hidden })
  window.__setHidden = (value) => { hidden = value; document.dispatchEvent(new Event('visibilitychange')) }
  const focus = window.focus.bind(window)
  window.focus = () => { window.__focus++; focus() }
})()
`

describe.skipIf(!hasChromium())('ui-notifications in the browser', () => {
  let app: WebApp
  let browser: Browser
  let context: BrowserContext
  let page: Page
  const errors: string[] = []
  beforeAll(async () => {
    app = await startWebApp({
      steps: STEPS as never,
      patch: `- insert:\n    - id: tool-ask-user\n      name: ${JSON.stringify(ASK_USER)}\n`,
    })
    browser = await launchBrowser()
    context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } })
    await context.addInitScript({ content: HOOK })
    page = await context.newPage()
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text())
    })
    page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
    await page.goto(app.url)
    await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 })
    await page.waitForURL(/\/s\/[^/]+$/)
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })
  const input = () => page.locator('textarea.dsh-composer-input')
  const toggle = () => page.locator('input[data-notifications]')
  const heard = () => page.locator('[data-notifications-heard]').getAttribute('data-notifications-heard')
  const notes = () =>
    page.evaluate('window.__notes.map((n) => ({ title: n.title, body: n.body, tag: n.tag }))') as Promise<
      { title: string; body: string; tag: string }[]
    >

  it('asks for the permission only when the switch is flipped, never at load', async () => {
    await withArtifacts(page, 'notifications-permission', async () => {
      await toggle().waitFor()
      expect(await toggle().getAttribute('data-notifications')).toBe('off')
      expect(await page.evaluate('window.__asks')).toBe(0)
      // Headless Chromium answers the prompt by itself (not granted): the switch stays off.
      await toggle().click()
      await expect.poll(() => page.evaluate('window.__asks')).toBe(1)
      await expect.poll(() => toggle().isDisabled()).toBe(false)
      expect(await toggle().isChecked()).toBe(false)
      // Granted in the browser: flipping the switch now turns notifications on without asking again.
      await context.grantPermissions(['notifications'], { origin: app.url })
      await toggle().click()
      await expect.poll(() => toggle().getAttribute('data-notifications')).toBe('on')
      expect(await page.evaluate('window.__asks')).toBe(1)
      expect(await page.evaluate(`localStorage.getItem('dsh.notifications')`)).toBe('on')
    })
  })

  it('shows nothing while the page is visible, and a finished turn of a hidden page; clicking opens the session', async () => {
    await withArtifacts(page, 'notifications-turn', async () => {
      const first = new URL(page.url()).pathname
      await input().fill('look at it')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Seen while visible.' }).waitFor()
      // The page heard the turn's end (positive control) and showed nothing: it was visible.
      await expect.poll(heard).toBe('1')
      expect(await notes()).toEqual([])

      // Another session works while the tab is hidden.
      const { session } = await app.call<{ session: { sessionId: string } }>('sessions.create', {
        cwd: app.cwd,
        title: 'Nightly tests',
      })
      await page.evaluate('window.__setHidden(true)')
      await app.call('sessions.prompt', { sessionId: session.sessionId, text: 'run the tests' })
      await expect.poll(notes, { timeout: 20_000 }).toHaveLength(1)
      expect((await notes())[0]).toEqual({
        title: 'dsh: turn finished · Nightly tests',
        body: 'All tests pass now.',
        tag: `dsh:${session.sessionId}:turn-end`,
      })
      expect(new URL(page.url()).pathname).toBe(first)
      // Clicking the notification focuses the tab and opens the session it is about.
      await page.evaluate(`window.__notes[0].note.dispatchEvent(new Event('click'))`)
      await page.waitForURL((url) => url.pathname === `/s/${encodeURIComponent(session.sessionId)}`)
      expect(await page.evaluate('window.__focus')).toBe(1)

      // A question waiting in a hidden tab notifies too.
      await app.call('sessions.prompt', { sessionId: session.sessionId, text: 'pick one' })
      await expect.poll(notes, { timeout: 20_000 }).toHaveLength(2)
      expect((await notes())[1]).toEqual({
        title: 'dsh has a question · Nightly tests',
        body: 'Which database should I migrate?',
        tag: `dsh:${session.sessionId}:question`,
      })

      // So does an approval (a sandboxed session whose command asks to leave the sandbox).
      const deploy = (
        await app.call<{ session: { sessionId: string } }>('sessions.create', { cwd: app.cwd, title: 'Deploy' })
      ).session.sessionId
      await app.call('sessions.setPermissionMode', { sessionId: deploy, mode: 'workspace-write' })
      await app.call('sessions.prompt', { sessionId: deploy, text: 'deploy it' })
      await expect.poll(notes, { timeout: 20_000 }).toHaveLength(3)
      expect((await notes())[2]).toMatchObject({
        title: 'dsh needs your approval · Deploy',
        body: expect.stringContaining('echo deploy-now'),
        tag: `dsh:${deploy}:approval`,
      })
      expect(errors).toEqual([])
    })
  })

  it('turned off, a hidden page shows nothing', async () => {
    await withArtifacts(page, 'notifications-off', async () => {
      await page.evaluate('window.__setHidden(false)')
      await toggle().click()
      await expect.poll(() => toggle().getAttribute('data-notifications')).toBe('off')
      expect(await page.evaluate(`localStorage.getItem('dsh.notifications')`)).toBe(null)
      await page.evaluate('window.__setHidden(true)')
      const before = Number(await heard())
      const { session } = await app.call<{ session: { sessionId: string } }>('sessions.create', { cwd: app.cwd })
      await app.call('sessions.prompt', { sessionId: session.sessionId, text: 'one more' })
      await expect.poll(async () => Number(await heard()), { timeout: 20_000 }).toBe(before + 1)
      expect(await notes()).toHaveLength(3)
    })
  })
})
