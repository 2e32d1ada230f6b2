// Model-written plugins in real Chromium against the real `dsh web`, the real host runner and the
// mock model: the model's cordis_define call shows its code read-only on the card; the Plugins
// section lists the definition; Run asks the approval in the session (the takeover) and, allowed,
// the plugin runs (its log shows); Retract takes it down and the section empties. The section lists
// only the open session's definitions: another session's plugin stays out of it.
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
const OTHER = "dsh.log('other up')"
const STEPS = [
  {
    toolCalls: [{ name: 'cordis_define', arguments: { name: 'other', description: 'Another session.', code: OTHER } }],
  },
  { text: 'Defined the other.' },
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
  let first = ''

  it("lists a plugin in the session that defined it, not in another session's section", async () => {
    first = page.url()
    const { session } = await app.call<{ session: { sessionId: string } }>('sessions.create', { cwd: app.cwd })
    await page.goto(`${app.url}/s/${encodeURIComponent(session.sessionId)}`)
    await input().fill('write me another plugin')
    await input().press('Enter')
    await page.locator('[data-node="assistant"]', { hasText: 'Defined the other.' }).waitFor()
    await page.locator('[data-cordis-panel] [data-cordis-definition="other"]').waitFor()
    expect((await app.call('cordis.definitions', { sessionId: session.sessionId })).definitions).toMatchObject([
      { name: 'other', sessionId: session.sessionId },
    ])
    await page.goto(first)
  })

  it('shows the defined code, runs the plugin after the approval, and retracts it', async () => {
    await withArtifacts(page, 'cordis-panel', async () => {
      await input().fill('write me a greeter plugin')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Defined the greeter.' }).waitFor()
      const card = page.locator('[data-cordis-card="greeter"]')
      expect(await card.locator('[data-cordis-card-code]').textContent()).toBe(CODE)
      const item = page.locator('[data-cordis-panel] [data-cordis-definition="greeter"]')
      await item.waitFor()
      // The same fetch that brought the greeter would bring the other session's plugin.
      expect(await page.locator('[data-cordis-panel] [data-cordis-definition]').count()).toBe(1)
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
      const sessionId = new URL(page.url()).pathname.split('/').pop()!
      expect((await app.call('cordis.definitions', { sessionId })).definitions).toEqual([])
      expect((await app.call('cordis.definitions')).definitions).toMatchObject([{ name: 'other' }])
      await expect(app.call('cordis.run', { sessionId, name: 'greeter' })).rejects.toThrow(/404 UNKNOWN_DEFINITION/)
      expect(errors).toEqual([])
    })
  })

  it("refuses to run or retract another session's plugin by name, and a call that names no session", async () => {
    const sessionId = new URL(first).pathname.split('/').pop()!
    // `other` belongs to the second session: named from the first, it does not exist.
    await expect(app.call('cordis.retract', { sessionId, name: 'other' })).rejects.toThrow(
      /404 UNKNOWN_DEFINITION.*no definition named "other" in session/,
    )
    await expect(app.call('cordis.run', { sessionId, name: 'other' })).rejects.toThrow(/404 UNKNOWN_DEFINITION/)
    await expect(app.call('cordis.retract', { name: 'other' })).rejects.toThrow(/400 INVALID_PARAMS.*sessionId/)
    await expect(app.call('cordis.run', { name: 'other' })).rejects.toThrow(/400 INVALID_PARAMS.*sessionId/)
    const [other] = (await app.call('cordis.definitions')).definitions
    expect(other).toMatchObject({ name: 'other', state: 'defined' })
    await app.call('cordis.retract', { sessionId: other.sessionId, name: 'other' })
    expect((await app.call('cordis.definitions')).definitions).toEqual([])
  })
})
