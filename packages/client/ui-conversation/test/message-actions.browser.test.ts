// Per-message actions in real Chromium against the real `dsh web` and the mock model: a user
// message and an answer each carry Copy (shown on hover or keyboard focus, with an accessible
// name); a user message that opened its turn also carries Retry and Edit and resend, which send
// the text (as it was, or edited) in a fork of the session taken before that turn and open the
// fork, leaving the original session as it was. One host and one page for the file; the mock
// serves its steps in the order the tests prompt.
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, type Page, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const STEPS = [
  { text: 'The first answer: four.' },
  // Retry (in a fork)
  { text: 'The retried answer: still four.' },
  // Edit and resend (in another fork)
  { text: 'The edited answer: six.' },
  // Code blocks
  { text: 'Two blocks:\n\n```ts\nconst answer: number = 6\n```\n\nand\n\n```\nplain  text\n  indented\n```\n' },
]

type Events = { events: Array<{ type: string; data: any }> }

describe.skipIf(!hasChromium())('per-message actions', () => {
  const web = useWebApp({ steps: STEPS as never })
  let page: Page
  let errors: string[]
  let original: string
  /** The session with two turns (an edited question, then code), set by the fork test. */
  let twoTurns: string
  beforeAll(async () => {
    const opened = await web.openPage()
    ;({ page, errors } = opened)
    await opened.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: web.url })
    await page.waitForURL(/\/s\/[^/]+$/)
    original = sessionId()
  })
  const sessionId = () => decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
  const input = () => page.locator('textarea[data-composer="true"]')
  const humanTexts = async (id: string) =>
    (await web.call<Events>('sessions.history', { sessionId: id })).events
      .filter((e) => e.type === 'user/message' && (e.data.source?.kind ?? 'human') === 'human')
      .map((e) => e.data.content.map((b: any) => b.text ?? '').join(''))
  const status = async (id: string) =>
    (await web.call('sessions.list', { cwd: web.cwd })).sessions.find((s: any) => s.sessionId === id)?.status
  const opacity = (selector: string) =>
    page
      .locator(selector)
      .first()
      .evaluate((el) => getComputedStyle(el).opacity)
  const clipboard = () => page.evaluate(() => navigator.clipboard.readText())

  it('Copy on a user message and on an answer: hidden until hover or focus, named, and copies the text', async () => {
    await withArtifacts(page, 'actions-copy', async () => {
      await input().fill('What is two plus two?')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'The first answer: four.' }).waitFor()
      await expect.poll(() => status(original)).toBe('idle')
      const user = page.locator('[data-node="user"]').first()
      const answer = page.locator('[data-node="assistant"]').first()
      // Not hovered, not focused: the actions are out of sight.
      await page.mouse.move(0, 0)
      await expect.poll(() => opacity('[data-actions="user"]')).toBe('0')
      await user.hover()
      await expect.poll(() => opacity('[data-actions="user"]')).toBe('1')
      await user.getByRole('button', { name: 'Copy message' }).click()
      await expect.poll(clipboard).toBe('What is two plus two?')
      await user.getByRole('button', { name: 'Copied' }).waitFor()
      await answer.hover()
      await answer.getByRole('button', { name: 'Copy answer' }).click()
      await expect.poll(clipboard).toBe('The first answer: four.')
    })
  })

  it('Retry, reached with the keyboard: the same text is sent in a fork, the original stays', async () => {
    await withArtifacts(page, 'actions-retry', async () => {
      await page.mouse.move(0, 0)
      await input().focus()
      // Shift+Tab walks back from the composer through the answer's and the message's actions.
      let found = false
      for (let i = 0; i < 20 && !found; i++) {
        await page.keyboard.press('Shift+Tab')
        found = await page.evaluate(() => document.activeElement?.getAttribute('aria-label') === 'Retry')
      }
      expect(found).toBe(true)
      // Focus inside the actions shows them.
      await expect.poll(() => opacity('[data-actions="user"]')).toBe('1')
      await page.keyboard.press('Enter')
      await expect.poll(sessionId).not.toBe(original)
      const fork = sessionId()
      await page.locator('[data-node="assistant"]', { hasText: 'The retried answer: still four.' }).waitFor()
      await expect.poll(() => status(fork)).toBe('idle')
      // The fork holds the message once, answered anew; the original is untouched.
      expect(await humanTexts(fork)).toEqual(['What is two plus two?'])
      expect(await page.locator('[data-node="user"]').count()).toBe(1)
      expect(await page.locator('[data-node="assistant"]').allTextContents()).not.toContain(
        expect.stringContaining('The first answer'),
      )
      expect(await humanTexts(original)).toEqual(['What is two plus two?'])
    })
  })

  it('Edit and resend: Enter sends the edited text in a fork; Esc cancels an edit', async () => {
    await withArtifacts(page, 'actions-edit', async () => {
      await page.goto(`${web.url}/s/${encodeURIComponent(original)}`)
      await page.waitForSelector('html[data-ready="true"]')
      const user = page.locator('[data-node="user"]').first()
      await user.hover()
      await user.getByRole('button', { name: 'Edit and resend' }).click()
      const editor = page.getByRole('textbox', { name: 'Edit your message' })
      expect(await editor.inputValue()).toBe('What is two plus two?')
      expect(await editor.evaluate((el) => el === document.activeElement)).toBe(true)
      await page.keyboard.press('Escape')
      await editor.waitFor({ state: 'detached' })
      expect(sessionId()).toBe(original)
      await user.hover()
      await user.getByRole('button', { name: 'Edit and resend' }).click()
      await editor.fill('What is three plus three?')
      await editor.press('Enter')
      await expect.poll(sessionId).not.toBe(original)
      const fork = sessionId()
      await page.locator('[data-node="assistant"]', { hasText: 'The edited answer: six.' }).waitFor()
      await expect.poll(() => status(fork)).toBe('idle')
      expect(await humanTexts(fork)).toEqual(['What is three plus three?'])
      expect(await humanTexts(original)).toEqual(['What is two plus two?'])
      expect(errors).toEqual([])
    })
  })

  it('code blocks in an answer: a language label and a named Copy per block that copies its code exactly', async () => {
    await withArtifacts(page, 'actions-code', async () => {
      await input().fill('Show me code')
      await input().press('Enter')
      const answer = page.locator('[data-node="assistant"]', { hasText: 'Two blocks:' })
      await answer.locator('[data-code-block]').nth(1).waitFor()
      expect(await answer.locator('[data-code-lang]').allTextContents()).toEqual(['TypeScript', 'Code'])
      await answer.getByRole('button', { name: 'Copy TypeScript code' }).click()
      await expect.poll(clipboard).toBe('const answer: number = 6')
      await answer.getByRole('button', { name: 'Copy code', exact: true }).focus()
      await page.keyboard.press('Enter')
      await expect.poll(clipboard).toBe('plain  text\n  indented')
      expect(errors).toEqual([])
    })
  })

  it('Fork from here on an earlier answer: a new session holding the log up to it, no model call', async () => {
    await withArtifacts(page, 'actions-fork', async () => {
      const source = sessionId()
      twoTurns = source
      await expect.poll(() => status(source)).toBe('idle')
      const requests = web.mock.requests.length
      // The answer that closed the first of this session's two turns.
      const answer = page.locator('[data-node="assistant"]', { hasText: 'The edited answer: six.' })
      await answer.hover()
      await answer.getByRole('button', { name: 'Fork from here' }).click()
      await expect.poll(sessionId).not.toBe(source)
      const fork = sessionId()
      await page.locator('[data-node="assistant"]', { hasText: 'The edited answer: six.' }).waitFor()
      expect(await humanTexts(fork)).toEqual(['What is three plus three?'])
      expect(await page.locator('[data-node="assistant"]', { hasText: 'Two blocks:' }).count()).toBe(0)
      expect(await humanTexts(source)).toEqual(['What is three plus three?', 'Show me code'])
      expect(web.mock.requests.length).toBe(requests)
      expect(errors).toEqual([])
    })
  })

  it('Like and Dislike on any answer, not only the last (ui-message-feedback in the action bar)', async () => {
    await withArtifacts(page, 'actions-rating', async () => {
      await page.goto(`${web.url}/s/${encodeURIComponent(twoTurns)}`)
      await page.waitForSelector('html[data-ready="true"]')
      const events = (await web.call<Events>('sessions.history', { sessionId: twoTurns })).events as Array<{
        seq: number
        type: string
        data: any
      }>
      const first = events.find((e) => e.type === 'assistant/message')!.seq
      // The first of two answers: the side panel rates only the last one.
      const answer = page.locator('[data-node="assistant"]', { hasText: 'The edited answer: six.' })
      const rating = answer.locator('[data-answer-rating]')
      await answer.hover()
      await answer.getByRole('button', { name: 'Like this answer', exact: true }).click()
      await expect.poll(() => rating.getAttribute('data-answer-rating')).toBe('like')
      expect(
        await answer
          .getByRole('button', { name: 'Liked (press to withdraw)', exact: true })
          .getAttribute('aria-pressed'),
      ).toBe('true')
      const logged = async () =>
        (await web.call<Events>('sessions.history', { sessionId: twoTurns })).events
          .filter((e) => e.type === 'feedback/message')
          .map((e) => e.data)
      expect(await logged()).toEqual([{ messageSeq: first, rating: 'like' }])
      // Pressed again: withdrawn.
      await answer.getByRole('button', { name: 'Liked (press to withdraw)', exact: true }).click()
      await expect.poll(() => rating.getAttribute('data-answer-rating')).toBe('none')
      expect(await logged()).toEqual([
        { messageSeq: first, rating: 'like' },
        { messageSeq: first, rating: 'none' },
      ])
      expect(errors).toEqual([])
    })
  })
})
