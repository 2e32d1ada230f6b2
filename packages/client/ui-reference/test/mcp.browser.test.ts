// MCP in the web client, in real Chromium against the real `dsh web` and the mock model, with a
// server on the official SDK (@dsh/mcp-client's test fixture, started by the client row): a long
// tool call's notifications/progress show on its running card as a bar with "3/10 message", and
// a prompt the server adds mid-session (notifications/prompts/list_changed) joins a `/` menu that
// is open at the time (the host's `commands/changed` push); the `@` menu lists the server's
// resources, and only a picked one becomes context. A server mounted in the session's own scope (a
// plugin's per-session server, as an editor's are) is in that session's `@` menu too, with its
// resource template: picking it asks for the template's variable in a small form (keyboard only;
// an empty value is refused) and the filled URI is what the model reads. A server a live subagent
// mounts for itself is listed too, labelled with the subagent, and joins an `@` menu already open.
// An Enter pressed while the `@` menu waits for the typed query's list still picks from it when a
// resource list change makes the menu ask again meanwhile.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
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

const fixture = fileURLToPath(new URL('../../../mcp/mcp-client/test/fixtures/changing-server.mjs', import.meta.url))
const notes = fileURLToPath(new URL('../../../mcp/mcp-client/test/fixtures/notes-server.mjs', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'dsh-mcp-web-'))
const release = join(scratch, 'release')
const childRelease = join(scratch, 'child-release')
const holdA = join(scratch, 'hold-a')
const holdB = join(scratch, 'hold-b')
// A plugin that mounts the notes server in the scope of each agent, as an editor's per-session
// servers are mounted (ctx.mcp.add with the agent's scope); a subagent's is named `subnotes`.
const perSession = join(scratch, 'per-session-mcp.mjs')
writeFileSync(
  perSession,
  `export const name = 'per-session-mcp'
export const inject = ['mcp']
export function apply(ctx) {
  ctx.on('agent/created', (agent) => {
    ctx.mcp.add(agent.session.parent ? 'subnotes' : 'notes', { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(notes)}] }, { scope: agent.scope })
  })
}
`,
)
const PATCH = `- id: mcp
  config:
    servers:
      changing: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(fixture)}] }
- insert:
    - id: per-session-mcp
      name: ${JSON.stringify(perSession)}
`
const STEPS = [
  { toolCalls: [{ id: 'c_slow', name: 'mcp__changing__slow', arguments: { done: 3, total: 10, release } }] },
  { text: 'Released.' },
  { toolCalls: [{ id: 'c_add', name: 'mcp__changing__add_prompt', arguments: { name: 'fresh' } }] },
  { text: 'Added.' },
  { text: 'Counted.' },
  { text: 'Noted.' },
  { text: 'Day noted.' },
  // The parent starts a subagent; the subagent holds its turn on the slow tool until released.
  { toolCalls: [{ id: 'c_sub', name: 'subagent', arguments: { description: 'hold', prompt: 'hold on' } }] },
  {
    toolCalls: [{ id: 'c_hold', name: 'mcp__changing__slow', arguments: { done: 1, total: 1, release: childRelease } }],
  },
  { text: 'Child done.' },
  { text: 'Parent done.' },
  // A background subagent: it and its parent each hold a slow call (which gets which step is
  // the order of their requests, told apart by their bodies); the parent then reads a mention.
  {
    toolCalls: [
      { id: 'c_bg', name: 'subagent', arguments: { description: 'bg', prompt: 'hold on', background: true } },
    ],
  },
  { toolCalls: [{ id: 'c_a', name: 'mcp__changing__slow', arguments: { done: 1, total: 1, release: holdA } }] },
  { toolCalls: [{ id: 'c_b', name: 'mcp__changing__slow', arguments: { done: 1, total: 1, release: holdB } }] },
  { text: 'Read it.' },
  { text: 'Background done.' },
  // Another session adds a resource while this one's `@` menu waits for its list.
  { toolCalls: [{ id: 'c_res', name: 'mcp__changing__add_resource', arguments: { name: 'late' } }] },
  { text: 'Resource added.' },
]

