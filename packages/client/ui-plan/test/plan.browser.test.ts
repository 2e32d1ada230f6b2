// The plan chip in real Chromium against the real `dsh web` and the mock model: the chip enters
// plan mode through /plan, the model's exit_plan_mode arrives as the question takeover, approving
// it leaves plan mode and the chip follows the log.
import { fileURLToPath } from 'node:url'
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

const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const PATCH = `- insert:
    - id: ui-plan-under-test
      name: ${JSON.stringify(dist)}
`
const STEPS = [
  { toolCalls: [{ id: 'c_exit', name: 'exit_plan_mode', arguments: { plan: '1. Rename the parser module' } }] },
  { text: 'Renamed, as planned.' },
]

describe.skipIf(!hasChromium())('ui-plan in the browser', () => {
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

  it('the chip enters plan mode; the plan review is the question takeover; approval leaves plan mode', async () => {
    await withArtifacts(page, 'plan-chip', async () => {
      const chip = page.locator('[data-testid="plan-chip"]')
      await chip.waitFor()
      expect(await chip.getAttribute('data-active')).toBe('false')
      await chip.click()
      await expect.poll(() => chip.getAttribute('data-active')).toBe('true')
      const input = page.locator('textarea.dsh-composer-input')
      await input.fill('rename the parser')
      await input.press('Enter')
      const question = page.locator('form.dsh-question')
      await question.waitFor()
      expect(await question.textContent()).toContain('1. Rename the parser module')
      await question.locator('label.dsh-question-option', { hasText: /^Approve —/ }).click()
      await question.locator('button[type="submit"]').click()
      await page.locator('[data-node="assistant"]', { hasText: 'Renamed, as planned.' }).waitFor()
      await expect.poll(() => chip.getAttribute('data-active')).toBe('false')
      expect(errors).toEqual([])
    })
  })
})
