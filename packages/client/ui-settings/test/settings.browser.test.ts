// Settings in real Chromium against the real `dsh web` and the mock model, without a key at the
// start: a key pasted in Models answers the next prompt (no restart); an OpenAI-compatible
// endpoint added in Models is chosen in the composer and answers; a plugin disabled in Plugins
// takes its tool out of the next request; the config form names a bad field and saves a good one;
// General sets the default permission mode. One host and one browser for the file; the mock
// serves its steps in the order the tests run.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { parse } from 'yaml'
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

const KEY = 'sk-pasted-in-settings-7f6e5d'

let app: WebApp
let browser: Browser

beforeAll(async () => {
  app = await startWebApp({
    noKey: true,
    steps: [
      { text: 'Answered with the pasted key.' },
      { text: 'Answered by the endpoint model.' },
      { text: 'Answered without bash.' },
    ],
  })
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
})

const composer = (page: Page) => page.locator('[data-composer="true"]')
const layer = () => join(app.home, '.dsh', 'profiles', 'web', 'cordis.patch.yml')
/** Model requests only (the key check and discovery GET /models too). */
const chats = () => app.mock.requests.filter((r) => r.path.endsWith('/chat/completions'))
const toolsOf = (i: number) =>
  ((chats()[i].body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name)

async function openSettings(page: Page, section: string): Promise<void> {
  await page.locator('.footer-controls button[aria-label="Settings"]').click()
  await page.locator('[data-testid="settings-dialog"]').waitFor()
  await page.locator(`[data-testid="settings-dialog"] [data-section="${section}"]`).click()
}

async function send(page: Page, text: string, requests: number): Promise<void> {
  await composer(page).fill(text)
  await composer(page).press('Enter')
  await expect.poll(() => chats().length, { timeout: 30_000 }).toBe(requests)
}

describe.skipIf(!hasChromium())('Settings in Chromium', () => {
  it('a key pasted in Models is kept by the host (never shown again) and answers the next prompt without a restart', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'settings-key', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      await openSettings(page, 'models')
      const deepseek = page.locator('[data-provider="deepseek-official"]')
      await expect.poll(() => deepseek.locator('[data-testid="key-badge"]').textContent()).toBe('no key')
      expect(await page.locator('[data-testid="missing-key"]').count()).toBe(1)
      await deepseek.locator('[data-testid="key-input"]').fill(KEY)
      await deepseek.locator('[data-testid="key-save"]').click()
      await expect
        .poll(() => deepseek.locator('[data-testid="provider-status"]').textContent())
        .toBe('Key stored and accepted by the provider.')
      await expect.poll(() => deepseek.locator('[data-testid="key-badge"]').textContent()).toBe('key set')
      expect(await deepseek.locator('[data-testid="key-input"]').inputValue()).toBe('')
      expect(await page.content()).not.toContain(KEY)
      // Closing Settings clears the shell's missing-key notice.
      await page.locator('[data-testid="settings-dialog"] button[aria-label="Close"]').click()
      await expect.poll(() => page.locator('[data-testid="missing-key"]').count()).toBe(0)
      await send(page, 'use the pasted key', 1)
      expect(chats()[0].headers.authorization).toBe(`Bearer ${KEY}`)
      await page.getByText('Answered with the pasted key.').waitFor()
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('an OpenAI-compatible endpoint added in Models (models discovered) is chosen in the composer and answers', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'settings-endpoint', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      await openSettings(page, 'models')
      const form = page.locator('[data-testid="add-endpoint"]')
      await form.locator('input[name="name"]').fill('mockep')
      await form.locator('input[name="baseURL"]').fill(app.mock.baseURL)
      await form.getByRole('button', { name: 'Discover models' }).click()
      await expect.poll(() => form.locator('input[name="models"]').inputValue()).toBe('deepseek-v4-flash')
      await form.locator('input[name="models"]').fill('mock-coder, mock-small')
      await form.getByRole('button', { name: 'Add', exact: true }).click()
      await expect
        .poll(() => form.locator('[data-testid="endpoint-status"]').textContent())
        .toBe('Endpoint mockep added.')
      await expect
        .poll(() => page.locator('[data-provider="mockep"] [data-testid="provider-models"] code').allTextContents())
        .toEqual(['mock-coder', 'mock-small'])
      await page.keyboard.press('Escape')
      const picker = page.locator('[data-testid="composer-model-select"]')
      await picker.focus()
      await expect.poll(() => picker.locator('option[value="mockep/mock-coder"]').count()).toBe(1)
      await picker.selectOption('mockep/mock-coder')
      await expect.poll(() => picker.inputValue()).toBe('mockep/mock-coder')
      await send(page, 'answer from the endpoint', 2)
      expect((chats()[1].body as { model: string }).model).toBe('mock-coder')
      // The keyless endpoint gets the placeholder, never the DeepSeek key.
      expect(chats()[1].headers.authorization).not.toContain(KEY)
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('a plugin disabled in Plugins takes its tool out of the next request', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'settings-plugins', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      expect(toolsOf(0)).toContain('bash')
      await openSettings(page, 'plugins')
      await page.locator('[data-testid="plugin-filter"]').fill('tool-bash')
      const row = page.locator('[data-plugin="tool-bash"]')
      await expect.poll(() => row.locator('[data-testid="plugin-state"]').textContent()).toBe('active')
      // Controlled by the host's answer: the box changes once the row is disabled.
      await row.locator('[data-testid="plugin-enabled"]').click()
      await expect.poll(() => row.locator('[data-testid="plugin-state"]').textContent()).toBe('disabled')
      expect(parse(readFileSync(layer(), 'utf8'))).toContainEqual({ id: 'tool-bash', disabled: true })
      // A row the app cannot run without has no switch, only the reason.
      await page.locator('[data-testid="plugin-filter"]').fill('api-gateway')
      const locked = page.locator('[data-plugin="api-gateway"]')
      await expect
        .poll(() => locked.locator('[data-testid="plugin-locked"]').textContent())
        .toBe('api-gatewayAlways on: dsh web cannot run without this row')
      expect(await locked.locator('[data-testid="plugin-enabled"]').count()).toBe(0)
      await page.keyboard.press('Escape')
      await send(page, 'no bash now', 3)
      expect(toolsOf(2)).not.toContain('bash')
      expect(toolsOf(2).length).toBeGreaterThan(0)
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('the config form names a bad field without saving it, and saves and applies a good value', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'settings-config-form', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      await openSettings(page, 'plugins')
      await page.locator('[data-testid="plugin-filter"]').fill('timeout-policy')
      const row = page.locator('[data-plugin="timeout-policy"]')
      await row.locator('[data-testid="plugin-configure"]').click()
      const form = row.locator('[data-testid="plugin-form"]')
      const field = form.locator('input[name="defaultMs"]')
      await expect.poll(() => field.inputValue()).toBe('0')
      await field.fill('-5')
      await form.locator('[data-testid="plugin-save"]').click()
      await expect
        .poll(() => form.locator('[data-testid="plugin-form-status"]').textContent())
        .toMatch(/^config\.defaultMs: /)
      expect(await form.locator('[data-field="defaultMs"]').getAttribute('data-invalid')).toBe('true')
      const written = existsSync(layer()) ? (parse(readFileSync(layer(), 'utf8')) ?? []) : []
      expect(written.some((op: { id?: string }) => op.id === 'timeout-policy')).toBe(false)
      await field.fill('90000')
      await form.locator('[data-testid="plugin-save"]').click()
      await expect
        .poll(() => form.locator('[data-testid="plugin-form-status"]').textContent())
        .toBe('Configuration saved and applied.')
      expect((await app.call('plugins.describe', { id: 'timeout-policy' })).config).toMatchObject({ defaultMs: 90000 })
      expect(errors).toEqual([])
    })
    await context.close()
  })

  it('General sets the default permission mode of new sessions', async () => {
    const { page, context, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'settings-general', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      await openSettings(page, 'general')
      const select = page.locator('[data-testid="default-permission"]')
      await expect.poll(() => select.locator('option').count()).toBeGreaterThan(2)
      await select.selectOption('read-only')
      await page.locator('[data-testid="settings-general"]').getByRole('button', { name: 'Save' }).last().click()
      await expect
        .poll(
          async () =>
            ((await app.call('settings.describe', {})).sections as { namespace: string; value: unknown }[]).find(
              (s) => s.namespace === 'permissions',
            )?.value,
        )
        .toEqual({ default: 'read-only' })
      expect(errors).toEqual([])
    })
    await context.close()
  })
})
