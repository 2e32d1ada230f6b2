// The trajectory dialog in real Chromium against the real `dsh web` and the mock model: a 3-step
// turn (two tool steps and an answer) shows three request rows with the token figures the mock
// reported, each tool call with a duration, the totals, and a cost from the configured price.
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

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const STEPS = [
  {
    toolCalls: [{ name: 'bash', arguments: { command: 'echo one', description: 'one' } }],
    usage: { prompt: 1200, completion: 40, cacheHit: 1024 },
  },
  {
    toolCalls: [{ name: 'bash', arguments: { command: 'echo two', description: 'two' } }],
    usage: { prompt: 1300, completion: 30, cacheHit: 1200 },
  },
  { text: 'Both commands ran.', usage: { prompt: 1400, completion: 12, cacheHit: 1300 } },
]
// Prices: $1/M input, $2/M output, $0.5/M cache read.
const PATCH = `- id: ui-trajectory
  config:
    prices:
      deepseek-v4-flash: { input: 1, output: 2, cacheRead: 0.5 }
`

describe.skipIf(!hasChromium())('ui-trajectory in the browser', () => {
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

  it('a 3-step turn: one row per request with its tokens, tool durations, totals and cost', async () => {
    const { page, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'trajectory-3-step', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      await page.locator('textarea.dsh-composer-input').fill('run two commands')
      await page.locator('textarea.dsh-composer-input').press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Both commands ran.' }).waitFor()
      await page.locator('[data-trajectory-open]').click()
      const rows = page.locator('[data-trajectory] tr[data-trajectory-request]')
      await expect.poll(() => rows.count()).toBe(3)
      const cell = (row: number, col: string) => rows.nth(row).locator(`td[data-col="${col}"]`).textContent()
      // input = prompt - cache hits; output = completion.
      expect([await cell(0, 'input'), await cell(0, 'output'), await cell(0, 'cacheRead')]).toEqual([
        '176',
        '40',
        '1,024',
      ])
      expect([await cell(1, 'input'), await cell(1, 'output'), await cell(1, 'cacheRead')]).toEqual([
        '100',
        '30',
        '1,200',
      ])
      expect([await cell(2, 'input'), await cell(2, 'output'), await cell(2, 'cacheRead')]).toEqual([
        '100',
        '12',
        '1,300',
      ])
      expect(await rows.nth(0).locator('[data-tool="bash"]').textContent()).toMatch(/^bash \d/)
      expect(await rows.nth(2).locator('td[data-col="tools"]').textContent()).toBe('–')
      for (let i = 0; i < 3; i++) expect(await cell(i, 'latency')).toMatch(/\d+ (ms|s)$/)
      const totals = await page.locator('[data-trajectory-totals]').textContent()
      expect(totals).toContain('3 requests')
      expect(totals).toContain('In 376')
      expect(totals).toContain('Out 82')
      expect(totals).toContain('Cache read 3,524')
      expect(totals).toContain('2 tool calls')
      // 376 * 1 + 82 * 2 + 3524 * 0.5 = 2302 micro-dollars.
      expect(await page.locator('[data-trajectory-cost]').textContent()).toBe('$0.00230')
      expect(await page.locator('.dsh-traj-timeline .dsh-traj-lane').count()).toBe(3)
      await page.keyboard.press('Escape')
      await expect.poll(() => page.locator('[data-trajectory]').count()).toBe(0)
      expect(errors).toEqual([])
    })
  })
})
