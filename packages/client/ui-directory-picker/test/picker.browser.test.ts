// The directory picker in real Chromium against the real `dsh web`: browse from the home folder
// into a subfolder and add it as a workspace; a folder deleted while shown is a clear error and
// adds nothing.
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

describe.skipIf(!hasChromium())('ui-directory-picker in the browser', () => {
  // The worker's shared host. Its home is the other files' too: the folders made here and the
  // workspace the test adds are taken away again when the file ends.
  const app = useWebApp({ steps: [] })
  beforeAll(async () => {
    mkdirSync(join(app.home, 'projects', 'alpha'), { recursive: true })
    mkdirSync(join(app.home, 'projects', 'doomed'), { recursive: true })
  })
  afterAll(async () => {
    const { workspaces } = await app.call<{ workspaces: { id: string; path: string }[] }>('workspaces.list', {})
    for (const w of workspaces)
      if (w.path.startsWith(join(app.home, 'projects'))) await app.call('workspaces.remove', { id: w.id })
    rmSync(join(app.home, 'projects'), { recursive: true, force: true })
  })

  it('browse into a folder and add it as a workspace; a vanished folder is an error', async () => {
    const { page, errors } = await app.openPage()
    await withArtifacts(page, 'directory-picker', async () => {
      await page.locator('[data-directory-picker-open]').click()
      const dialog = page.locator('[data-directory-picker]')
      await expect.poll(() => dialog.locator('[data-directory-path]').textContent()).toBe(app.home)
      // From the keyboard: an entry takes the focus, Enter opens it.
      await dialog.locator('[data-directory-entry="projects"]').focus()
      await page.keyboard.press('Enter')
      await expect.poll(() => dialog.locator('[data-directory-path]').textContent()).toBe(join(app.home, 'projects'))
      expect(await dialog.locator('[data-directory-entry]').allTextContents()).toEqual(['📁 alpha', '📁 doomed'])
      rmSync(join(app.home, 'projects', 'doomed'), { recursive: true })
      await dialog.locator('[data-directory-entry="doomed"]').click()
      await expect.poll(() => dialog.locator('[role="alert"]').textContent()).toMatch(/doomed/)
      await dialog.locator('[data-directory-entry="alpha"]').click()
      await expect
        .poll(() => dialog.locator('[data-directory-path]').textContent())
        .toBe(join(app.home, 'projects', 'alpha'))
      await dialog.locator('[data-directory-use]').click()
      await expect.poll(() => dialog.count()).toBe(0)
      const { workspaces } = await app.call('workspaces.list')
      expect(workspaces.map((w: { path: string }) => w.path)).toContain(join(app.home, 'projects', 'alpha'))
      expect(workspaces.map((w: { path: string }) => w.path)).not.toContain(join(app.home, 'projects', 'doomed'))
      expect(errors.filter((e) => !/status of 4\d\d/.test(e))).toEqual([])
    })
  })
})
