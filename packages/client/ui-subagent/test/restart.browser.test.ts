// A child the host no longer runs: the host process is killed (SIGKILL) while a background child
// waits on the model, so the parent's log leaves the child open; after the restart the panel shows
// it as interrupted, which only the host's `subagents.list` can tell (the log says "open").
import { execFileSync } from 'node:child_process'
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

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 })

const call = (id: string, name: string, args: object) => ({ id, name, arguments: args })
const STEPS = [
  // 0 parent: a background child, then bash that waits for a file nobody writes.
  {
    toolCalls: [
      call('c_bg', 'subagent', { description: 'Hang forever', prompt: 'HANG', background: true }),
      call('c_wait', 'bash', { command: 'while [ ! -f never ]; do sleep 0.1; done', description: 'Wait' }),
    ],
  },
  // 1 the child's request never answers.
  { events: [{ stall: true }] },
]

describe.skipIf(!hasChromium())('ui-subagent after a host restart', () => {
  let app: WebApp
  let browser: Browser
  beforeAll(async () => {
    app = await startWebApp({ steps: STEPS as never })
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })

  /** The pid of the dsh process this test started: the one listening on the app's port. */
  const hostPid = (): number => {
    const out = execFileSync('ss', ['-ltnpH', `sport = :${app.port}`], { encoding: 'utf8' })
    const pid = /pid=(\d+)/.exec(out)?.[1]
    if (!pid) throw new Error(`no process listens on port ${app.port}: ${out}`)
    return Number(pid)
  }

  it('a child left open by a killed host shows as interrupted after the restart', async () => {
    const { page, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'subagent-restart', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      const input = page.locator('textarea.dsh-composer-input')
      await input.fill('start it')
      await input.press('Enter')
      const row = page.locator('[data-panel="subagents"] li[data-subagent="sub-1"]')
      await expect.poll(() => row.getAttribute('data-status'), { timeout: 30_000 }).toBe('running')
      await expect.poll(() => app.mock.requests.length).toBe(2)
      process.kill(hostPid(), 'SIGKILL')
      await app.restart()
      await page.reload()
      await page.waitForSelector('html[data-ready="true"]')
      await expect.poll(() => row.getAttribute('data-status'), { timeout: 30_000 }).toBe('interrupted')
      expect(await row.locator('.dsh-subagent-spinner').count()).toBe(0)
      const sessionId = new URL(page.url()).pathname.split('/').pop()!
      expect((await app.call('subagents.list', { sessionId })).children.map((c: any) => [c.id, c.status])).toEqual([
        ['sub-1', 'interrupted'],
      ])
      expect(errors.filter((e) => !/Failed to load resource|ERR_CONNECTION/.test(e))).toEqual([])
    })
  })
})
