// Skills in the `/` menu, in real Chromium against the real `dsh web` and the mock model: the
// Skills group lists the skills of the session's own folder (a user-only one marked), typing
// filters by prefix, and Enter on `/<skill> request` sends the skill's body and the request as the
// user's message (a model turn). A session in another folder lists that folder's skills. A `/` menu
// opened before the skills half loaded (its module held) gains the Skills group once it loads.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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

function skills(root: string, files: Record<string, string>): string {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(root, '.claude/skills', name), { recursive: true })
    writeFileSync(join(root, '.claude/skills', name, 'SKILL.md'), text)
  }
  return root
}

const RELEASE = '---\nname: release\ndescription: Cut a release.\n---\nBump the version, then tag it.\n'
const SECRET = '---\nname: rotate-keys\ndescription: Rotate the keys.\ndisable-model-invocation: true\n---\nRotate.\n'
const DEPLOY = '---\nname: deploy\ndescription: Deploy the site.\n---\nRun the deploy.\n'

describe.skipIf(!hasChromium())('ui-skill in the browser', () => {
  let app: WebApp
  let browser: Browser
  let page: Page
  let errors: string[]
  const fixtures = mkdtempSync(join(tmpdir(), 'dsh-ui-skill-'))
  const launch = skills(join(fixtures, 'launch'), { release: RELEASE, 'rotate-keys': SECRET })
  const other = skills(join(fixtures, 'other'), { deploy: DEPLOY })
  beforeAll(async () => {
    app = await startWebApp({ steps: [{ text: 'Released.' }], copy: { '.claude': join(launch, '.claude') } })
    browser = await launchBrowser()
    ;({ page, errors } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
    rmSync(fixtures, { recursive: true, force: true })
  })
  const input = () => page.locator('textarea.dsh-composer-input')
  const group = () => page.locator('[data-trigger-menu="/"] [data-trigger-group="skill"]')
  /** The browser halves load after the composer shows: types `/` again until a menu lists something. */
  const openSlashMenu = () =>
    expect
      .poll(async () => {
        await input().fill('')
        await input().click()
        await page.keyboard.type('/')
        return page.locator('[data-trigger-menu="/"] [data-trigger-item]').count()
      })
      .toBeGreaterThan(0)

  it('"/" lists the folder\'s skills in their own group, user-only marked; Enter runs one as a turn', async () => {
    await withArtifacts(page, 'skill-menu', async () => {
      await input().click()
      await page.keyboard.type('/')
      await group().waitFor()
      const items = group().locator('[data-trigger-item]')
      await expect.poll(() => items.count()).toBe(2)
      expect(await group().locator('[data-trigger-item="skill:release"] .label').textContent()).toBe('/release')
      expect(await group().locator('[data-trigger-item="skill:rotate-keys"] .detail').textContent()).toBe(
        '(you only) Rotate the keys.',
      )
      await page.keyboard.type('rel')
      await expect.poll(() => items.count()).toBe(1)
      await group().locator('[data-trigger-item="skill:release"]').click()
      expect(await input().inputValue()).toBe('/release ')
      await page.keyboard.type('version 2.0')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Released.' }).waitFor()
      expect(await input().inputValue()).toBe('')
      const last = app.mock.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> }
      const user = JSON.stringify(last.messages.filter((m) => m.role === 'user').at(-1)!.content)
      expect(user).toContain('Bump the version, then tag it.\\n\\nversion 2.0')
      expect(errors).toEqual([])
    })
  })

  it("a session in another folder lists that folder's skills", async () => {
    await withArtifacts(page, 'skill-menu-other', async () => {
      const { session } = await app.call<{ session: { sessionId: string } }>('sessions.create', { cwd: other })
      await page.goto(`${app.url}/s/${session.sessionId}`)
      await openSlashMenu()
      await group().locator('[data-trigger-item="skill:deploy"]').waitFor()
      expect(await group().locator('[data-trigger-item]').count()).toBe(1)
      // The method answers the same, and refuses a session that is not open.
      expect((await app.call('skill.list', { sessionId: session.sessionId })).skills).toEqual([
        { name: 'deploy', description: 'Deploy the site.', modelInvocable: true },
      ])
      await expect(app.call('skill.list', { sessionId: 'nope' })).rejects.toThrow(/404 SESSION_NOT_FOUND/)
    })
  })

  it('a "/" menu opened before the skills half loaded lists the skills once it has', async () => {
    await withArtifacts(page, 'skill-menu-late-half', async () => {
      // The skills half's module is held until the menu is open without it.
      let release = () => {}
      const held = new Promise<void>((resolve) => (release = resolve))
      let asked = () => {}
      const askedFor = new Promise<void>((resolve) => (asked = resolve))
      await page.route(/\/ui-skill\//, async (route) => {
        asked()
        await held
        await route.continue().catch(() => {})
      })
      try {
        await page.reload()
        await askedFor
        await openSlashMenu()
        const opened = await page.locator('[data-trigger-menu="/"]').elementHandle()
        expect(await group().count()).toBe(0)
        release()
        await group().locator('[data-trigger-item="skill:deploy"]').waitFor({ timeout: 15_000 })
        // The same menu, not one opened again.
        expect(await opened?.evaluate((el) => el.isConnected)).toBe(true)
        await page.keyboard.press('Escape')
      } finally {
        release()
        await page.unroute(/\/ui-skill\//)
      }
    })
  })
})
