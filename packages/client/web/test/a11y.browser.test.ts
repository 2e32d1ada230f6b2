// Accessibility gate of issue 38: axe-core (as @axe-core/playwright ships it) in real Chromium against
// the real `dsh web` with the web bundle's browser halves and the mock model. Each view is checked
// in light and dark; a serious or critical violation of WCAG 2.1 A/AA fails the test and is
// printed with its rule, impact and the elements it names. One host and one browser for the file;
// the mock serves its steps in the order the tests prompt.
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
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

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 })

const STREAM = Array.from({ length: 16 }, (_, i) => (i === 0 ? 'Here is a **streamed** answer' : ` part ${i}`))
const STEPS = [
  // streaming answer: held after its first half until the test has checked the streaming view
  { events: STREAM.flatMap((text, i) => (i === STREAM.length / 2 ? [{ gate: 'checked' }, { text }] : [{ text }])) },
  // tool cards with a diff
  { toolCalls: [{ name: 'bash', arguments: { command: "printf 'one\\ntwo\\n'", description: 'Print two lines' } }] },
  { toolCalls: [{ name: 'read', arguments: { file_path: 'notes.txt' } }] },
  { toolCalls: [{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'BETA' } }] },
  { text: 'Edited the notes:\n\n```ts\nconst a = 1\n```\n\n| tool | result |\n|---|---|\n| edit | ok |\n' },
  // approval
  {
    toolCalls: [
      {
        name: 'bash',
        arguments: {
          command: 'echo outside',
          description: 'Outside',
          sandbox_escalation: { justification: 'needs it' },
        },
      },
    ],
  },
  { text: 'Allowed.' },
  // question
  {
    toolCalls: [
      {
        name: 'ask_user_question',
        arguments: {
          questions: [
            {
              id: 'db',
              question: 'Which database?',
              header: 'Database',
              options: [{ label: 'SQLite', description: 'one file' }, { label: 'Postgres' }],
            },
          ],
        },
      },
    ],
  },
  { text: 'SQLite it is.' },
]
// The question view needs the ask_user_question tool, which the web bundle does not mount.
const ASK_USER = fileURLToPath(new URL('../../../interaction/tool-ask-user/dist/index.js', import.meta.url))

type Impact = 'minor' | 'moderate' | 'serious' | 'critical'
interface AxeViolation {
  id: string
  impact?: Impact | null
  help: string
  nodes: { target: string[]; failureSummary?: string }[]
}
// axe-core itself, as @axe-core/playwright ships it (its dependency, so resolved from there).
const axeRequire = createRequire(createRequire(import.meta.url).resolve('@axe-core/playwright'))
const AXE_SOURCE = readFileSync(axeRequire.resolve('axe-core/axe.min.js'), 'utf8')
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']

/**
 * Serious and critical WCAG 2.1 A/AA violations on the page as it is now, one line each. axe is
 * put into the page once (again only after a navigation) and runs there with `axe.run`, as the
 * builder of @axe-core/playwright does in its legacy mode; the builder injected its 650 KB again
 * for every check and, in its default mode, merged the result in a new blank page with a second
 * injection (about 0.85 s per check against 0.17 s, on a loaded machine). The client draws no
 * iframes, which a per-frame run would be needed for (asserted).
 */
