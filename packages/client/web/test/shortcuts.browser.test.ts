// The shortcuts sheet in real Chromium against the real `dsh web`: `?` (or the palette) opens it,
// it lists every row of the one binding table (KEY_BINDINGS, which the shell's key handler and
// the composer read too) with a translated label, and the keys it shows do what it says when
// pressed as shown.
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
import { KEY_BINDINGS } from '@dsh/client-runtime'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

/** The keys as the sheet shows them (`Ctrl+K`, `Alt+↑`, `Esc`), as Playwright presses them. */
const press = (shown: string) =>
  shown
    .split('+')
    .map((part) =>
      part === 'Ctrl'
        ? 'Control'
        : part === 'Esc'
          ? 'Escape'
          : part === '↑'
            ? 'ArrowUp'
            : part === '↓'
              ? 'ArrowDown'
              : part.length === 1
                ? part.toLowerCase()
                : part,
    )
    .join('+')

describe.skipIf(!hasChromium())('the shortcuts sheet', () => {
  let app: WebApp
  let browser: Browser
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    app = await startWebApp({ steps: [{ text: 'Sent with the key the sheet names.' }] as never })
    browser = await launchBrowser()
    ;({ page, errors } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })
  const sheet = () => page.locator('[data-testid="shortcuts"]')
  const shown = async () =>
    sheet()
      .locator('[data-binding]')
      .evaluateAll((rows) =>
        rows.map((r) => ({
          id: r.getAttribute('data-binding'),
          keys: r.querySelector('dt')?.textContent,
          label: r.querySelector('dd')?.textContent ?? '',
        })),
      )
  const keysOf = (id: string) => KEY_BINDINGS.find((b) => b.id === id)!.keys

  it('? opens a sheet listing every binding of the table, each with its label', async () => {
    await withArtifacts(page, 'shortcuts-sheet', async () => {
      await page.locator('textarea[data-composer="true"]').waitFor()
      await page.locator('body').click({ position: { x: 5, y: 5 } })
      await page.keyboard.press(press(keysOf('help')))
      await sheet().waitFor()
      const rows = await shown()
      expect(rows.map(({ id, keys }) => ({ id, keys }))).toEqual(KEY_BINDINGS.map(({ id, keys }) => ({ id, keys })))
      for (const row of rows) expect(row.label).toMatch(/^(?!shortcut\.)\S/)
      expect(await sheet().getByRole('heading').allTextContents()).toEqual(['Anywhere', 'In the message box'])
      await page.keyboard.press(press(keysOf('escape')))
      await sheet().waitFor({ state: 'detached' })
    })
  })

  it('the keys the sheet shows do what it says', async () => {
    await withArtifacts(page, 'shortcuts-keys', async () => {
      // The palette, from anywhere (even the composer), and the sheet from the palette.
      const composer = page.locator('textarea[data-composer="true"]')
      await composer.focus()
      await page.keyboard.press(press(keysOf('palette')))
      const palette = page.locator('[data-testid="command-palette"]')
      await palette.waitFor()
      await palette.getByRole('combobox').fill('shortcuts')
      await page.keyboard.press('Enter')
      await sheet().waitFor()
      await page.keyboard.press(press(keysOf('escape')))
      await sheet().waitFor({ state: 'detached' })
      // `/` outside a field moves to the session search.
      await page.locator('body').click({ position: { x: 5, y: 5 } })
      await page.keyboard.press(press(keysOf('search')))
      expect(await page.evaluate(() => document.activeElement?.getAttribute('type'))).toBe('search')
      // In the composer: Shift+Enter breaks the line, Enter sends, ↑ recalls the sent message.
      await composer.focus()
      await page.keyboard.type('first line')
      await page.keyboard.press(press(keysOf('newline')))
      await page.keyboard.type('second line')
      expect(await composer.inputValue()).toBe('first line\nsecond line')
      await page.keyboard.press(press(keysOf('send')))
      await page.locator('[data-node="assistant"]', { hasText: 'Sent with the key the sheet names.' }).waitFor()
      expect(await composer.inputValue()).toBe('')
      await page.keyboard.press(press(keysOf('historyPrev')))
      await expect.poll(() => composer.inputValue()).toBe('first line\nsecond line')
      expect(errors).toEqual([])
    })
  })
})
