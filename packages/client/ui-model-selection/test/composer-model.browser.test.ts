// The composer's model picker in real Chromium against the real `dsh web` and the mock model: it
// lists the routed providers' models, a route added after the page opened appears when the picker
// is focused, and a choice (model, then effort) is the session's model for the next request.
import { afterAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

describe.skipIf(!hasChromium())('the composer model picker', () => {
  // The worker's shared host: the route this file adds is host-wide, so it is removed again when
  // the file ends (before the fixture removes the file's sessions).
  const app = useWebApp({ steps: [{ text: 'Answered by the late endpoint.' }] })
  afterAll(async () => {
    expect(await app.call('models.removeProvider', { name: 'late' })).toEqual({ removed: true })
  })
  const chats = () => app.mock.requests.filter((r) => r.path.endsWith('/chat/completions'))

  it('shows a route added after the page opened, and its choice answers the next prompt', async () => {
    const { page, context, errors } = await app.openPage()
    await withArtifacts(page, 'composer-model', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      const sessionId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
      const picker = page.locator('[data-testid="composer-model-select"]')
      await expect.poll(() => picker.locator('optgroup[label="deepseek-official"] option').count()).toBeGreaterThan(0)
      await app.call('models.addEndpoint', { name: 'late', baseURL: app.mock.baseURL, models: [{ id: 'late-model' }] })
      expect(await picker.locator('option[value="late/late-model"]').count()).toBe(0)
      await picker.focus()
      await expect.poll(() => picker.locator('option[value="late/late-model"]').count()).toBe(1)
      await picker.selectOption('late/late-model')
      const row = async () =>
        (
          (await app.call('sessions.list', {})).sessions as {
            sessionId: string
            model?: { provider: string; model: string; reasoningEffort?: string }
          }[]
        ).find((s) => s.sessionId === sessionId)
      await expect.poll(async () => (await row())?.model).toMatchObject({ provider: 'late', model: 'late-model' })
      await page.locator('[data-testid="composer-model"] select').nth(1).selectOption('low')
      await expect
        .poll(async () => (await row())?.model)
        .toEqual({ provider: 'late', model: 'late-model', reasoningEffort: 'low' })
      await page.locator('[data-composer="true"]').fill('which model?')
      await page.locator('[data-composer="true"]').press('Enter')
      await expect.poll(() => chats().length, { timeout: 30_000 }).toBe(1)
      expect((chats()[0].body as { model: string }).model).toBe('late-model')
      await page.getByText('Answered by the late endpoint.').waitFor()
      expect(errors).toEqual([])
    })
    await context.close()
  })
})