describe.skipIf(!hasChromium())('MCP in the web client', () => {
  let app: WebApp
  let browser: Browser
  let page: Page
  beforeAll(async () => {
    app = await startWebApp({ steps: STEPS as never, patch: PATCH })
    browser = await launchBrowser()
    ;({ page } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })
  const input = () => page.locator('textarea.dsh-composer-input')

  it("draws a running call's progress on its card, then its result", async () => {
    await withArtifacts(page, 'mcp-progress', async () => {
      await input().click()
      await page.keyboard.type('run the slow one')
      await page.keyboard.press('Enter')
      // The server holds its answer until `release` exists: the card can only be running here.
      const progress = page.locator('[data-call="c_slow"] .dsh-tool-progress[data-progress="3/10"]')
      await progress.waitFor()
      expect(await progress.textContent()).toContain('step 3 of 10')
      expect(await progress.locator('progress').getAttribute('value')).toBe('0.3')
      writeFileSync(release, '')
      await page.locator('[data-node="assistant"]', { hasText: 'Released.' }).waitFor()
      await expect.poll(() => page.locator('[data-call="c_slow"] .dsh-tool-progress').count()).toBe(0)
    })
  })

  it('adds a prompt the server lists while the / menu is open to that open menu', async () => {
    await withArtifacts(page, 'mcp-list-changed', async () => {
      await input().click()
      await page.keyboard.type('/mcp__changing__')
      const menu = page.locator('[data-trigger-menu="/"]')
      await menu.locator('[data-trigger-item="mcp__changing__hello"]').waitFor()
      const opened = await menu.elementHandle()
      // Another session makes the server add a prompt (its list_changed reaches the host) while
      // this menu stays open; nothing is typed here meanwhile.
      const { session } = await app.call<{ session: { sessionId: string } }>('sessions.create', { cwd: app.cwd })
      await app.call('sessions.prompt', { sessionId: session.sessionId, text: 'add a prompt' })
      await menu.locator('[data-trigger-item="mcp__changing__fresh"]').waitFor()
      // The same menu (not one opened again) and the same text under the caret.
      expect(await opened?.evaluate((el) => el.isConnected)).toBe(true)
      expect(await input().inputValue()).toBe('/mcp__changing__')
      expect(await menu.locator('[data-trigger-item="mcp__changing__hello"]').count()).toBe(1)
      await page.keyboard.press('Escape')
      await input().fill('')
      // The other session's turn ends before this one asks the model again (the steps are shared).
      await expect
        .poll(async () => JSON.stringify((await app.call('sessions.history', session)).events))
        .toContain('Added.')
    })
  })

  it('lists MCP resources in the @ menu; a picked one becomes context, a typed one stays text', async () => {
    await withArtifacts(page, 'mcp-resource-menu', async () => {
      await input().fill('')
      await input().click()
      await page.keyboard.type('typed @changing:fixture://hello and picked @coun')
      const item = page.locator('[data-trigger-menu="@"] [data-trigger-item="mcp:changing:fixture://counter"]')
      await item.waitFor()
      await page.keyboard.press('Enter')
      expect(await input().inputValue()).toBe('typed @changing:fixture://hello and picked @changing:fixture://counter ')
      await page.keyboard.press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Counted.' }).waitFor()
      const body = JSON.stringify(app.mock.requests.at(-1)?.body)
      expect(body).toContain('<resource server=\\"changing\\" uri=\\"fixture://counter\\">')
      expect(body).not.toContain('<resource server=\\"changing\\" uri=\\"fixture://hello\\">')
      const { events } = await app.call('sessions.history', {
        sessionId: new URL(page.url()).pathname.split('/').pop(),
      })
      const human = events.filter((e: any) => e.type === 'user/message' && e.data.source.kind === 'human').at(-1)
      expect(human.data.source.references).toEqual([{ kind: 'resource', server: 'changing', uri: 'fixture://counter' }])
    })
  })

  it("lists the session's own scoped server in the @ menu", async () => {
    await withArtifacts(page, 'mcp-scoped-resources', async () => {
      const sessionId = new URL(page.url()).pathname.split('/').pop()!
      await input().fill('')
      await input().click()
      await page.keyboard.type('see @notes:')
      const menu = page.locator('[data-trigger-menu="@"]')
      const today = menu.locator('[data-trigger-item="mcp:notes:notes://today"]')
      await today.waitFor()
      expect(await menu.locator('[data-trigger-item^="mcp:notes:"]').count()).toBe(1)
      await menu.locator('[data-trigger-item="mcp-template:notes:notes://day/{day}"]').waitFor()
      await page.keyboard.press('Enter')
      await page.keyboard.press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Noted.' }).waitFor()
      const body = JSON.stringify(app.mock.requests.at(-1)?.body)
      expect(body).toContain('<resource server=\\"notes\\" uri=\\"notes://today\\">')
      expect(body).toContain("today's note")
      // The method: templates unless asked without; another session (no live agent) sees globals only.
      const all = await app.call('mcp.resources', { sessionId, query: 'notes' })
      expect(all.resources.map((r: { uri: string }) => r.uri)).toEqual(['notes://today', 'notes://day/{day}'])
      const { session } = await app.call<{ session: { sessionId: string } }>('sessions.create', { cwd: app.cwd })
      const other = await app.call('mcp.resources', { sessionId: session.sessionId })
      expect(other.resources.map((r: { server: string }) => r.server)).toContain('changing')
      expect(other.resources.map((r: { server: string }) => r.server)).not.toContain('notes')
    })
  })

  it("asks for a picked template's variables, refuses an empty one, and sends the filled URI", async () => {
    await withArtifacts(page, 'mcp-template-form', async () => {
      await input().fill('')
      await input().click()
      await page.keyboard.type('see @notes:notes://day')
      const item = page.locator('[data-trigger-menu="@"] [data-trigger-item="mcp-template:notes:notes://day/{day}"]')
      await item.waitFor()
      expect(await item.textContent()).toContain('template')
      // Keyboard only: move to the template's row and pick it.
      for (let i = 0; i < 5 && (await item.getAttribute('aria-selected')) !== 'true'; i++)
        await page.keyboard.press('ArrowDown')
      expect(await item.getAttribute('aria-selected')).toBe('true')
      await page.keyboard.press('Enter')
      const form = page.getByRole('dialog', { name: 'Fill in @notes:notes://day/{day}' })
      const day = form.getByRole('textbox', { name: 'day' })
      await day.waitFor()
      expect(await day.evaluate((el) => el === document.activeElement)).toBe(true)
      // Nothing is inserted yet: the composer still holds what was typed.
      expect(await input().inputValue()).toBe('see @notes:notes://day')
      // An empty value is refused with a message naming the variable; the focus stays on it.
      await page.keyboard.press('Enter')
      const alert = form.getByRole('alert')
      await alert.waitFor()
      expect(await alert.textContent()).toBe(
        '"day" is empty: a resource template needs a value for each of its variables.',
      )
      expect(await day.getAttribute('aria-invalid')).toBe('true')
      expect(await day.evaluate((el) => el === document.activeElement)).toBe(true)
      await page.keyboard.type('monday')
      await page.keyboard.press('Enter')
      await form.waitFor({ state: 'detached' })
      expect(await input().inputValue()).toBe('see @notes:notes://day/monday ')
      expect(await input().evaluate((el) => el === document.activeElement)).toBe(true)
      await page.keyboard.press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Day noted.' }).waitFor()
      const body = JSON.stringify(app.mock.requests.at(-1)?.body)
      expect(body).toContain('<resource server=\\"notes\\" uri=\\"notes://day/monday\\">')
      expect(body).toContain('note of monday')
      const sessionId = new URL(page.url()).pathname.split('/').pop()
      const { events } = await app.call('sessions.history', { sessionId })
      const human = events.filter((e: any) => e.type === 'user/message' && e.data.source.kind === 'human').at(-1)
      expect(human.data.source.references).toEqual([{ kind: 'resource', server: 'notes', uri: 'notes://day/monday' }])
    })
  })

  it('closes the template form on Escape without inserting anything', async () => {
    await withArtifacts(page, 'mcp-template-escape', async () => {
      await input().fill('')
      await input().click()
      await page.keyboard.type('@notes:notes://day')
      const item = page.locator('[data-trigger-menu="@"] [data-trigger-item="mcp-template:notes:notes://day/{day}"]')
      await item.click()
      const form = page.getByRole('dialog', { name: 'Fill in @notes:notes://day/{day}' })
      await form.getByRole('textbox', { name: 'day' }).waitFor()
      await page.keyboard.type('tuesday')
      await page.keyboard.press('Escape')
      await form.waitFor({ state: 'detached' })
      expect(await input().inputValue()).toBe('@notes:notes://day')
      expect(await input().evaluate((el) => el === document.activeElement)).toBe(true)
      await input().fill('')
    })
  })

  it('lists the servers a live subagent of the session mounts for itself, labelled', async () => {
    await withArtifacts(page, 'mcp-subagent-resources', async () => {
      const sessionId = new URL(page.url()).pathname.split('/').pop()!
      await input().fill('')
      await input().click()
      // The menu is open before the subagent exists; its server joins the open menu (the host's
      // `mcp/resources-changed` push) without a keystroke.
      await page.keyboard.type('@subnotes')
      await page.locator('[data-trigger-menu="@"]').waitFor()
      await app.call('sessions.prompt', { sessionId, text: 'start a subagent' })
      const item = page.locator('[data-trigger-menu="@"] [data-trigger-item="mcp:subnotes:notes://today"]')
      await item.waitFor()
      expect(await input().inputValue()).toBe('@subnotes')
      // The subagent holds its turn on the slow call: it is live.
      await expect.poll(() => app.mock.requests.length).toBe(9)
      expect(await item.textContent()).toContain('subagent sub-1')
      // Listed once each: the global server and the session's own are not repeated for the subagent.
      type Match = { server: string; uri: string; via?: string }
      const listed: Match[] = (await app.call('mcp.resources', { sessionId })).resources
      const keys = listed.map((r) => `${r.server}:${r.uri}`)
      expect(new Set(keys).size).toBe(keys.length)
      expect(listed.filter((r) => r.server === 'subnotes').map((r) => r.via)).toEqual([
        'subagent sub-1',
        'subagent sub-1',
      ])
      expect(listed.filter((r) => r.server !== 'subnotes').every((r) => r.via === undefined)).toBe(true)
      await page.keyboard.press('Escape')
      await input().fill('')
      writeFileSync(childRelease, '')
      await page.locator('[data-node="assistant"]', { hasText: 'Parent done.' }).waitFor()
      // Once the subagent ended, its servers are no longer the session's.
      const after: Match[] = (await app.call('mcp.resources', { sessionId })).resources
      expect(after.map((r) => r.server)).not.toContain('subnotes')
    })
  })

  it("reads a mention of a live subagent's own server for the parent", async () => {
    const sessionId = new URL(page.url()).pathname.split('/').pop()!
    const before = app.mock.requests.length
    await app.call('sessions.prompt', { sessionId, text: 'start one in the background' })
    // The parent's second request and the subagent's first each hold a slow call.
    await expect.poll(() => app.mock.requests.length).toBe(before + 3)
    const held = app.mock.requests.slice(before + 1, before + 3)
    const parentFirst = JSON.stringify(held[0].body).includes('c_bg')
    const [parentHold, childHold] = parentFirst ? [holdA, holdB] : [holdB, holdA]
    const steered = await app.call('sessions.prompt', {
      sessionId,
      text: 'read @subnotes:notes://today',
      mode: 'steer',
      references: [{ kind: 'resource', server: 'subnotes', uri: 'notes://today' }],
    })
    expect(steered.disposition).toBe('steered')
    writeFileSync(parentHold, '')
    await expect.poll(() => app.mock.requests.length).toBe(before + 4)
    const read = JSON.stringify(app.mock.requests[before + 3].body)
    expect(read).toContain('<resource server=\\"subnotes\\" uri=\\"notes://today\\">')
    expect(read).toContain("today's note")
    writeFileSync(childHold, '')
    await expect.poll(() => app.mock.requests.length).toBe(before + 5)
  })

  it('an Enter waiting for its list still picks when a resource list change asks again', async () => {
    await withArtifacts(page, 'mcp-pending-refresh', async () => {
      const items = () => page.locator('[data-trigger-menu="@"] [data-trigger-item]')
      await input().fill('')
      await input().click()
      await page.keyboard.type('see @')
      await items().first().waitFor()
      const first = await items().first().getAttribute('data-trigger-item')
      // The file search of the typed query is held; the menu asks it twice (the second time when
      // the host says a server's resources changed), and both wait until released.
      let release = () => {}
      const held = new Promise<void>((resolve) => (release = resolve))
      let asks = 0
      let askedAgain = () => {}
      const secondAsk = new Promise<void>((resolve) => (askedAgain = resolve))
      await page.route('**/api/files.search', async (route) => {
        if (route.request().postDataJSON()?.query === 'hello') {
          if (++asks === 2) askedAgain()
          await held
        }
        await route.continue().catch(() => {}) // the first ask's request is aborted by the second
      })
      try {
        await page.keyboard.insertText('hello')
        await expect.poll(() => asks).toBe(1)
        expect(await items().first().getAttribute('data-trigger-item')).toBe(first)
        await page.keyboard.press('Enter')
        const other = await app.call<{ session: { sessionId: string } }>('sessions.create', { cwd: app.cwd })
        await app.call('sessions.prompt', { sessionId: other.session.sessionId, text: 'add a resource' })
        await secondAsk
        release()
        await expect.poll(() => input().inputValue()).toBe('see @changing:fixture://hello ')
        await expect
          .poll(async () => JSON.stringify((await app.call('sessions.history', other.session)).events))
          .toContain('Resource added.')
      } finally {
        release()
        await page.unroute('**/api/files.search')
      }
      await input().fill('')
    })
  })
})
