// The workflow card in real Chromium against the real `dsh web` and the mock model: a workflow
// call that fans out three children (one refused by the model server) renders as a run card with
// every child and its outcome, folded from the session's tool-workflow/* events.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  hasChromium,
  launchBrowser,
  openPage,
  startWebApp,
  withArtifacts,
  type Browser,
  type WebApp,
} from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 })

const SCRIPT =
  'return await Promise.all(["one", "two", "three"].map((p) => agents.spawn({ prompt: "look at part " + p, description: "part " + p })))'
const STEPS = [
  { toolCalls: [{ id: 'c_wf', name: 'workflow', arguments: { script: SCRIPT, description: 'three parts' } }] },
  { text: 'part fine' },
  { error: { status: 400, message: 'this request is malformed' } },
  { text: 'part fine' },
  { text: 'Two parts fine, one failed.' },
]
// The web bundle mounts the ui-workflow-run row; the workflow rows are off in bundle-base.
const PATCH = `- id: workflow-engine
  disabled: false
- id: tool-workflow
  disabled: false
`

describe.skipIf(!hasChromium())('ui-workflow-run in the browser', () => {
  let app: WebApp
  let browser: Browser
  beforeAll(async () => {
    app = await startWebApp({ steps: STEPS as never, patch: PATCH })
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })

  it('a workflow call shows its run: three children with their outcomes, then the run completed', async () => {
    const { page, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'workflow-run-three-children', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      await page.locator('textarea.dsh-composer-input').fill('check the three parts')
      await page.locator('textarea.dsh-composer-input').press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Two parts fine, one failed.' }).waitFor()
      const card = page.locator('[data-workflow-card="c_wf"]')
      await expect.poll(() => card.getAttribute('data-status')).toBe('completed')
      expect(await card.getAttribute('data-workflow-run')).toBe('wf-1')
      expect(await card.locator('.dsh-wf-title').textContent()).toBe('Workflow: three parts')
      const children = card.locator('li[data-child]')
      await expect.poll(() => children.count()).toBe(3)
      const statuses = await children.evaluateAll((items) => items.map((li) => li.getAttribute('data-status')))
      expect(statuses.sort()).toEqual(['completed', 'completed', 'failed'])
      expect((await card.locator('.dsh-wf-desc').allTextContents()).sort()).toEqual([
        'part one',
        'part three',
        'part two',
      ])
      expect(errors).toEqual([])
    })
  })
})
