// Images in real Chromium against the real `dsh web` and the mock model: an image attached with
// the composer's button, pasted or dropped is stored, shows as a thumbnail in the composer (the
// token stays out of the text) and in the sent message, opens in a viewer that Escape closes, and
// reaches the request as an image block for a model that accepts images, and as a one-line
// description for one that does not; an image over the limit and a non-image file are refused
// with the host's reason and the composer text is kept.
import { createHash } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, type Page, useWebApp, withArtifacts } from '@dsh/web-testkit'
import { png } from '@dsh/attachment/test-png'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

// The image files' common patch (this file, queued-edit and ui-tool's result-images: the same text,
// so they share one host of the worker).
const PATCH = `- id: llm-deepseek
  config:
    models:
      - { id: deepseek-v4-flash, contextWindow: 1048576, supportsTools: true, supportsImages: true }
      - { id: text-only, contextWindow: 1048576, supportsTools: true }
- id: attachment-local
  config: { maxBytes: 20000 }
`
const STEPS = [{ text: 'A small blue square.' }, { text: 'A red square.' }, { text: 'I cannot see it.' }]

describe.skipIf(!hasChromium())('ui-attachment in the browser', () => {
  // The worker's host of this patch, with this file's script, requests and folder.
  const app = useWebApp({ steps: STEPS as never, patch: PATCH })
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    ;({ page, errors } = await app.openPage())
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
  const composerThumbs = () => page.locator('form.dsh-composer .dsh-image-thumb')
  /** The natural widths of the loaded images under `selector` (0 until one has loaded). */
  const loadedWidths = (selector: string) =>
    page.locator(selector).evaluateAll((imgs) => imgs.map((i) => (i as HTMLImageElement).naturalWidth))
  const viewer = () => page.getByTestId('image-viewer')

  it('an image attached with the button shows as a thumbnail, is sent, and opens in the viewer', async () => {
    await withArtifacts(page, 'attachment-button', async () => {
      const image = png(12, 12, { rgb: [30, 60, 200] })
      await input().fill('Which colour? ')
      // The button opens the file dialog (its hidden file input); the file chosen there is uploaded.
      const [chooser] = await Promise.all([
        page.waitForEvent('filechooser'),
        page.getByRole('button', { name: 'Attach images' }).click(),
      ])
      expect(chooser.isMultiple()).toBe(true)
      await chooser.setFiles({ name: 'blue.png', mimeType: 'image/png', buffer: image })
      // A thumbnail in the composer, served by the host; the token stays out of the text.
      await expect.poll(() => loadedWidths('form.dsh-composer .dsh-image-thumb img')).toEqual([12])
      expect(await input().inputValue()).toBe('Which colour? ')
      // The viewer opens from the thumbnail and Escape closes it, the focus back on the thumbnail.
      await page.getByRole('button', { name: 'View image blue.png' }).click()
      await expect.poll(() => loadedWidths('[data-testid="image-viewer"] img')).toEqual([12])
      expect(await viewer().getByRole('heading').textContent()).toBe('blue.png')
      await page.keyboard.press('Escape')
      await viewer().waitFor({ state: 'detached' })
      // The viewer hands the focus back on the next animation frame after it closed.
      await expect
        .poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label')))
        .toBe('View image blue.png')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'A small blue square.' }).waitFor()
      const hex = createHash('sha256').update(image).digest('hex')
      const user = messages(0)
        .filter((m) => m.role === 'user')
        .at(-1)!
      expect(user.content).toEqual([
        { type: 'image_url', image_url: { url: `data:image/png;base64,${image.toString('base64')}` } },
        { type: 'text', text: ' Which colour? ' },
      ])
      const { events } = await app.call('sessions.history', { sessionId: sessionId() })
      const logged = events.filter((e: any) => e.type === 'user/message' && e.data.source.kind === 'human').at(-1)
      expect(logged.data.content[0].text).toBe(`[image sha256:${hex} blue.png] Which colour? `)
      // The composer is empty again; the sent message shows the image, not the token.
      expect(await composerThumbs().count()).toBe(0)
      const sent = page.locator('[data-node="user"]').last()
      expect(await sent.locator('.dsh-msg-bubble').textContent()).toBe('Which colour? ')
      await expect.poll(() => loadedWidths('[data-node="user"] .dsh-image-thumb img')).toEqual([12])
      await sent.getByRole('button', { name: 'View image blue.png' }).click()
      await expect.poll(() => loadedWidths('[data-testid="image-viewer"] img')).toEqual([12])
      await page.keyboard.press('Escape')
      await viewer().waitFor({ state: 'detached' })
    })
  })

  it('a pasted PNG is stored and reaches the request as an image block', async () => {
    await withArtifacts(page, 'attachment-paste', async () => {
      const image = png(16, 16)
      await input().fill('What is this? ')
      await input().press('End')
      await paste(image.toString('base64'), 'square.png', 'image/png')
      await expect.poll(() => loadedWidths('form.dsh-composer .dsh-image-thumb img')).toEqual([16])
      expect(await input().inputValue()).toBe('What is this? ')
      const hex = createHash('sha256').update(image).digest('hex')
      // Stored by its hash in the host's store (which other files of the host may share).
      expect(readdirSync(join(app.home, '.dsh', 'attachments', 'v1', 'objects', hex.slice(0, 2)))).toContain(hex)
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'A red square.' }).waitFor()
      const user = messages(1)
        .filter((m) => m.role === 'user')
        .at(-1)!
      expect(user.content).toEqual([
        { type: 'image_url', image_url: { url: `data:image/png;base64,${image.toString('base64')}` } },
        { type: 'text', text: ' What is this? ' },
      ])
      // The log keeps the reference, not the pixels.
      const { events } = await app.call('sessions.history', { sessionId: sessionId() })
      const logged = events.filter((e: any) => e.type === 'user/message' && e.data.source.kind === 'human').at(-1)
      expect(logged.data.content[0].text).toBe(`[image sha256:${hex} square.png] What is this? `)
    })
  })

  it('a model without image input gets a description instead', async () => {
    await withArtifacts(page, 'attachment-text-only', async () => {
      await app.call('sessions.setModel', { sessionId: sessionId(), model: 'deepseek-official/text-only' })
      await input().fill('And now?')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'I cannot see it.' }).waitFor()
      const body = JSON.stringify(messages(2))
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
      expect(app.mock.requests).toHaveLength(3)
      expect(
        errors.filter((e) => !/Failed to load resource: the server responded with a status of 41[35]/.test(e)),
      ).toEqual([])
    })
  })

  it('a dropped image shows as a thumbnail that Remove takes away again', async () => {
    await withArtifacts(page, 'attachment-drop', async () => {
      await input().fill('dropped: ')
      await input().evaluate((el, b64) => {
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))
        const data = new DataTransfer()
        data.items.add(new File([bytes], 'drop.png', { type: 'image/png' }))
        el.dispatchEvent(new DragEvent('dragover', { dataTransfer: data, bubbles: true, cancelable: true }))
        el.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }))
      }, png(8, 8).toString('base64'))
      await expect.poll(() => loadedWidths('form.dsh-composer .dsh-image-thumb img')).toEqual([8])
      expect(await input().inputValue()).toBe('dropped: ')
      await page.getByRole('button', { name: 'Remove image drop.png' }).click()
      expect(await composerThumbs().count()).toBe(0)
      expect(await input().inputValue()).toBe('dropped: ')
    })
  })
})
