// Images in tool results, in real Chromium against the real `dsh web` and the scripted mock model:
// the model calls `read_image` (@dsh/tool-fs) on a PNG of the project; the tool card draws the
// returned image as a thumbnail (from the log's image block, not a count), which opens the same
// viewer as a message's images; Escape closes it and the focus goes back to the thumbnail.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, type Page, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

// A 5x3 red PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAUAAAADCAIAAADUVFKvAAAAEElEQVR4nGM4oaGBjBgI8AGTXxBpHG7gNQAAAABJRU5ErkJggg=='
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
const STEPS = [{ toolCalls: [{ name: 'read_image', arguments: { file_path: 'red.png' } }] }, { text: 'It is red.' }]

describe.skipIf(!hasChromium())('images in tool results', () => {
  // The worker's host of this patch (shared with the other files that pass the same patch text),
  // with this file's script and folder.
  const app = useWebApp({ steps: STEPS as never, patch: PATCH })
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    writeFileSync(join(app.cwd, 'red.png'), Buffer.from(PNG, 'base64'))
    ;({ page, errors } = await app.openPage())
  })
  const loadedWidths = (selector: string) =>
    page.locator(selector).evaluateAll((imgs) => imgs.map((i) => (i as HTMLImageElement).naturalWidth))

  it('draws a read_image result as a thumbnail that opens the viewer', async () => {
    await withArtifacts(page, 'tool-result-images', async () => {
      const input = page.locator('textarea.dsh-composer-input')
      await input.fill('What colour is red.png?')
      await input.press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'It is red.' }).waitFor()
      const card = page.locator('.dsh-tool[data-tool="read_image"]')
      await expect.poll(() => card.getAttribute('class')).toContain('dsh-tool-done')
      // Drawn under the header of the (collapsed) card, from the result's image block.
      await expect.poll(() => loadedWidths('.dsh-tool[data-tool="read_image"] .dsh-image-thumb img')).toEqual([5])
      expect(await card.locator('.dsh-image-thumb img').getAttribute('src')).toBe(`data:image/png;base64,${PNG}`)
      expect(await card.getByRole('list', { name: 'Images the tool returned' }).count()).toBe(1)
      // Drawn, not counted.
      expect(await card.getByText('1 image(s)').count()).toBe(0)
      await card.getByRole('button', { name: 'View image PNG 1' }).click()
      const viewer = page.getByTestId('image-viewer')
      await expect.poll(() => loadedWidths('[data-testid="image-viewer"] img')).toEqual([5])
      expect(await viewer.getByRole('heading').textContent()).toBe('PNG 1')
      await page.keyboard.press('Escape')
      await viewer.waitFor({ state: 'detached' })
      await expect
        .poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label')))
        .toBe('View image PNG 1')
      expect(errors).toEqual([])
    })
  })
})
