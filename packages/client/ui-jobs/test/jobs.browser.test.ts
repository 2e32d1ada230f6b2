// Background jobs in real Chromium against the real `dsh web` and the mock model: the model starts
// a real `bash` job with run_in_background; the header's Jobs button appears with the running
// count (pushed by `jobs/changed`, no reload), the panel shows the job's output and follows it live
// (a line the job writes after the panel opened appears without Refresh), and Stop kills it.
// The methods refuse another session's job.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, type Page, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

// The job writes a second line only once the test creates `go` in the workspace.
const COMMAND = 'echo job-says-hello; while [ ! -e go ]; do sleep 0.1; done; echo job-says-more; sleep 120'
const STEPS = [
  {
    toolCalls: [
      {
        name: 'bash',
        arguments: {
          command: COMMAND,
          description: 'A long job',
          run_in_background: true,
        },
      },
    ],
  },
  { text: 'Started the job.' },
]

describe.skipIf(!hasChromium())('ui-jobs in the browser', () => {
  const web = useWebApp({ steps: STEPS as never })
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    ;({ page, errors } = await web.openPage())
  })
  const input = () => page.locator('textarea.dsh-composer-input')
  const sessionId = () => new URL(page.url()).pathname.split('/').pop()!

  it('lists a running background job, shows its output and stops it', async () => {
    await withArtifacts(page, 'jobs-panel', async () => {
      // No job yet: no button.
      expect(await page.locator('[data-jobs-open]').count()).toBe(0)
      await input().fill('start a long job')
      await input().press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Started the job.' }).waitFor()
      const button = page.locator('[data-jobs-open="1"]')
      await button.waitFor()
      expect(await button.textContent()).toBe('Jobs · 1 running')
      await button.click()
      const job = page.locator('[data-jobs-panel] [data-job="bash-1"]')
      await job.waitFor()
      expect(await job.getAttribute('data-job-status')).toBe('running')
      expect(await job.locator('code').textContent()).toBe(COMMAND)
      await job.locator('[data-job-output="toggle"]').click()
      await expect.poll(() => job.locator('[data-job-text]').textContent()).toContain('job-says-hello')
      // Live: the next line arrives by the host's jobs/output event, with no click.
      writeFileSync(join(web.cwd, 'go'), '')
      await expect.poll(() => job.locator('[data-job-text]').textContent()).toBe('job-says-hello\njob-says-more\n')
      await job.locator('[data-job-stop="bash-1"]').click()
      await expect.poll(() => job.getAttribute('data-job-status')).toBe('killed')
      expect(await job.locator('.meta').textContent()).toBe('bash-1 · stopped')
      await expect.poll(() => page.locator('[data-jobs-open="0"]').count()).toBe(1)
      expect(await job.locator('[data-job-stop]').count()).toBe(0)
      expect(errors).toEqual([])
    })
  })

  it("refuses another session's job and an unknown one", async () => {
    const { session } = await web.call<{ session: { sessionId: string } }>('sessions.create', { cwd: web.cwd })
    expect((await web.call('jobs.list', { sessionId: session.sessionId })).jobs).toEqual([])
    expect((await web.call('jobs.list', { sessionId: sessionId() })).jobs).toMatchObject([
      { id: 'bash-1', status: 'killed', kind: 'bash' },
    ])
    await expect(web.call('jobs.output', { sessionId: session.sessionId, jobId: 'bash-1' })).rejects.toThrow(
      /404 UNKNOWN_JOB/,
    )
    await expect(web.call('jobs.kill', { sessionId: sessionId(), jobId: 'bash-99' })).rejects.toThrow(/404 UNKNOWN_JOB/)
    await expect(web.call('jobs.output', { sessionId: sessionId(), jobId: '' })).rejects.toThrow(/400 INVALID_PARAMS/)
  })
})
