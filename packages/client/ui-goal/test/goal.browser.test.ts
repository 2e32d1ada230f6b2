// The GoalBar in real Chromium against the real `dsh web` (goal rows from the base bundle, the
// ui-goal row from the web bundle) and the mock model: the model sets a goal, two rounds without
// progress pause it; the bar shows it, edits the objective, resumes it (one more round spends the
// round budget) and clears it. A stale revision is refused by the host.
import { describe, expect, it, vi } from 'vitest'
import { hasChromium, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 })

const STEPS = [
  { toolCalls: [{ name: 'create_goal', arguments: { objective: 'Write the quarterly report', max_rounds: 3 } }] },
  { text: 'Goal set.' },
  { text: 'Round one: thinking.' },
  { text: 'Round two: still thinking.' },
  { text: 'Round three: thinking harder.' },
]

describe.skipIf(!hasChromium())('ui-goal in the browser', () => {
  const web = useWebApp({ steps: STEPS as never })

  it('shows the goal, edits, resumes and clears it; a stale revision is refused', async () => {
    const { page, errors } = await web.openPage()
    await withArtifacts(page, 'goal-bar', async () => {
      await page.waitForURL(/\/s\/[^/]+$/)
      const sessionId = /\/s\/([^/]+)$/.exec(page.url())![1]
      await page.locator('textarea.dsh-composer-input').fill('keep working on the report')
      await page.locator('textarea.dsh-composer-input').press('Enter')
      const bar = page.locator('.dsh-goalbar')
      // two rounds without progress pause the goal
      await expect.poll(() => bar.getAttribute('data-goal-status'), { timeout: 30_000 }).toBe('paused')
      expect(await bar.locator('[data-goal-objective]').textContent()).toBe('Write the quarterly report')
      expect(await bar.locator('[data-goal-meta]').textContent()).toBe('paused · 2/3 rounds')
      expect(await bar.locator('[data-goal-action="pause"]').count()).toBe(0)

      await bar.locator('[data-goal-action="edit"]').click()
      await bar.locator('input').fill('Write and send the quarterly report')
      await bar.locator('input').press('Enter')
      await expect
        .poll(() => bar.locator('[data-goal-objective]').textContent())
        .toBe('Write and send the quarterly report')

      // a mutation computed from an old revision
      const stale = await web.call('goals.pause', { sessionId, expectedRevision: 1 }).catch((e: Error) => e)
      expect(String((stale as Error).message ?? stale)).toContain('STALE_REVISION')

      await bar.locator('[data-goal-action="resume"]').click()
      await expect.poll(() => bar.getAttribute('data-goal-status'), { timeout: 30_000 }).toBe('budget-limited')
      expect(await bar.locator('[data-goal-meta]').textContent()).toBe('budget spent · 3/3 rounds')

      await bar.locator('[data-goal-action="clear"]').click()
      await expect.poll(() => page.locator('.dsh-goalbar').count()).toBe(0)
      const history = (await web.call('sessions.history', { sessionId })) as {
        events: Array<{ type: string; data: { by: string; action: string } }>
      }
      expect(history.events.filter((e) => e.type === 'goal/set').map((e) => `${e.data.by}:${e.data.action}`)).toEqual([
        'model:create',
        'driver:account',
        'driver:account',
        'driver:stall',
        'human:edit',
        'human:resume',
        'driver:limit',
        'human:clear',
      ])
      // bad input through the host methods: one clear error each
      const refused = async (method: string, params: object) =>
        ((await web.call(method, params).catch((e: Error) => e)) as Error).message
      expect(await refused('goals.edit', { sessionId, expectedRevision: 9, maxRounds: 0 })).toMatch(
        /^goals\.edit: 400 INVALID_PARAMS: .*maxRounds/,
      )
      expect(await refused('goals.pause', { sessionId, expectedRevision: 9 })).toBe(
        'goals.pause: 404 NO_GOAL: this session has no goal',
      )
      expect(await refused('goals.pause', { sessionId: 'no-such-session', expectedRevision: 1 })).toMatch(
        /^goals\.pause: 404 SESSION_NOT_FOUND: session no-such-session is not open in this host/,
      )
      expect(errors).toEqual([])
    })
  })
})
