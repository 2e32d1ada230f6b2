// `@` mentions in real Chromium against the real `dsh web` and the mock model: the file menu is
// fuzzy and respects .gitignore; a picked file's content reaches the model request as logged
// context; a file deleted after it was picked reaches the model as "no such file"; another
// session picked from the menu reaches the request as its summary.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, type Page, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const STEPS = [
  { text: 'It exports the answer.' },
  { text: 'Nothing attached.' },
  { text: 'That file is gone.' },
  { text: 'The other session ported a parser.' },
  { text: 'Read by the text rule.' },
]

describe.skipIf(!hasChromium())('ui-reference in the browser', () => {
  // The worker's shared host: this file's folder (app.cwd), script and requests are its own.
  const app = useWebApp({ steps: STEPS as never })
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    mkdirSync(join(app.cwd, 'src'))
    writeFileSync(join(app.cwd, 'src', 'main.ts'), 'export const answer = 42\n')
    writeFileSync(join(app.cwd, 'notes.md'), 'some notes\n')
    // Never deleted (notes.md is, by a test below): the stale-list test searches for it.
    mkdirSync(join(app.cwd, 'docs'))
    writeFileSync(join(app.cwd, 'docs', 'guide.md'), 'a guide\n')
    writeFileSync(join(app.cwd, 'secret-main.txt'), 'hidden\n')
    writeFileSync(join(app.cwd, '.gitignore'), 'secret-main.txt\n')
    ;({ page, errors } = await app.openPage())
  })
  const input = () => page.locator('textarea.dsh-composer-input')
  const lastRequest = () => JSON.stringify(app.mock.requests.at(-1)?.body)
  const items = () => page.locator('[data-trigger-menu="@"] [data-trigger-item]')

  it('an @file picked from the fuzzy menu reaches the request; ignored files are not offered', async () => {
    await withArtifacts(page, 'reference-file', async () => {
      await input().click()
      await page.keyboard.type('look at @mai')
      await expect.poll(async () => await items().allTextContents()).toEqual(['src/main.ts'])
      await page.keyboard.press('Enter')
      expect(await input().inputValue()).toBe('look at @src/main.ts ')
      await page.keyboard.type('please')
      await page.keyboard.press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'It exports the answer.' }).waitFor()
      expect(lastRequest()).toContain('<file path=\\"src/main.ts\\">\\nexport const answer = 42\\n</file>')
      const { events } = await app.call('sessions.history', {
        sessionId: new URL(page.url()).pathname.split('/').pop(),
      })
      // The context message follows the human one in the log.
      const sources = events.filter((e: any) => e.type === 'user/message').map((e: any) => e.data.source)
      const human = sources.findIndex((s: any) => s.kind === 'human')
      expect(sources.slice(human, human + 2)).toEqual([
        { kind: 'human', references: [{ kind: 'file', path: 'src/main.ts' }] },
        { kind: 'plugin', plugin: '@dsh/file-reference', label: '@src/main.ts' },
      ])
    })
  })

  it('typed @words stay text: no note for @nothing, no content for a typed (not picked) path', async () => {
    await withArtifacts(page, 'reference-typed', async () => {
      const sessionId = new URL(page.url()).pathname.split('/').pop()
      await input().click()
      await page.keyboard.type('@nothing here, and @src/main.ts typed by hand')
      await page.keyboard.press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Nothing attached.' }).waitFor()
      const body = lastRequest()
      expect(body).toContain('@nothing here, and @src/main.ts typed by hand')
      expect(body).not.toContain('no such file')
      const { events } = await app.call('sessions.history', { sessionId })
      const messages = events.filter((e: any) => e.type === 'user/message')
      const last = messages.findLastIndex((e: any) => e.data.source.kind === 'human')
      // The human message carries the (empty) list of picks, and nothing follows it.
      expect(messages[last].data.source).toEqual({ kind: 'human', references: [] })
      expect(messages.slice(last + 1)).toEqual([])
    })
  })

  it('a file deleted after it was mentioned reaches the model as missing', async () => {
    await withArtifacts(page, 'reference-deleted', async () => {
      await input().click()
      await page.keyboard.type('@notes')
      await expect.poll(async () => (await items().allTextContents())[0]).toBe('notes.md')
      await page.keyboard.press('Tab')
      rmSync(join(app.cwd, 'notes.md'))
      await page.keyboard.type('summarize')
      await page.keyboard.press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'That file is gone.' }).waitFor()
      expect(lastRequest()).toContain('unavailable=\\"missing\\">The user mentioned @notes.md, but no such file exists')
    })
  })

  it('another session picked from the menu reaches the request as its summary', async () => {
    await withArtifacts(page, 'reference-session', async () => {
      const first = new URL(page.url()).pathname.split('/').pop()!
      const { session } = await app.call('sessions.create', { cwd: app.cwd })
      await page.goto(`${app.url.replace(/\/$/, '')}/s/${session.sessionId}`)
      await page.locator('html[data-ready="true"]').waitFor()
      await input().click()
      await page.keyboard.type('what did @look')
      const sessionItem = page.locator(`[data-trigger-item="session:${first}"]`)
      await sessionItem.waitFor()
      await sessionItem.click()
      expect(await input().inputValue()).toBe(`what did @session:${first} `)
      await page.keyboard.type('do?')
      await page.keyboard.press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'The other session ported a parser.' }).waitFor()
      const body = lastRequest()
      expect(body).toContain(`<session id=\\"${first}\\"`)
      expect(body).toContain('Opening request:\\nlook at @src/main.ts please')
      expect(body).toContain('It exports the answer.')
      expect(errors).toEqual([])
    })
  })

  it('a prompt without references (an older client) keeps the text rule; bad references are refused', async () => {
    const { session } = await app.call('sessions.create', { cwd: app.cwd })
    const before = app.mock.requests.length
    await app.call('sessions.prompt', { sessionId: session.sessionId, text: 'see @src/main.ts and @nothing' })
    await expect.poll(() => app.mock.requests.length, { timeout: 30_000 }).toBe(before + 1)
    const body = lastRequest()
    expect(body).toContain('<file path=\\"src/main.ts\\">\\nexport const answer = 42\\n</file>')
    expect(body).not.toContain('no such file')
    await expect(
      app.call('sessions.prompt', { sessionId: session.sessionId, text: 'x', references: [{ kind: 'file' }] }),
    ).rejects.toThrow(/400 INVALID_PARAMS.*references/)
  })
  it("Enter pressed while the menu still lists an earlier query's files waits for the typed query's list", async () => {
    await withArtifacts(page, 'reference-stale-enter', async () => {
      await input().fill('')
      await input().click()
      await page.keyboard.type('see @')
      await items().first().waitFor()
      const first = (await items().allTextContents())[0]
      // A query whose answer is not the first row of the "@" list on screen, for a file no other
      // test deletes (a search for notes.md, deleted above, found nothing once the file index
      // caught up, and the Enter was rightly spent on an empty list).
      const [query, file] = first === 'docs/guide.md' ? ['main', 'src/main.ts'] : ['guide', 'docs/guide.md']
      let release = () => {}
      const held = new Promise<void>((resolve) => (release = resolve))
      let asked = () => {}
      const askedFor = new Promise<void>((resolve) => (asked = resolve))
      await page.route('**/api/files.search', async (route) => {
        if (route.request().postDataJSON()?.query === query) {
          asked()
          await held
        }
        await route.continue()
      })
      try {
        await page.keyboard.insertText(query)
        await askedFor
        // The "@" list is still on screen while this query's search is held.
        expect(await items().first().textContent()).toBe(first)
        await page.keyboard.press('Enter')
        release()
        await expect.poll(() => input().inputValue()).toBe(`see @${file} `)
      } finally {
        release()
        await page.unroute('**/api/files.search')
      }
      await input().fill('')
    })
  })
})
