// End-to-end: a one-shot `dsh --profile headless` run leaves a reminder that is not yet due
// pending in its session log and exits (timers never hold the process); a later `--resume` run
// delivers it, marked late, in that run.
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

vi.setConfig({ testTimeout: 90_000 })

const patch = fileURLToPath(new URL('./fixtures/late-after-1s.patch.yml', import.meta.url))
let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('schedules in one-shot headless runs', () => {
  it('a pending reminder stays in the log; the next run of the session delivers it late', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-schedule-headless-'))
    const cwd = join(root, 'work')
    mkdirSync(cwd)
    server = await startMockServer({
      steps: [
        {
          toolCalls: [
            { id: 'c1', name: 'schedule_create', arguments: { after_seconds: 2, prompt: 'Rotate the logs.' } },
          ],
        },
        { text: 'Scheduled.' },
        { text: 'Nothing else is pending.' },
        { text: 'Rotating the logs now.' },
      ] as never,
    })
    const env = { DSH_HOME: join(root, 'home'), DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' }
    const first = await runDsh(
      ['--profile', 'headless', '--patch', patch, '--output-format', 'json', 'remind me to rotate the logs'],
      { cwd, env },
    )
    expect(first.stderr).toBe('')
    expect(first.code).toBe(0)
    const { sessionId, result } = JSON.parse(first.stdout.trim().split('\n').at(-1)!)
    expect(result).toBe('Scheduled.')
    expect(server.requests).toHaveLength(2)

    // "Late" is a wall-clock condition across two processes: the second run must deliver more than
    // the fixture's 1 s threshold after the due time. The tool reported that time to the second
    // (truncated); start the second run once even a due time just under the next second is over
    // 1 s past, however fast the second run then boots, rather than after a fixed 3.5 s.
    const reported = /scheduled for (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)/.exec(server.requests[1].rawBody)
    expect(reported).not.toBeNull()
    const lateFrom = Date.parse(reported![1]) + 1000 + 1000 + 200
    await new Promise((r) => setTimeout(r, Math.max(0, lateFrom - Date.now())))
    const second = await runDsh(
      [
        '--profile',
        'headless',
        '--patch',
        patch,
        '--output-format',
        'stream-json',
        '--resume',
        sessionId,
        'anything pending?',
      ],
      { cwd, env },
    )
    expect(second.stderr).toBe('')
    expect(second.code).toBe(0)
    const lines = second.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const events = lines.filter((l) => l.type === 'event').map((l) => l.event)
    const fired = events.filter((e) => e.type === 'schedule/fired')
    expect(fired).toHaveLength(1)
    expect(fired[0].data).toMatchObject({ id: 'sch-1', late: true })
    const reminder = events.find((e) => e.type === 'user/message' && e.data.source.kind === 'plugin')
    expect(reminder.data.content[0].text).toMatch(
      /^\[Scheduled reminder sch-1 \(late: it was due at .*\)\] Rotate the logs\.$/,
    )
    expect(lines.at(-1)).toMatchObject({ type: 'result', result: 'Rotating the logs now.', reason: 'completed' })
    expect(server.remaining).toBe(0)
  })
})
