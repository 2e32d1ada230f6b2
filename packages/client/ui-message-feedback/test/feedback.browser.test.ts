// Feedback in real Chromium against the real `dsh web` and the mock model: a like (then a note)
// on the last answer is logged as feedback/message; /feedback logs feedback/record; both event
// types reload after a restart of the host (registered with persistence); bad targets are refused.
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
import { lastFinalAnswer } from '../src/client/index.tsx'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

describe('lastFinalAnswer', () => {
  it('is the message that closed the last completed turn, never an interrupted one', () => {
    const ev = (seq: number, type: string, data: unknown = {}) => ({ seq, type, data })
    expect(
      lastFinalAnswer([
        ev(0, 'turn/start'),
        ev(1, 'assistant/message'),
        ev(2, 'assistant/message'),
        ev(3, 'turn/end'),
        ev(4, 'turn/start'),
        ev(5, 'assistant/message'),
      ]),
    ).toBe(2)
    expect(
      lastFinalAnswer([ev(0, 'turn/start'), ev(1, 'assistant/message', { interrupted: true }), ev(2, 'turn/end')]),
    ).toBeUndefined()
    expect(lastFinalAnswer([])).toBeUndefined()
  })
})

describe.skipIf(!hasChromium())('ui-message-feedback in the browser', () => {
  let app: WebApp
  let browser: Browser
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    app = await startWebApp({ steps: [{ text: 'Here is the answer.' }] as never })
    browser = await launchBrowser()
    ;({ page, errors } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })
  const sessionId = () => new URL(page.url()).pathname.split('/').pop()!
  const history = async () =>
    (
      await app.call<{ events: Array<{ seq: number; type: string; data: any }> }>('sessions.history', {
        sessionId: sessionId(),
      })
    ).events

  it('a like and a note on the last answer are recorded in the log; /feedback too; both reload', async () => {
    await withArtifacts(page, 'message-feedback', async () => {
      await page.locator('textarea.dsh-composer-input').fill('answer me')
      await page.locator('textarea.dsh-composer-input').press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Here is the answer.' }).waitFor()
      const section = page.locator('[data-message-feedback]')
      if (!(await section.isVisible()))
        await page.locator('.conversation-header button[aria-label], .conversation-header button').last().click()
      await section.waitFor()
      const answerSeq = (await history()).filter((e) => e.type === 'assistant/message').at(-1)!.seq
      expect(await section.getAttribute('data-message-feedback')).toBe(String(answerSeq))
      await section.locator('[data-feedback="like"]').click()
      await expect.poll(() => section.getAttribute('data-rating')).toBe('like')
      await section.locator('textarea').fill('clear and short')
      await section.locator('[data-feedback="note"]').click()
      await expect.poll(async () => (await history()).filter((e) => e.type === 'feedback/message').length).toBe(2)
      const logged = (await history()).filter((e) => e.type === 'feedback/message').map((e) => e.data)
      expect(logged).toEqual([
        { messageSeq: answerSeq, rating: 'like' },
        { messageSeq: answerSeq, rating: 'like', note: 'clear and short' },
      ])
      expect(await app.call('messageFeedback.list', { sessionId: sessionId() })).toMatchObject({
        feedback: [{ messageSeq: answerSeq, rating: 'like', note: 'clear and short' }],
      })
      const command = await app.call('commands.execute', {
        sessionId: sessionId(),
        line: '/feedback the tool cards are great',
      })
      expect(command).toMatchObject({ ok: true, output: expect.stringMatching(/^Thanks: feedback recorded/) })
      expect((await history()).filter((e) => e.type === 'feedback/record').map((e) => e.data)).toEqual([
        { text: 'the tool cards are great', source: 'command' },
      ])
      expect(errors).toEqual([])
      // A restarted host reloads the log with both event types.
      const id = sessionId()
      await app.restart()
      const reloaded = (
        await app.call<{ events: Array<{ type: string }> }>('sessions.history', { sessionId: id })
      ).events.map((e) => e.type)
      expect(reloaded.filter((t) => t === 'feedback/message')).toHaveLength(2)
      expect(reloaded).toContain('feedback/record')
    })
  })

  it('bad targets and an empty /feedback are refused with one-line reasons', async () => {
    const sid = (await app.call<{ sessions: Array<{ sessionId: string }> }>('sessions.list')).sessions[0].sessionId
    // Running a command loads the session (as a page streaming it does).
    const empty = await app.call('commands.execute', { sessionId: sid, line: '/feedback' })
    expect(empty).toMatchObject({ ok: false, error: { message: expect.stringMatching(/feedback text is empty/) } })
    const bad = await fetch(`${app.url.replace(/\/$/, '')}/api/messageFeedback.put`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sessionId: sid, messageSeq: 0, rating: 'like' }),
    })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(
      /^messageFeedback\.put: messageSeq: seq 0 of session .* is not an assistant message$/,
    )
  })
})