async function violations(page: Page): Promise<string[]> {
  expect(page.frames()).toHaveLength(1)
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE)
  // Colours mid-transition (a theme switch fades them, a dialog fades in) are not the view's:
  // wait for every finite animation and transition running now to end (spinners run forever,
  // paused ones would never end).
  await page.evaluate(() =>
    Promise.allSettled(
      document
        .getAnimations()
        .filter((a) => a.playState === 'running' && a.effect?.getComputedTiming().endTime !== Number.POSITIVE_INFINITY)
        .map((a) => a.finished),
    ),
  )
  const found = (await page.evaluate(
    (tags) =>
      (window as unknown as { axe: { run(context: Document, options: unknown): Promise<{ violations: unknown }> } }).axe
        .run(document, { runOnly: { type: 'tag', values: tags } })
        .then((result) => result.violations),
    WCAG_TAGS,
  )) as AxeViolation[]
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} — ${v.nodes
          .slice(0, 4)
          .map((n) => `${n.target.join(' ')} [${(n.failureSummary ?? '').split('\n').slice(1).join(' ').trim()}]`)
          .join(' | ')}`,
    )
}

async function setTheme(page: Page, theme: 'light' | 'dark') {
  await page.evaluate((t) => (globalThis as any).__dsh.theme.set(t), theme)
  await page.waitForSelector(`html[data-theme="${theme}"]`)
}

/** axe in light, then in dark; returns what each found (empty when clean). */
async function bothThemes(page: Page, view: string): Promise<Record<string, string[]>> {
  const found: Record<string, string[]> = {}
  for (const theme of ['light', 'dark'] as const) {
    await setTheme(page, theme)
    found[`${view} ${theme}`] = await violations(page)
    // DSH_A11Y_SHOTS=dir keeps a picture of each view checked (for looking at the design).
    if (process.env.DSH_A11Y_SHOTS)
      await page.screenshot({ path: join(process.env.DSH_A11Y_SHOTS, `${view}-${theme}.png`) })
  }
  return found
}

const clean = (found: Record<string, string[]>) => Object.fromEntries(Object.keys(found).map((k) => [k, []]))

let app: WebApp
let browser: Browser
let page: Page
let errors: string[]

beforeAll(async () => {
  app = await startWebApp({
    steps: STEPS as never,
    patch: `- insert:\n    - id: tool-ask-user\n      name: ${JSON.stringify(ASK_USER)}\n`,
  })
  writeFileSync(join(app.cwd, 'notes.txt'), 'alpha\nbeta\ngamma\n')
  browser = await launchBrowser()
  const opened = await openPage(browser, app.url)
  page = opened.page
  errors = opened.errors
  await page.waitForURL(/\/s\/[^/]+$/)
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
})

const sessionId = () => decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
const send = async (text: string) => {
  const input = page.locator('textarea[data-composer="true"]')
  await input.fill(text)
  await input.press('Enter')
}
const idle = () =>
  expect
    .poll(
      async () => (await app.call('sessions.list', {})).sessions.find((s: any) => s.sessionId === sessionId())?.status,
      {
        timeout: 20_000,
      },
    )
    .not.toBe('running')

describe.skipIf(!hasChromium())('dsh web accessibility (axe, WCAG 2.1 AA, light and dark)', () => {
  it('empty session', async () => {
    await withArtifacts(page, 'a11y-empty', async () => {
      await page.locator('textarea[data-composer="true"]').waitFor()
      // The design system's stylesheet is on the page (tokens for both schemes).
      expect(
        await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--dsh-color-bg')),
      ).toBe('#ffffff')
      const found = await bothThemes(page, 'empty')
      expect(found).toEqual(clean(found))
      // One control group, in the composer: one model picker on the page (it used to be in the
      // header and in the composer), beside the effort and the permission mode.
      const group = page.locator('.dsh-composer-tools')
      expect(await page.locator('select[aria-label="Model"]').count()).toBe(1)
      expect(await group.locator('select[aria-label="Model"]').count()).toBe(1)
      expect(await group.locator('select[aria-label="Reasoning effort"]').count()).toBe(1)
      expect(await group.locator('select[aria-label="Permissions"]').count()).toBe(1)
      // The side panel has nothing to show yet: its column is collapsed.
      expect(await page.locator('[data-testid="side-panel"]').isVisible()).toBe(false)
      // The empty state says where dsh works and offers starters that fill the composer.
      const empty = page.locator('[data-testid="empty-state"]')
      expect(await empty.textContent()).toContain(app.cwd)
      await empty.getByRole('button', { name: 'Review my uncommitted changes' }).click()
      const input = page.locator('textarea[data-composer="true"]')
      expect(await input.inputValue()).toBe('Review my uncommitted changes')
      expect(await input.evaluate((el) => el === document.activeElement)).toBe(true)
      await input.fill('')
    })
  })

  it('an image in the composer and its viewer', async () => {
    await withArtifacts(page, 'a11y-image', async () => {
      // A PNG drawn in the page, pasted into the composer (uploaded, shown as a thumbnail).
      await page.locator('textarea[data-composer="true"]').evaluate(async (el) => {
        const canvas = Object.assign(document.createElement('canvas'), { width: 24, height: 24 })
        canvas.getContext('2d')!.fillRect(0, 0, 24, 24)
        const blob = await new Promise<Blob>((done) => canvas.toBlob((b) => done(b!), 'image/png'))
        const data = new DataTransfer()
        data.items.add(new File([blob], 'square.png', { type: 'image/png' }))
        el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }))
      })
      await page.getByRole('button', { name: 'View image square.png' }).waitFor()
      const found = { 'composer image light': await violations(page) }
      await page.getByRole('button', { name: 'View image square.png' }).click()
      await page.getByTestId('image-viewer').waitFor()
      Object.assign(found, await bothThemes(page, 'image-viewer'))
      await page.keyboard.press('Escape')
      await page.getByTestId('image-viewer').waitFor({ state: 'detached' })
      await setTheme(page, 'light')
      await page.getByRole('button', { name: 'Remove image square.png' }).click()
      expect(found).toEqual(clean(found))
    })
  })

  it('streaming answer', async () => {
    await withArtifacts(page, 'a11y-streaming', async () => {
      await send('stream something')
      const streaming = page.locator('[data-node="assistant"][data-streaming]')
      await streaming.waitFor({ timeout: 20_000 })
      const found = await bothThemes(page, 'streaming')
      // Still streaming when both checks ran (the answer waits at its gate): the view checked is
      // the streaming one.
      expect(await streaming.count()).toBe(1)
      expect(found).toEqual(clean(found))
      app.mock.release('checked')
      await idle()
    })
  })

  it('tool cards with a diff', async () => {
    await withArtifacts(page, 'a11y-tools', async () => {
      await send('edit the notes')
      await page.locator('[data-node="tool"][data-tool="edit"] [data-diff="add"]').first().waitFor({ timeout: 20_000 })
      await page.getByText('Edited the notes:').waitFor({ timeout: 20_000 })
      await idle()
      const found = await bothThemes(page, 'tools')
      expect(found).toEqual(clean(found))
    })
  })

  it('approval', async () => {
    await withArtifacts(page, 'a11y-approval', async () => {
      await app.call('sessions.setPermissionMode', { sessionId: sessionId(), mode: 'workspace-write' })
      await send('run it outside')
      const takeover = page.locator('.dsh-approval')
      await takeover.waitFor({ timeout: 20_000 })
      const found = await bothThemes(page, 'approval')
      await takeover.getByRole('button', { name: 'Allow once' }).click()
      await page.getByText('Allowed.', { exact: true }).waitFor({ timeout: 20_000 })
      expect(found).toEqual(clean(found))
      await idle()
    })
  })

  it('question', async () => {
    await withArtifacts(page, 'a11y-question', async () => {
      await send('ask me')
      const form = page.locator('.dsh-question')
      await form.waitFor({ timeout: 20_000 })
      const found = await bothThemes(page, 'question')
      await form.getByLabel('SQLite').check()
      await form.getByRole('button', { name: 'Send answers' }).click()
      await page.getByText('SQLite it is.', { exact: true }).waitFor({ timeout: 20_000 })
      expect(found).toEqual(clean(found))
      await idle()
    })
  })

  it('settings', async () => {
    await withArtifacts(page, 'a11y-settings', async () => {
      await page.locator('.footer-controls button[aria-label="Settings"]').click()
      await page.getByRole('dialog').waitFor()
      await page.waitForSelector('[data-testid="settings-dialog"] [data-section]')
      const found = await bothThemes(page, 'settings')
      // Tools and integrations: the model's tools and what the agent connects to, with switches.
      await page.locator('[data-testid="settings-dialog"] [data-section="tools"]').click()
      const tools = page.locator('[data-testid="settings-tools"]')
      await tools.locator('[data-tool-group="tools"] [data-plugin]').first().waitFor()
      Object.assign(found, await bothThemes(page, 'settings-tools'))
      await page.keyboard.press('Escape')
      await page.getByRole('dialog').waitFor({ state: 'detached' })
      expect(found).toEqual(clean(found))
    })
  })

  it('trajectory', async () => {
    await withArtifacts(page, 'a11y-trajectory', async () => {
      await page.locator('[data-trajectory-open]').click()
      await page.locator('[data-trajectory] tr[data-trajectory-request]').first().waitFor({ timeout: 20_000 })
      const found = await bothThemes(page, 'trajectory')
      await page.keyboard.press('Escape')
      await expect.poll(() => page.locator('[data-trajectory]').count()).toBe(0)
      expect(found).toEqual(clean(found))
    })
  })

  it('command palette (Ctrl+K): finds sessions and commands, runs one with Enter', async () => {
    await withArtifacts(page, 'a11y-palette', async () => {
      const first = sessionId()
      // Another session to move to (the palette lists sessions by title, newest first).
      const { session } = await app.call('sessions.create', { cwd: app.cwd })
      await expect.poll(() => page.locator(`.session-item[data-session-id="${session.sessionId}"]`).count()).toBe(1)
      await page.locator('textarea[data-composer="true"]').focus()
      await page.keyboard.press('Control+k')
      const palette = page.locator('[data-testid="command-palette"]')
      await palette.waitFor()
      const found = await bothThemes(page, 'palette')
      const input = palette.getByRole('combobox')
      expect(await input.evaluate((el) => el === document.activeElement)).toBe(true)
      await input.fill('stream some')
      await expect
        .poll(() =>
          palette.locator('[role="option"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-palette-item'))),
        )
        .toEqual([`session:${first}`])
      await page.goto(`${app.url}/s/${encodeURIComponent(session.sessionId)}`)
      await page.waitForSelector('html[data-ready="true"]')
      await page.keyboard.press('Control+k')
      await palette.getByRole('combobox').fill('stream some')
      await page.keyboard.press('Enter')
      await page.waitForURL(new RegExp(`/s/${encodeURIComponent(first)}$`))
      expect(await palette.count()).toBe(0)
      // A command: the theme, by name.
      await page.keyboard.press('Control+k')
      await palette.getByRole('combobox').fill('dark')
      await page.keyboard.press('Enter')
      await page.waitForSelector('html[data-theme="dark"]')
      await setTheme(page, 'light')
      expect(found).toEqual(clean(found))
    })
  })

  it('phone (390x844): conversation, and the sidebar as a drawer', async () => {
    const phone = await openPage(browser, `${app.url}/s/${encodeURIComponent(sessionId())}`)
    await phone.page.setViewportSize({ width: 390, height: 844 })
    await withArtifacts(phone.page, 'a11y-mobile', async () => {
      await phone.page.getByText('Allowed.', { exact: true }).waitFor({ timeout: 20_000 })
      // The composer is reachable and the sidebar is off screen until the menu button opens it.
      const composer = phone.page.locator('textarea[data-composer="true"]')
      expect(await composer.isVisible()).toBe(true)
      const box = await composer.boundingBox()
      expect(box && box.y + box.height).toBeLessThanOrEqual(844)
      // (The page was resized after it loaded: the drawer slides out of view first.)
      await expect.poll(() => phone.page.locator('#dsh-sidebar').isVisible()).toBe(false)
      const found = await bothThemes(phone.page, 'mobile')
      await phone.page.getByRole('button', { name: 'Toggle sidebar' }).click()
      await expect.poll(() => phone.page.locator('#dsh-sidebar').isVisible()).toBe(true)
      Object.assign(found, await bothThemes(phone.page, 'mobile-drawer'))
      await phone.page.keyboard.press('Escape')
      await expect.poll(() => phone.page.locator('#dsh-sidebar').isVisible()).toBe(false)
      expect(found).toEqual(clean(found))
      expect(phone.errors).toEqual([])
    })
    await phone.context.close()
  })

  it('no console errors on the way', () => {
    expect(errors).toEqual([])
  })
})
