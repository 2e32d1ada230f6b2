// Image blocks from another surface, in real Chromium against the real `dsh web`: an ACP client
// (the official SDK's client side, driving the real `dsh-acp` bin in the same DSH_HOME) sends a
// prompt with an image block; the session, opened in `dsh web`, shows that image as a thumbnail
// in the user message (drawn from the log, not from `/attachments`), and the thumbnail opens the
// viewer with the full image, which Escape closes. Retry and edit-and-resend of that message send
// its image again: the model receives an `image_url` block in the fork.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { initialize, startAcp } from '@dsh/cli-testkit/acp'
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

// A 5x3 red PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAUAAAADCAIAAADUVFKvAAAAEElEQVR4nGM4oaGBjBgI8AGTXxBpHG7gNQAAAABJRU5ErkJggg=='
const PATCH = `- id: llm-deepseek
  config:
    models:
      - { id: deepseek-v4-flash, contextWindow: 1048576, supportsTools: true, supportsImages: true }
- id: acp
  config: { promptImages: true }
`

describe.skipIf(!hasChromium())('image blocks of a message from an ACP client', () => {
  let app: WebApp
  let browser: Browser
  let page: Page
  let errors: string[]
  let sessionId: string
  beforeAll(async () => {
    app = await startWebApp({
      steps: [{ text: 'A red rectangle.' }, { text: 'Retried: red.' }, { text: 'Edited: still red.' }],
      patch: PATCH,
    })
    const acp = await startAcp(
      {
        DSH_HOME: join(app.home, '.dsh'),
        HOME: app.home,
        DEEPSEEK_BASE_URL: app.mock.baseURL,
        DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
        DSH_PERMISSION_MODE: 'danger-full-access',
      },
      app.cwd,
      ['--patch', join(app.cwd, 'test.patch.yml')],
    )
    try {
      const init = await initialize(acp.agent)
      expect(init.agentCapabilities?.promptCapabilities?.image).toBe(true)
      ;({ sessionId } = await acp.agent.request('session/new', { cwd: app.cwd, mcpServers: [] }))
      const done = await acp.agent.request('session/prompt', {
        sessionId,
        prompt: [
          { type: 'image', data: PNG, mimeType: 'image/png' },
          { type: 'text', text: 'What is in this picture?' },
        ],
      })
      expect(done.stopReason).toBe('end_turn')
    } finally {
      if (acp.child.exitCode === null) await acp.close()
    }
    browser = await launchBrowser()
    ;({ page, errors } = await openPage(browser, `${app.url}/s/${encodeURIComponent(sessionId)}`))
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })
  const loadedWidths = (selector: string) =>
    page.locator(selector).evaluateAll((imgs) => imgs.map((i) => (i as HTMLImageElement).naturalWidth))

  it('shows the image as a thumbnail that opens the viewer', async () => {
    await withArtifacts(page, 'block-images', async () => {
      // The log holds the block itself (pixels and type), as the ACP server wrote it.
      const { events } = await app.call('sessions.history', { sessionId })
      const logged = events.find((e: any) => e.type === 'user/message' && e.data.source?.kind !== 'plugin')
      expect(logged.data.content[0]).toEqual({ type: 'image', mediaType: 'image/png', data: PNG })
      const message = page.locator('[data-node="user"]', { hasText: 'What is in this picture?' })
      await page.locator('[data-node="assistant"]', { hasText: 'A red rectangle.' }).waitFor()
      await expect.poll(() => loadedWidths('[data-node="user"] .dsh-image-thumb img')).toEqual([5])
      expect(await message.locator('.dsh-image-thumb img').getAttribute('src')).toBe(`data:image/png;base64,${PNG}`)
      // Drawn, not counted.
      expect(await message.locator('.dsh-msg-meta').count()).toBe(0)
      await message.getByRole('button', { name: 'View image PNG 1' }).click()
      const viewer = page.getByTestId('image-viewer')
      await expect.poll(() => loadedWidths('[data-testid="image-viewer"] img')).toEqual([5])
      expect(await viewer.getByRole('heading').textContent()).toBe('PNG 1')
      await page.keyboard.press('Escape')
      await viewer.waitFor({ state: 'detached' })
      // The viewer hands the focus back on the next animation frame after it closed.
      await expect
        .poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label')))
        .toBe('View image PNG 1')
      expect(errors).toEqual([])
    })
  })

  /** The last user message of each model request made since request `from`. */
  const userContentSince = (from: number) =>
    app.mock.requests
      .slice(from)
      .map((r) => (r.body as { messages?: Array<{ role: string; content: unknown }> })?.messages)
      .filter((m) => Array.isArray(m))
      .map((m) => m!.filter((x) => x.role === 'user').at(-1)?.content)
  const sessionOfPage = () => decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
  const imageUrl = { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }

  it('retry resends the image block with the text', async () => {
    await withArtifacts(page, 'block-images-retry', async () => {
      const message = page.locator('[data-node="user"]', { hasText: 'What is in this picture?' })
      const from = app.mock.requests.length
      await message.hover()
      await message.getByRole('button', { name: 'Retry' }).click()
      await expect.poll(sessionOfPage).not.toBe(sessionId)
      await page.locator('[data-node="assistant"]', { hasText: 'Retried: red.' }).waitFor()
      // The model saw the pixels again, before the text.
      expect(userContentSince(from)).toEqual([[imageUrl, { type: 'text', text: ' What is in this picture?' }]])
      // The fork's message shows the image as a thumbnail (now a stored attachment's token).
      await expect.poll(() => loadedWidths('[data-node="user"] .dsh-image-thumb img')).toEqual([5])
      expect(errors).toEqual([])
    })
  })

  it('edit and resend keeps the image block beside the edited text', async () => {
    await withArtifacts(page, 'block-images-edit', async () => {
      await page.goto(`${app.url}/s/${encodeURIComponent(sessionId)}`)
      const message = page.locator('[data-node="user"]', { hasText: 'What is in this picture?' })
      await page.locator('[data-node="assistant"]', { hasText: 'A red rectangle.' }).waitFor()
      await message.hover()
      await message.getByRole('button', { name: 'Edit and resend' }).click()
      const editor = page.getByRole('textbox', { name: 'Edit your message' })
      expect(await editor.inputValue()).toBe('What is in this picture?')
      // The block is a thumbnail of the form, like a token image.
      await expect.poll(() => loadedWidths('form.dsh-msg-edit .dsh-image-thumb img')).toEqual([5])
      await editor.fill('Which colour is this?')
      const from = app.mock.requests.length
      await editor.press('Enter')
      await expect.poll(sessionOfPage).not.toBe(sessionId)
      await page.locator('[data-node="assistant"]', { hasText: 'Edited: still red.' }).waitFor()
      expect(userContentSince(from)).toEqual([[imageUrl, { type: 'text', text: ' Which colour is this?' }]])
      expect(errors).toEqual([])
    })
  })
})
