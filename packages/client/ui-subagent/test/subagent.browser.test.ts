// The subagent tree in real Chromium against the real `dsh web` (the base bundle's subagent rows)
// and the mock model; the web bundle mounts the ui-subagent row. One scripted turn, strictly sequential so every request meets its step:
// the parent starts a background child (which reports, then answers) and blocks in bash on a gate
// file; then it starts a foreground child that starts a grandchild and blocks in bash on a second
// gate. The test opens each gate after checking what the page shows meanwhile.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, type Page, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 })

const call = (id: string, name: string, args: object) => ({ id, name, arguments: args })
const gate = (file: string, echo: string) => `while [ ! -f ${file} ]; do sleep 0.1; done; echo ${echo}`
const STEPS = [
  // 0 parent: a background child, then wait for gate-1.
  {
    toolCalls: [
      call('c_bg', 'subagent', { description: 'Watch the logs', prompt: 'WATCH', background: true }),
      call('c_wait', 'bash', { command: gate('gate-1', 'gate-1-open'), description: 'Wait' }),
    ],
  },
  // 1-2 background child sub-1: a report, then its answer.
  { toolCalls: [call('c_rep', 'report', { message: 'The logs look quiet so far.' })] },
  { text: 'Watcher done.' },
  // 3 parent: a foreground child.
  { toolCalls: [call('c_fg', 'subagent', { description: 'Inspect the files', prompt: 'INSPECT' })] },
  // 4 child sub-2: a grandchild (its own sub-1), 5 the grandchild answers.
  { toolCalls: [call('c_grand', 'subagent', { description: 'Count the lines', prompt: 'COUNT' })] },
  { text: 'Grandchild answer.' },
  // 6 child: bash waiting for gate-2, 7 its answer.
  { toolCalls: [call('c_insp', 'bash', { command: gate('gate-2', 'inspected-ok'), description: 'Inspect' })] },
  { text: 'Inspection finished.' },
  // 8 parent ends the turn.
  { text: 'All done.' },
]

describe.skipIf(!hasChromium())('ui-subagent in the browser', () => {
  const web = useWebApp({ steps: STEPS as never })
  let page: Page
  let errors: string[]
  let parentUrl: string
  beforeAll(async () => {
    ;({ page, errors } = await web.openPage())
    await page.waitForURL(/\/s\/[^/]+$/)
    parentUrl = page.url()
  })

  const top = (id: string) => page.locator(`[data-panel="subagents"] > ul > li[data-subagent="${id}"]`)

  it('shows both children with their status, reports and session links; the link opens the child session', async () => {
    await withArtifacts(page, 'subagent-tree', async () => {
      const input = page.locator('textarea.dsh-composer-input')
      await input.fill('delegate the work')
      await input.press('Enter')

      // The background child finishes while the parent waits at gate-1.
      const bg = top('sub-1')
      await expect.poll(() => bg.getAttribute('data-status'), { timeout: 30_000 }).toBe('completed')
      expect(await bg.getAttribute('data-background')).toBe('true')
      expect(await bg.locator('.dsh-subagent-desc').textContent()).toBe('Watch the logs')
      expect(await bg.locator('[data-testid="subagent-report"]').allTextContents()).toEqual([
        'The logs look quiet so far.',
      ])
      expect(await bg.locator('[data-testid="subagent-tokens"]').textContent()).toMatch(/tokens$/)
      expect(await bg.locator('[data-testid="subagent-duration"]').count()).toBe(1)
      const bgCard = page.locator('.dsh-subagent-card[data-call="c_bg"] [data-testid="subagent-strip"]')
      await expect.poll(() => bgCard.getAttribute('data-status')).toBe('completed')

      writeFileSync(join(web.cwd, 'gate-1'), '')
      // The foreground child runs (spinner) while it waits at gate-2; so does its tool card.
      const fg = top('sub-2')
      await expect.poll(() => fg.getAttribute('data-status'), { timeout: 30_000 }).toBe('running')
      expect(await fg.locator('.dsh-subagent-spinner').count()).toBe(1)
      expect(await fg.getAttribute('data-background')).toBeNull()
      const fgCard = page.locator('.dsh-subagent-card[data-call="c_fg"]')
      await expect
        .poll(() => fgCard.locator('[data-testid="subagent-strip"]').getAttribute('data-status'))
        .toBe('running')
      // The generic card still renders below the strip.
      expect(await fgCard.locator('[data-tool="subagent"]').count()).toBe(1)

      writeFileSync(join(web.cwd, 'gate-2'), '')
      await page.locator('[data-node="assistant"]', { hasText: 'All done.' }).waitFor({ timeout: 30_000 })
      await expect.poll(() => fg.getAttribute('data-status')).toBe('completed')
      await expect
        .poll(() => fgCard.locator('[data-testid="subagent-strip"]').getAttribute('data-status'))
        .toBe('completed')
      expect(await fg.locator('.dsh-subagent-spinner').count()).toBe(0)

      // The grandchild nests under sub-2 once its session is loaded.
      await fg.locator(':scope > .dsh-subagent-meta [data-testid="subagent-nested-toggle"]').click()
      const grand = fg.locator('li[data-subagent="sub-1"]')
      await expect.poll(() => grand.getAttribute('data-status'), { timeout: 20_000 }).toBe('completed')
      expect(await grand.locator('.dsh-subagent-desc').textContent()).toBe('Count the lines')

      // The child's session opens from its row, with its own messages.
      const link = fg.locator(':scope > .dsh-subagent-meta [data-testid="subagent-open"]')
      const childSession = await link.getAttribute('data-session')
      expect(childSession).toBeTruthy()
      await link.click()
      await page.waitForURL(new RegExp(`/s/${childSession}$`))
      await page.locator('[data-node="assistant"]', { hasText: 'Inspection finished.' }).waitFor()
      await expect.poll(() => page.locator('[data-tool="bash"] .dsh-terminal').textContent()).toContain('inspected-ok')
      // The child's own panel lists the grandchild.
      await expect.poll(() => top('sub-1').locator('.dsh-subagent-desc').textContent()).toBe('Count the lines')
      expect(errors).toEqual([])
    })
  })

  it('subagents.list answers from the host; bad input is refused with a clear error', async () => {
    const sessionId = new URL(parentUrl).pathname.split('/').pop()!
    const { children } = await web.call('subagents.list', { sessionId })
    expect(children.map((c: any) => [c.id, c.status, c.background, c.description])).toEqual([
      ['sub-1', 'completed', true, 'Watch the logs'],
      ['sub-2', 'completed', false, 'Inspect the files'],
    ])
    expect(children[0].reports).toEqual(['The logs look quiet so far.'])
    expect(children[1].sessionId).toMatch(/./)
    await expect(web.call('subagents.list', {})).rejects.toThrow(/INVALID_PARAMS/)
    await expect(web.call('subagents.list', { sessionId: '' })).rejects.toThrow(/INVALID_PARAMS/)
  })

  it('speaks Chinese', async () => {
    const zh = await web.openPage({ locale: 'zh-CN', path: new URL(parentUrl).pathname })
    try {
      const section = zh.page.locator('[data-panel="subagents"]')
      await section.waitFor()
      expect(await section.locator('h3').textContent()).toBe('子代理')
      await expect
        .poll(() => section.locator('li[data-subagent="sub-2"] .dsh-subagent-status').first().textContent())
        .toBe('已完成')
      expect(zh.errors).toEqual([])
    } finally {
      await zh.context.close()
    }
  })
})
