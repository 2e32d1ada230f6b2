// End-to-end: the real dsh-jsonrpc-agent (base bundle: the schedule row) driven through
// @dsh/sdk-client, with the DeepSeek adapter talking to @dsh/llm-mock-server. A reminder fires in
// the running host; another falls due while the host is down and arrives late, once, after the
// restarted host resumes the session.
import { mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { Harness, type WireEvent } from '@dsh/sdk-client'

vi.setConfig({ testTimeout: 90_000 })

const require = createRequire(import.meta.url)
const bin = join(dirname(require.resolve('@dsh/sdk-server/package.json')), 'bin', 'dsh-jsonrpc-agent.mjs')
const patch = fileURLToPath(new URL('./fixtures/late-after-1s.patch.yml', import.meta.url))

let mock: MockServer | undefined
const harnesses: Harness[] = []
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()))
  await mock?.close()
  mock = undefined
})

const call = (id: string, name: string, args: object) => ({ toolCalls: [{ id, name, arguments: args }] })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, ms = 30_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

const reminders = (events: WireEvent[]) =>
  events.flatMap((e) => {
    const data = e.data as { source?: { kind: string; plugin?: string }; content?: { text: string }[] }
    return e.type === 'user/message' && data.source?.kind === 'plugin' && data.source.plugin === 'schedule'
      ? [data.content![0].text]
      : []
  })

describe('schedules in dsh-jsonrpc-agent', () => {
  it('a reminder fires in the running host, and one due during a restart arrives late, once', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-schedule-'))
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: '',
      DEEPSEEK_API_KEY: 'sk-test',
    }
    mock = await startMockServer({
      steps: [
        call('c1', 'schedule_create', { after_seconds: 1, prompt: 'Check the oven.' }),
        { text: 'Reminder set.' },
        { text: 'Checking the oven now.' },
        call('c2', 'schedule_create', { after_seconds: 2, prompt: 'Take the cake out.' }),
        { text: 'Second reminder set.' },
        { text: 'The cake is out.' },
      ] as never,
    })
    env.DEEPSEEK_BASE_URL = mock.baseURL
    const start = async () => {
      const harness = await Harness.start({ bin, args: ['--patch', patch], cwd: root, env })
      harnesses.push(harness)
      return harness
    }

    // Host 1: the first reminder fires while the session is idle and starts a turn.
    const first = await start()
    const session = await first.createSession()
    const seen: WireEvent[] = []
    session.onEvent((event) => seen.push(event))
    expect((await session.prompt('remind me to check the oven in a second')).text).toBe('Reminder set.')
    await until(() => (seen.filter((e) => e.type === 'turn/end').length === 2 ? true : undefined), 'the reminder turn')
    expect(reminders(seen)).toEqual(['[Scheduled reminder sch-1] Check the oven.'])
    expect(seen.find((e) => e.type === 'schedule/fired')!.data).toMatchObject({ id: 'sch-1', late: false })

    // A second reminder, then the host stops before it is due.
    expect((await session.prompt('and the cake in two seconds')).text).toBe('Second reminder set.')
    await first.close()
    await sleep(3500)

    // Host 2: resuming the session delivers the missed reminder once, marked late.
    const second = await start()
    const resumed = await second.resumeSession(session.id)
    const events = await until(async () => {
      const history = await resumed.history()
      return history.filter((e) => e.type === 'turn/end').length === 4 ? history : undefined
    }, 'the late reminder turn')
    const texts = reminders(events)
    expect(texts).toHaveLength(2)
    expect(texts[1]).toMatch(
      /^\[Scheduled reminder sch-2 \(late: it was due at .*Z and is delivered at .*Z\)\] Take the cake out\.$/,
    )
    expect(events.filter((e) => e.type === 'schedule/fired').map((e) => e.data)).toMatchObject([
      { id: 'sch-1', late: false },
      { id: 'sch-2', late: true },
    ])
    expect(JSON.stringify(events.filter((e) => e.type === 'assistant/message').at(-1)!.data)).toContain(
      'The cake is out.',
    )
    expect(mock.remaining).toBe(0)

    // Nothing is delivered twice: a third host on the same log stays quiet.
    await second.close()
    const third = await start()
    const again = await third.resumeSession(session.id)
    await sleep(500)
    expect(reminders(await again.history())).toHaveLength(2)
  })
})
