// Model-written plugins in real Chromium against the real `dsh web`, the real host runner and the
// mock model: the model's cordis_define call shows its code read-only on the card; the Plugins
// section lists the definition; Run asks the approval in the session (the takeover) and, allowed,
// the plugin runs (its log shows); Retract takes it down and the section empties.
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

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const CODE = "dsh.handle('greet', (input) => ({ hello: input.name }))\ndsh.log('greeter up')"
const PATCH = `- insert:
    - id: cordis-host-runner
      name: "@dsh/cordis-host-runner"
    - id: tool-cordis
      name: "@dsh/tool-cordis"
    - id: ui-cordis
      name: "@dsh/ui-cordis"
`
const STEPS = [
  {
    toolCalls: [
      { name: 'cordis_define', arguments: { name: 'greeter', description: 'Says hello to a name.', code: CODE } },
    ],
  },
  { text: 'Defined the greeter.' },
]

describe.skipIf(!hasChromium())('ui-cordis in the browser', () => {
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

  it('shows the defined code, runs the plugin after the approval, and retracts it', async () => {
    await withArtifacts(page, 'cordis-panel', async () => {
      await input().fill('write me a greeter plugin')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Defined the greeter.' }).waitFor()
      const card = page.locator('[data-cordis-card="greeter"]')
      expect(await card.locator('[data-cordis-card-code]').textContent()).toBe(CODE)
      const item = page.locator('[data-cordis-panel] [data-cordis-definition="greeter"]')
      await item.waitFor()
      expect(await item.getAttribute('data-cordis-state')).toBe('defined')
      await item.locator('[data-cordis-code="greeter"]').click()
      expect(await item.locator('[data-cordis-source="greeter"]').textContent()).toBe(CODE)
      await item.locator('[data-cordis-run="greeter"]').click()
      const takeover = page.locator('.dsh-approval')
      await takeover.locator('h3', { hasText: 'greeter' }).waitFor()
      await takeover.getByRole('button', { name: 'Allow once' }).click()
      await page
        .locator('[data-cordis-panel] [data-cordis-definition="greeter"][data-cordis-state="running"]')
        .waitFor()
      expect(await item.locator('[data-cordis-log="greeter"]').textContent()).toBe('greeter up')
      expect(await item.textContent()).toContain('Handlers: greet')
      await item.locator('[data-cordis-retract="greeter"]').click()
      await page.locator('[data-cordis-panel]').waitFor({ state: 'detached' })
      expect((await app.call('cordis.definitions')).definitions).toEqual([])
      await expect(app.call('cordis.run', { name: 'greeter' })).rejects.toThrow(/404 UNKNOWN_DEFINITION/)
      expect(errors).toEqual([])
    })
  })
})
