// Images outside the composer, in real Chromium against the real `dsh web` and the mock model:
// a prompt with an image queued while a turn runs (the turn held at a gate of the mock) shows the
// image as a thumbnail in the queue, not its `[image sha256:… name]` token; the edit-and-resend
// field of a message with an image shows the thumbnail beside a text field without the token,
// and the resent message (in a fork) carries the image again.
import { createHash } from 'node:crypto'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, type Page, useWebApp, withArtifacts } from '@dsh/web-testkit'
import { png } from '@dsh/attachment/test-png'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

// The image files' common patch (ui-attachment's attachment and queued-edit, ui-tool's
// result-images: the same text, so they share one host of the worker): a model that accepts
// images, a text-only one, and a small attachment limit (the files that do not need them ignore them).
const PATCH = `- id: llm-deepseek
  config:
    models:
      - { id: deepseek-v4-flash, contextWindow: 1048576, supportsTools: true, supportsImages: true }
      - { id: text-only, contextWindow: 1048576, supportsTools: true }
- id: attachment-local
  config: { maxBytes: 20000 }
`
const STEPS = [
  // The first turn waits at its gate until the queued prompt has been seen.
  { events: [{ text: 'Working on it. ' }, { gate: 'hold' }, { text: 'First done.' }] },
  { text: 'Saw the queued image.' },
  { text: 'Saw the edited one.' },
]

type Events = { events: Array<{ type: string; data: any }> }

describe.skipIf(!hasChromium())('images in the queue and in edit-and-resend', () => {
  // The worker's host of this patch (shared with the other files that pass the same patch text),
  // with this file's script, gates, requests and folder.
  const app = useWebApp({ steps: STEPS as never, patch: PATCH })
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    ;({ page, errors } = await app.openPage())
  })
  const image = png(10, 10, { rgb: [200, 40, 40] })
  const hex = createHash('sha256').update(image).digest('hex')
  const token = `[image sha256:${hex} red.png]`
  const input = () => page.locator('textarea.dsh-composer-input')
  const sessionId = () => decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
  const humanTexts = async (id: string) =>
    (await app.call<Events>('sessions.history', { sessionId: id })).events
      .filter((e) => e.type === 'user/message' && (e.data.source?.kind ?? 'human') === 'human')
      .map((e) => e.data.content.map((b: any) => b.text ?? '').join(''))
  /** The natural widths of the loaded images under `selector` (0 until one has loaded). */
  const loadedWidths = (selector: string) =>
    page.locator(selector).evaluateAll((imgs) => imgs.map((i) => (i as HTMLImageElement).naturalWidth))

  it('a prompt with an image queued during a running turn shows a thumbnail, not the token', async () => {
    await withArtifacts(page, 'queued-image', async () => {
      await input().fill('Start a long job')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Working on it.' }).waitFor()
      // The turn is held at its gate: Enter now queues.
      await input().fill('and this? ')
      await input().press('End')
      await input().evaluate((el, b64) => {
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))
        const data = new DataTransfer()
        data.items.add(new File([bytes], 'red.png', { type: 'image/png' }))
        el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }))
      }, image.toString('base64'))
      await expect.poll(() => loadedWidths('form.dsh-composer .dsh-image-thumb img')).toEqual([10])
      await input().press('Enter')
      const queued = page.locator('[data-node="queued"]')
      await queued.waitFor()
      await expect.poll(() => loadedWidths('[data-node="queued"] .dsh-image-thumb img')).toEqual([10])
      expect(await queued.locator('.dsh-msg-bubble').textContent()).toBe('Queuedand this? ')
      await queued.getByRole('button', { name: 'View image red.png' }).click()
      await expect.poll(() => loadedWidths('[data-testid="image-viewer"] img')).toEqual([10])
      await page.keyboard.press('Escape')
      await page.getByTestId('image-viewer').waitFor({ state: 'detached' })
      // Released, the first turn ends and the queued prompt runs with its image.
      app.mock.release('hold')
      await page.locator('[data-node="assistant"]', { hasText: 'Saw the queued image.' }).waitFor()
      await queued.waitFor({ state: 'detached' })
      expect(await humanTexts(sessionId())).toEqual(['Start a long job', `${token} and this? `])
    })
  })

  it('edit and resend of a message with an image: a thumbnail beside the text, resent with the image', async () => {
    await withArtifacts(page, 'edit-image', async () => {
      // Whatever the test before saw, its turns have ended (a second release does nothing).
      app.mock.release('hold')
      await page.locator('[data-node="assistant"]', { hasText: 'Saw the queued image.' }).waitFor()
      const original = sessionId()
      const user = page.locator('[data-node="user"]', { hasText: 'and this?' })
      await user.hover()
      await user.getByRole('button', { name: 'Edit and resend' }).click()
      const editor = page.getByRole('textbox', { name: 'Edit your message' })
      // The field holds the text only; the image is a thumbnail of the form.
      expect(await editor.inputValue()).toBe('and this? ')
      await expect.poll(() => loadedWidths('form.dsh-msg-edit .dsh-image-thumb img')).toEqual([10])
      // Remove takes the image out of this edit only: cancelled and opened again, it is back.
      await page.getByRole('button', { name: 'Remove image red.png' }).click()
      expect(await page.locator('form.dsh-msg-edit .dsh-image-thumb').count()).toBe(0)
      await editor.press('Escape')
      await editor.waitFor({ state: 'detached' })
      await user.hover()
      await user.getByRole('button', { name: 'Edit and resend' }).click()
      await expect.poll(() => loadedWidths('form.dsh-msg-edit .dsh-image-thumb img')).toEqual([10])
      await editor.fill('what colour is it?')
      await editor.press('Enter')
      await expect.poll(sessionId).not.toBe(original)
      const fork = sessionId()
      await page.locator('[data-node="assistant"]', { hasText: 'Saw the edited one.' }).waitFor()
      expect((await humanTexts(fork)).at(-1)).toBe(`${token} what colour is it?`)
      // The model got the pixels of the resent message.
      const body = app.mock.requests[2].body as { messages: Array<{ role: string; content: unknown }> }
      expect(body.messages.filter((m) => m.role === 'user').at(-1)!.content).toEqual([
        { type: 'image_url', image_url: { url: `data:image/png;base64,${image.toString('base64')}` } },
        { type: 'text', text: ' what colour is it?' },
      ])
      await expect.poll(() => loadedWidths('[data-node="user"] .dsh-image-thumb img')).toEqual([10])
      expect(errors).toEqual([])
    })
  })
})
