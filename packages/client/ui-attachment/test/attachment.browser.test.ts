// Images in real Chromium against the real `dsh web` and the mock model: a pasted PNG is stored
// and reaches the request as an image block for a model that accepts images, and as a one-line
// description for one that does not; an image over the limit and a non-image file are refused
// with the host's reason and the composer text is kept.
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
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
import { png } from '@dsh/attachment/test-png'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const PATCH = `- id: llm-deepseek
  config:
    models:
      - { id: deepseek-v4-flash, contextWindow: 1048576, supportsTools: true, supportsImages: true }
      - { id: text-only, contextWindow: 1048576, supportsTools: true }
- id: attachment-local
  config: { maxBytes: 20000 }
`
const STEPS = [{ text: 'A red square.' }, { text: 'I cannot see it.' }]

describe.skipIf(!hasChromium())('ui-attachment in the browser', () => {
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
  const paste = (base64: string, name: string, type: string) =>
    page.locator('textarea.dsh-composer-input').evaluate(
      (el, [b64, fileName, mime]) => {
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))
        const data = new DataTransfer()
        data.items.add(new File([bytes], fileName, { type: mime }))
        el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }))
      },
      [base64, name, type],
    )
  const messages = (i: number) =>
    (app.mock.requests[i].body as { messages: Array<{ role: string; content: unknown }> }).messages

  it('a pasted PNG is stored and reaches the request as an image block', async () => {
    await withArtifacts(page, 'attachment-paste', async () => {
      const image = png(16, 16)
      await input().fill('What is this? ')
      await input().press('End')
      await paste(image.toString('base64'), 'square.png', 'image/png')
      await expect
        .poll(() => input().inputValue())
        .toMatch(/^What is this\? \[image sha256:[0-9a-f]{64} square\.png\] $/)
      const hex = /sha256:([0-9a-f]{64})/.exec(await input().inputValue())![1]
      expect(readdirSync(join(app.home, '.dsh', 'attachments', 'v1', 'objects', hex.slice(0, 2)))).toEqual([hex])
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'A red square.' }).waitFor()
      const user = messages(0)
        .filter((m) => m.role === 'user')
        .at(-1)!
      expect(user.content).toEqual([
        { type: 'text', text: 'What is this? ' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${image.toString('base64')}` } },
      ])
      // The log keeps the reference, not the pixels.
      const { events } = await app.call('sessions.history', { sessionId: sessionId() })
      const logged = events.filter((e: any) => e.type === 'user/message' && e.data.source.kind === 'human').at(-1)
      expect(logged.data.content[0].text).toBe(`What is this? [image sha256:${hex} square.png] `)
    })
  })

  it('a model without image input gets a description instead', async () => {
    await withArtifacts(page, 'attachment-text-only', async () => {
      await app.call('sessions.setModel', { sessionId: sessionId(), model: 'deepseek-official/text-only' })
      await input().fill('And now?')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'I cannot see it.' }).waitFor()
      const body = JSON.stringify(messages(1))
      expect(body).not.toContain('image_url')
      expect(body).toContain(
        '[image square.png: an image the user attached; the current model (deepseek-official/text-only) cannot see images, so only its name is given]',
      )
    })
  })

  it('an image over the limit and a non-image file are refused; the text stays', async () => {
    await withArtifacts(page, 'attachment-refused', async () => {
      await input().fill('keep me')
      await paste(png(100, 100, { noise: true }).toString('base64'), 'big.png', 'image/png')
      await expect
        .poll(() => page.locator('[data-attachment-status="error"]').textContent())
        .toMatch(/^big\.png: the image is over the limit of 20000 bytes/)
      expect(await input().inputValue()).toBe('keep me')
      await page.locator('[data-attachment-status] button').click()
      await paste(Buffer.from('just some notes\n').toString('base64'), 'notes.txt', 'text/plain')
      await expect
        .poll(() => page.locator('[data-attachment-status="error"]').textContent())
        .toMatch(/^notes\.txt: not a PNG, JPEG, GIF or WebP image/)
      expect(await input().inputValue()).toBe('keep me')
      expect(app.mock.requests).toHaveLength(2)
      expect(
        errors.filter((e) => !/Failed to load resource: the server responded with a status of 41[35]/.test(e)),
      ).toEqual([])
    })
  })
})
