// The preset picker in real Chromium against the real `dsh web` and the mock model: a new session
// offers the presets (a home preset included); picking one records it and limits the tools the
// model is offered; after the first turn the picker is a label and the host refuses a change.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
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
    - id: ui-agent-preset-under-test
      name: ${JSON.stringify(dist)}
`

describe.skipIf(!hasChromium())('ui-agent-preset in the browser', () => {
  let app: WebApp
  let browser: Browser
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    app = await startWebApp({ steps: [{ text: 'Looked.' }] as never, patch: PATCH })
    mkdirSync(join(app.home, '.dsh', 'presets', 'lookonly'), { recursive: true })
    writeFileSync(
      join(app.home, '.dsh', 'presets', 'lookonly', 'agent.cordis.yml'),
      '- id: tool-set\n  name: "@dsh/agent-presets/tool-set"\n  config:\n    only: [read, grep]\n',
    )
    browser = await launchBrowser()
    ;({ page, errors } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })

  it('picks the preset of a new session; the model is offered its tools; then it is fixed', async () => {
    await withArtifacts(page, 'agent-preset', async () => {
      const picker = page.locator('[data-testid="agent-preset"]')
      await picker.waitFor()
      expect(await picker.getAttribute('data-locked')).toBe('false')
      expect(await picker.locator('option').allTextContents()).toEqual([
        'Preset: code',
        'Preset: lookonly',
        'Preset: minimal',
        'Preset: standard',
      ])
      expect(await picker.inputValue()).toBe('standard')
      await picker.selectOption('lookonly')
      const sessionId = new URL(page.url()).pathname.split('/').pop()!
      await expect
        .poll(async () => (await app.call<{ current?: string }>('presets.list', { sessionId })).current)
        .toBe('lookonly')
      const input = page.locator('textarea.dsh-composer-input')
      await input.fill('look around')
      await input.press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Looked.' }).waitFor()
      const tools = ((app.mock.requests[0].body as { tools?: { function: { name: string } }[] }).tools ?? []).map(
        (t) => t.function.name,
      )
      expect(tools).toEqual(['grep', 'read'])
      await expect.poll(() => page.locator('[data-testid="agent-preset"]').getAttribute('data-locked')).toBe('true')
      expect(await page.locator('[data-testid="agent-preset"]').textContent()).toBe('Preset: lookonly')
      await expect(app.call('presets.select', { sessionId, name: 'standard' })).rejects.toThrow(
        /a session keeps its preset/,
      )
      await expect(app.call('presets.select', { sessionId, name: 'nope' })).rejects.toThrow(
        /unknown agent preset "nope"/,
      )
      expect(errors).toEqual([])
    })
  })
})
