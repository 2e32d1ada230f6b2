// Recurring tasks in real Chromium against the real `dsh web` (web bundle rows schedule-tasks +
// ui-schedule) and the scripted mock model: a task added from the Scheduled tasks dialog runs in a
// fresh session (Run now), the dialog links to that session, Pause / Delete act on the host, the
// host's timer runs due tasks by itself (a one-shot once) and a paused task is skipped while
// another keeps running, and tasks survive a host restart (one that fell due while it was down
// runs once at start).
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
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

const STEPS = [{ text: 'Nightly run done.' }, ...Array.from({ length: 20 }, (_, i) => ({ text: `Timer run ${i}.` }))]
// The test shortens the shortest interval so the host's timer can be seen at work.
const PATCH = '- id: schedule-tasks\n  config:\n    minEverySeconds: 1\n'

interface Task {
  id: string
  name: string
  once?: boolean
  done?: boolean
  paused: boolean
  runs: number
  lastSessionId?: string
  lastRunAt?: number
  nextAt: number
}

describe.skipIf(!hasChromium())('ui-schedule in the browser', () => {
  let app: WebApp
  let browser: Browser
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    app = await startWebApp({ steps: STEPS as never, patch: PATCH })
    browser = await launchBrowser()
    ;({ page, errors } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })
  const tasks = async () => (await app.call<{ tasks: Task[] }>('scheduleTasks.list', {})).tasks
  const task = async (id: string) => (await tasks()).find((t) => t.id === id)

  it('adds a task from the dialog, runs it now in a fresh session, pauses and deletes it', async () => {
    await withArtifacts(page, 'schedule-dialog', async () => {
      const first = new URL(page.url()).pathname
      await page.locator('[data-schedule-open]').click()
      const dialog = page.locator('[data-schedule]')
      await dialog.getByText('No scheduled tasks yet.').waitFor()
      await dialog.getByLabel('Name').fill('Nightly')
      await dialog.getByLabel('Prompt').fill('check the build')
      await dialog.getByLabel('Minutes (N)').fill('90')
      expect(await dialog.getByLabel('Folder').inputValue()).toBe(app.cwd)
      await dialog.getByRole('button', { name: 'Add task' }).click()
      const row = dialog.locator('[data-task="task-1"]')
      await row.waitFor()
      expect(await task('task-1')).toMatchObject({
        name: 'Nightly',
        prompt: 'check the build',
        cwd: app.cwd,
        everySeconds: 5400,
        paused: false,
        runs: 0,
      })

      await row.locator('[data-task-run]').click()
      await expect.poll(() => row.getAttribute('data-task-runs')).toBe('1')
      const sessionId = (await task('task-1'))!.lastSessionId!
      expect(sessionId).toBeTruthy()
      expect(`/s/${encodeURIComponent(sessionId)}`).not.toBe(first)
      // Run now leaves the schedule alone: the next run is still one interval after the creation.
      await row.locator(`[data-task-session="${sessionId}"]`).click()
      await page.waitForURL((url) => url.pathname === `/s/${encodeURIComponent(sessionId)}`)
      await page.locator('[data-node="assistant"]', { hasText: 'Nightly run done.' }).waitFor()
      await page.locator('[data-node="user"]', { hasText: 'check the build' }).waitFor()
      expect(await page.locator(`.session-item[data-session-id="${sessionId}"] .title`).textContent()).toMatch(
        /^Nightly · \d{4}-\d{2}-\d{2} \d{2}:\d{2}$/,
      )

      await page.locator('[data-schedule-open]').click()
      await row.locator('[data-task-pause="pause"]').click()
      await expect.poll(() => row.getAttribute('data-task-paused')).toBe('true')
      expect((await task('task-1'))!.paused).toBe(true)
      await row.getByText('paused', { exact: false }).first().waitFor()
      await row.locator('[data-task-remove]').click()
      await expect.poll(() => row.count()).toBe(0)
      expect(await tasks()).toEqual([])
      expect(errors).toEqual([])
    })
  })

  it('runs due tasks on the host timer; a paused one is skipped while another keeps running', async () => {
    const created = async (name: string) =>
      (
        await app.call<{ task: Task }>('scheduleTasks.create', {
          name,
          prompt: `${name} prompt`,
          cwd: app.cwd,
          everySeconds: 1,
        })
      ).task
    const a = await created('A')
    const b = await created('B')
    const once = (
      await app.call<{ task: Task }>('scheduleTasks.create', {
        name: 'Once',
        prompt: 'Once prompt',
        cwd: app.cwd,
        afterSeconds: 1,
      })
    ).task
    expect(once).toMatchObject({ once: true, everySeconds: 1, paused: false, runs: 0 })
    await expect.poll(async () => (await task(a.id))!.runs, { timeout: 20_000 }).toBeGreaterThanOrEqual(1)
    // The one-shot runs once on its timer and is then done.
    await expect.poll(async () => (await task(once.id))!.done, { timeout: 20_000 }).toBe(true)
    expect((await task(once.id))!.runs).toBe(1)
    await app.call('scheduleTasks.pause', { id: a.id, paused: true })
    // A run of A already starting when it was paused still lands: count A once B has run again.
    const afterPause = (await task(b.id))!.runs
    await expect.poll(async () => (await task(b.id))!.runs, { timeout: 20_000 }).toBeGreaterThan(afterPause)
    const runsA = (await task(a.id))!.runs
    // B keeps running (the positive control) while A stays where it was paused.
    const runsB = (await task(b.id))!.runs
    await expect.poll(async () => (await task(b.id))!.runs, { timeout: 20_000 }).toBeGreaterThanOrEqual(runsB + 2)
    expect((await task(a.id))!.runs).toBe(runsA)
    expect((await task(once.id))!.runs).toBe(1)
    await expect(app.call('scheduleTasks.pause', { id: once.id, paused: false })).rejects.toThrow(/409 TASK_DONE/)
    // A resumed task skips the slots it missed: its next run is in the future.
    const resumed = (await app.call<{ task: Task }>('scheduleTasks.pause', { id: a.id, paused: false })).task
    expect(resumed.nextAt).toBeGreaterThan(Date.now() - 1000)
    await app.call('scheduleTasks.pause', { id: a.id, paused: true })
    await app.call('scheduleTasks.pause', { id: b.id, paused: true })
  })

  it('keeps tasks across a host restart, runs one that fell due meanwhile once, and refuses bad tasks', async () => {
    const before = await tasks()
    expect(before.map((t) => t.name)).toEqual(['A', 'B', 'Once'])
    await app.stop()
    // While the host is down, task A (resumed, a long interval) falls due: it runs once at start.
    const file = join(app.home, '.dsh', 'storage', 'schedule-task.json')
    const stored = JSON.parse(readFileSync(file, 'utf8'))
    const hour = 3600_000
    stored.entries[before[0].id] = {
      ...stored.entries[before[0].id],
      paused: false,
      everySeconds: 3600,
      nextAt: Date.now() - 2.5 * hour,
    }
    writeFileSync(file, JSON.stringify(stored))
    const started = Date.now()
    await app.restart()
    await expect.poll(async () => (await task(before[0].id))!.runs, { timeout: 20_000 }).toBe(before[0].runs + 1)
    const ran = (await task(before[0].id))!
    expect(ran.lastRunAt).toBeGreaterThanOrEqual(started)
    // The missed slots fold into that one run; the next one is on the task's grid, within the hour.
    expect(ran.nextAt).toBeGreaterThan(Date.now())
    expect(ran.nextAt).toBeLessThanOrEqual(Date.now() + hour)
    expect(await task(before[1].id)).toEqual(before[1])
    await app.call('scheduleTasks.pause', { id: before[0].id, paused: true })
    const bad = (params: object) =>
      app.call('scheduleTasks.create', { prompt: 'x', cwd: app.cwd, everySeconds: 5, ...params })
    await expect(bad({ cwd: 'relative' })).rejects.toThrow(
      /400 NOT_A_DIRECTORY: relative: not an existing absolute directory/,
    )
    await expect(bad({ everySeconds: 0 })).rejects.toThrow(/400 INVALID_PARAMS/)
    await expect(bad({ afterSeconds: 5 })).rejects.toThrow(/400 INVALID_PARAMS: give everySeconds .* not both/)
    await expect(bad({ prompt: '   ' })).rejects.toThrow(/400 INVALID_PARAMS: the prompt is empty/)
    await expect(app.call('scheduleTasks.run', { id: 'task-99' })).rejects.toThrow(/404 UNKNOWN_TASK/)
  })
})
