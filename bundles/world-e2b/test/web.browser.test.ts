// `dsh web --world e2b` in real Chromium, E2B played by @dsh/e2b-standin and the model by
// @dsh/llm-mock-server: a turn writes files in the sandbox (the local tree untouched), the panel
// offers the change when the turn ends, "Apply" brings it into the local tree through the checked
// `git apply`, and the next turn's change (only that one: the baseline moved) is declined with
// "Keep the patch only", which leaves the local tree as it was and the patch file on disk.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
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
  type WebApp,
} from '@dsh/web-testkit'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 })

const STEPS = [
  { toolCalls: [{ name: 'read', arguments: { file_path: 'notes.txt' } }] },
  {
    toolCalls: [
      { name: 'write', arguments: { file_path: 'added.txt', content: 'made in the sandbox\n' } },
      { name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' } },
    ],
  },
  { text: 'Written remotely.' },
  { toolCalls: [{ name: 'write', arguments: { file_path: 'second.txt', content: 'declined\n' } }] },
  { text: 'Second file written.' },
]

describe.skipIf(!hasChromium())('dsh web --world e2b: the approval of the sandbox change', () => {
  let standin: E2bStandin
  let app: WebApp
  let browser: Browser
  beforeAll(async () => {
    standin = await startE2bStandin()
    const seed = mkdtempSync(join(tmpdir(), 'dsh-e2b-web-seed-'))
    writeFileSync(join(seed, 'notes.txt'), 'alpha\nbeta\n')
    app = await startWebApp({
      steps: STEPS as never,
      args: ['--world', 'e2b'],
      env: standin.env,
      copy: { 'notes.txt': join(seed, 'notes.txt') },
    })
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
    await standin?.close()
  })

  it('offers the change when the turn ends; apply changes the local tree, keep leaves it', async () => {
    const { page } = await openPage(browser, app.url)
    await withArtifacts(page, 'e2b-web-review', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      const input = page.locator('textarea.dsh-composer-input')
      await input.fill('write the files')
      await input.press('Enter')
      const panel = page.locator('[data-testid="e2b-review"]')
      await expect.poll(() => panel.getAttribute('data-e2b-phase'), { timeout: 45_000 }).toBe('offered')
      expect((await panel.locator('[data-e2b-files] li').allTextContents()).sort()).toEqual(['added.txt', 'notes.txt'])
      // The sandbox holds the change; the local tree does not, until the click.
      const [sandbox] = standin.sandboxes()
      expect(readFileSync(join(standin.rootOf(sandbox.record.id), app.cwd, 'added.txt'), 'utf8')).toBe(
        'made in the sandbox\n',
      )
      expect(existsSync(join(app.cwd, 'added.txt'))).toBe(false)
      expect(readFileSync(join(app.cwd, 'notes.txt'), 'utf8')).toBe('alpha\nbeta\n')

      await panel.locator('[data-e2b-action="apply"]').click()
      await expect.poll(() => panel.getAttribute('data-e2b-phase')).toBe('settled')
      expect(await panel.locator('[data-e2b-line]').textContent()).toMatch(
        /^applied the patch \S+\.patch to \S+ \((added\.txt, notes\.txt|notes\.txt, added\.txt)\)$/,
      )
      expect(readFileSync(join(app.cwd, 'added.txt'), 'utf8')).toBe('made in the sandbox\n')
      expect(readFileSync(join(app.cwd, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n')

      // The next turn: only its own change is offered (the applied one moved the baseline).
      await input.fill('write another')
      await input.press('Enter')
      await expect.poll(() => panel.getAttribute('data-e2b-phase'), { timeout: 45_000 }).toBe('offered')
      expect(await panel.locator('[data-e2b-files] li').allTextContents()).toEqual(['second.txt'])
      await panel.locator('[data-e2b-action="keep"]').click()
      await expect.poll(() => panel.getAttribute('data-e2b-phase')).toBe('settled')
      const kept =
        /^kept the patch (\S+\.patch); (\S+) was left as it was \(apply it later with: git -C \S+ apply \S+\)$/.exec(
          (await panel.locator('[data-e2b-line]').textContent()) ?? '',
        )
      expect(kept).not.toBeNull()
      expect(kept![2]).toBe(app.cwd)
      expect(readFileSync(kept![1], 'utf8')).toContain('+declined')
      expect(existsSync(join(app.cwd, 'second.txt'))).toBe(false)

      // Nothing left to review; a settled file cannot be settled twice.
      await panel.locator('[data-e2b-action="review"]').click()
      await expect.poll(() => panel.getAttribute('data-e2b-phase')).toBe('none')
      await expect(app.call('e2b.apply', { file: kept![1] })).rejects.toThrow(
        /409 REVIEW_NOT_FOUND: .* is not the change offered now/,
      )
      await expect(app.call('e2b.apply', {})).rejects.toThrow(/400 INVALID_PARAMS/)
    })
    // The host's end kills the sandbox it created.
    const id = standin.sandboxes()[0].record.id
    await app.stop()
    expect(standin.get(id)).toBeUndefined()
  })
})
