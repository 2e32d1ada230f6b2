// `/export` in one Enter, in real Chromium against the real `dsh web` (its web bundle mounts
// @dsh/session-log-export): typing the whole command opens the `/` menu, and a single Enter runs
// it (no pick-then-Enter) and starts the download of the session's ZIP (its log as
// session.jsonl), without a click on the link and without a model turn.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, type Page, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

describe.skipIf(!hasChromium())('/export in the browser', () => {
  const web = useWebApp({ steps: [{ text: 'An answer worth keeping.' }] as never })
  let page: Page
  let errors: string[]
  const saved = mkdtempSync(join(tmpdir(), 'dsh-export-'))
  beforeAll(async () => {
    ;({ page, errors } = await web.openPage())
  })
  afterAll(() => {
    rmSync(saved, { recursive: true, force: true })
  })
  const input = () => page.locator('textarea.dsh-composer-input')
  const sessionId = () => decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)

  it('one Enter on a typed /export downloads the session, with no model turn', async () => {
    await withArtifacts(page, 'commands-export', async () => {
      await input().fill('Keep this exchange')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'An answer worth keeping.' }).waitFor()
      await expect.poll(async () => (await web.call('sessions.list', { cwd: web.cwd })).sessions[0].status).toBe('idle')
      const requests = web.mock.requests.length
      await input().click()
      await page.keyboard.type('/export')
      // The menu is open on the typed command: the Enter below is the only one.
      await page.locator('[data-trigger-menu="/"] [data-trigger-item="export"]').waitFor()
      const downloaded = page.waitForEvent('download', { timeout: 15_000 })
      await page.keyboard.press('Enter')
      const download = await downloaded
      expect(download.suggestedFilename()).toBe(`dsh-session-${sessionId()}.zip`)
      // (The browser is the run's shared one, reached remotely: the file is copied out.)
      const file = join(saved, 'session.zip')
      await download.saveAs(file)
      const zip = readFileSync(file)
      expect(zip.subarray(0, 2).toString()).toBe('PK')
      expect(zip.includes(Buffer.from('session.jsonl'))).toBe(true)
      await expect.poll(() => page.locator('[data-command-result]').getAttribute('data-command-result')).toBe('ok')
      expect(await input().inputValue()).toBe('')
      expect(await page.locator('[data-trigger-menu]').count()).toBe(0)
      expect(web.mock.requests.length).toBe(requests)
      expect(errors).toEqual([])
    })
  })

  it('Enter on a partly typed command still picks it from the menu (it does not run)', async () => {
    await withArtifacts(page, 'commands-export-partial', async () => {
      await page.locator('[data-command-result] button').click()
      await input().click()
      await page.keyboard.type('/expo')
      await page.locator('[data-trigger-menu="/"] [data-trigger-item="export"]').waitFor()
      await page.keyboard.press('Enter')
      await expect.poll(() => input().inputValue()).toBe('/export ')
      expect(await page.locator('[data-command-result]').count()).toBe(0)
    })
  })
})
