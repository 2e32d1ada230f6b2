import { afterEach, describe, expect, it, vi } from 'vitest'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import * as Schedule from '../src/index.ts'
import { pendingSchedules, REMINDER_SOURCE } from '../src/index.ts'

const harnesses: Harness[] = []
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.dispose().catch(() => {})
})

async function boot(script: ScriptEntry[], options: { config?: object; session?: Harness['session'] } = {}) {
  const h = await createHarness({
    script,
    plugins: [[Schedule, options.config ?? {}]],
    ...(options.session ? { session: options.session } : {}),
  })
  harnesses.push(h)
  return h
}

type Result = { message: { content: { text: string }[] }; error?: { code: string } }
const results = (h: Harness) => h.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data as Result)
const text = (r: Result) => r.message.content[0].text
const call = (name: string, args: object) => ({ toolCalls: [{ name, arguments: args }] })
const reminders = (h: Harness) =>
  h.session.events.flatMap((e) =>
    e.type === 'user/message' && e.data.source.kind === 'plugin' && e.data.source.plugin === REMINDER_SOURCE
      ? [(e.data.content[0] as { text: string }).text]
      : [],
  )

/**
 * Runs `body` on a fake clock (setTimeout and Date): the schedule's timers fire when the test
 * advances time, synchronously (a delivery logs `schedule/fired` in the timer callback), never by
 * waiting; so "nothing fired" after an advance means no timer was armed for it.
 */
async function onFakeClock(body: () => Promise<void>): Promise<void> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
  try {
    await body()
  } finally {
    vi.useRealTimers()
  }
}

async function until(check: () => boolean, ms = 8000) {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe('@dsh/schedule', () => {
  it('a due reminder is logged and delivered as a message that starts a turn', async () => {
    const h = await boot([
      call('schedule_create', { after_seconds: 1, prompt: 'Check the build log' }),
      { text: 'scheduled' },
      { text: 'checked the log' },
    ])
    await h.prompt('remind me in a second')
    expect(text(results(h)[0])).toMatch(
      /^Reminder sch-1 scheduled for \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in 1 s\)\. It is now /,
    )
    expect(pendingSchedules(h.session)).toHaveLength(1)
    // A long-lived host asks before unloading an idle session: a pending reminder keeps it live.
    expect(h.ctx.bail('session/keep-alive', h.session)).toBe('1 pending reminder')
    await until(() => h.session.events.filter((e) => e.type === 'turn/end').length === 2, 15_000)
    expect(reminders(h)).toEqual(['[Scheduled reminder sch-1] Check the build log'])
    const fired = h.session.last('schedule/fired')!.data
    expect(fired).toMatchObject({ id: 'sch-1', late: false })
    expect(h.session.last('schedule/fired')!.seq).toBeLessThan(
      h.session.events.findIndex((e) => e.type === 'user/message' && e.data.source.kind === 'plugin'),
    )
    expect(pendingSchedules(h.session)).toEqual([])
    // Nothing pending: a long-lived host may unload the session again.
    expect(h.ctx.bail('session/keep-alive', h.session)).toBeUndefined()
    // the model answered the reminder in its own turn
    expect(JSON.stringify(h.model.requests[2].messages.at(-1))).toContain('Check the build log')
  })

  it('every_seconds repeats until cancelled; list shows it', async () => {
    await onFakeClock(async () => {
      const h = await boot(
        [
          call('schedule_create', { every_seconds: 1, prompt: 'tick' }),
          call('schedule_list', {}),
          { text: 'ok' },
          { text: 'tick 1' },
          call('schedule_cancel', { id: 'sch-1' }),
          { text: 'stopped' },
        ],
        { config: { minEverySeconds: 1 } },
      )
      await h.prompt('tick every second')
      expect(text(results(h)[1])).toMatch(
        /^1 pending reminder \(it is now .*\):\n- sch-1 \(every, every 1 s\) next at .* \(in 1 s\): "tick"$/,
      )
      vi.advanceTimersByTime(1000)
      await h.agent.idle()
      expect(reminders(h)).toEqual(['[Scheduled reminder sch-1] tick'])
      vi.advanceTimersByTime(1000)
      await h.agent.idle()
      // the second delivery's turn cancelled it
      expect(h.session.events.some((e) => e.type === 'schedule/cancelled')).toBe(true)
      expect(reminders(h)).toEqual(['[Scheduled reminder sch-1] tick', '[Scheduled reminder sch-1] tick'])
      // Many intervals later: a timer still armed would have fired in the advance.
      vi.advanceTimersByTime(10_000)
      await h.agent.idle()
      expect(reminders(h)).toHaveLength(2)
      expect(pendingSchedules(h.session)).toEqual([])
    })
  })

  it('a reminder that fell due while no agent was live is delivered once, marked late', async () => {
    const first = await boot([])
    const session = first.session
    const dueAt = Date.now() - 3_600_000
    session.append('schedule/created', {
      id: 'sch-1',
      kind: 'after',
      prompt: 'water the plants',
      dueAt,
      createdAt: dueAt - 1000,
    })
    session.append('schedule/created', {
      id: 'sch-2',
      kind: 'every',
      prompt: 'stand up',
      dueAt: dueAt,
      everyMs: 600_000,
      createdAt: dueAt - 1000,
    })
    await first.agent.dispose()
    const h = await boot([{ text: 'watered' }, { text: 'stood' }], { session })
    await until(() => reminders(h).length === 2)
    await h.agent.idle()
    const [water, stand] = reminders(h)
    expect(water).toMatch(
      /^\[Scheduled reminder sch-1 \(late: it was due at .* and is delivered at .*\)\] water the plants$/,
    )
    expect(stand).toContain('6 earlier occurrences were skipped')
    expect(
      h.session.events.filter((e) => e.type === 'schedule/fired').map((e) => (e.data as { late: boolean }).late),
    ).toEqual([true, true])
    // the every reminder continues on its grid, in the future
    const next = pendingSchedules(h.session)
    expect(next.map((p) => p.id)).toEqual(['sch-2'])
    expect(next[0].nextAt).toBeGreaterThan(Date.now())
    expect((next[0].nextAt - dueAt) % 600_000).toBe(0)
    // delivered once: a further agent on the same log delivers nothing
    await h.agent.dispose()
    await onFakeClock(async () => {
      const again = await boot([], { session })
      // Anything overdue would fire in this advance (sch-2's next occurrence is ten minutes away).
      vi.advanceTimersByTime(1000)
      expect(reminders(again)).toHaveLength(2)
      expect(again.session.events.filter((e) => e.type === 'schedule/fired')).toHaveLength(2)
    })
  })

  it('refuses bad input with a clear error and logs nothing', async () => {
    const past = new Date(Date.now() - 60_000).toISOString()
    const h = await boot([
      call('schedule_create', { at: past, prompt: 'too late' }),
      call('schedule_create', { every_seconds: 10, prompt: 'too often' }),
      call('schedule_create', { after_seconds: 0, prompt: 'now' }),
      call('schedule_create', { after_seconds: -5, prompt: 'before' }),
      call('schedule_create', { after_seconds: 5, every_seconds: 600, prompt: 'both' }),
      call('schedule_create', { prompt: 'none' }),
      call('schedule_create', { at: '2099-01-01 09:00', prompt: 'no zone' }),
      call('schedule_create', { after_seconds: 5, prompt: '   ' }),
      call('schedule_cancel', { id: 'sch-9' }),
      call('schedule_create', { after_seconds: 1.5, prompt: 'fraction' }),
      { text: 'gave up' },
    ])
    await h.prompt('try')
    const r = results(h)
    expect(r.map((x) => x.error?.code)).toEqual([
      'AT_IN_PAST',
      'EVERY_TOO_SHORT',
      'INVALID_SCHEDULE',
      'INVALID_SCHEDULE',
      'INVALID_SCHEDULE',
      'INVALID_SCHEDULE',
      'INVALID_SCHEDULE',
      'INVALID_SCHEDULE',
      'UNKNOWN_SCHEDULE',
      'INVALID_ARGUMENTS',
    ])
    expect(text(r[0])).toMatch(
      /^Error \[AT_IN_PAST\]: at ".*" is in the past \(it is now .*Z\); give a future time or use after_seconds\.$/,
    )
    expect(text(r[1])).toBe(
      'Error [EVERY_TOO_SHORT]: every_seconds must be a whole number of at least 300 (got 10); use after_seconds for a single reminder sooner.',
    )
    expect(text(r[4])).toContain('got after_seconds and every_seconds')
    expect(text(r[6])).toContain('ISO 8601 time with a zone')
    expect(text(r[8])).toBe('Error [UNKNOWN_SCHEDULE]: no pending reminder "sch-9" in this session (pending: none).')
    expect(h.session.events.some((e) => e.type.startsWith('schedule/'))).toBe(false)
  })

  it('limits pending reminders per session', async () => {
    const h = await boot(
      [
        call('schedule_create', { after_seconds: 600, prompt: 'a' }),
        call('schedule_create', { after_seconds: 600, prompt: 'b' }),
        { text: 'ok' },
      ],
      { config: { maxPending: 1 } },
    )
    await h.prompt('two')
    expect(results(h).map((r) => r.error?.code)).toEqual([undefined, 'TOO_MANY_SCHEDULES'])
  })

  it('an at time in the future is accepted with an offset', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, '+00:00')
    const h = await boot([call('schedule_create', { at, prompt: 'later' }), { text: 'ok' }])
    await h.prompt('later')
    expect(results(h)[0].error).toBeUndefined()
    expect(pendingSchedules(h.session)[0]).toMatchObject({ kind: 'at', nextAt: Date.parse(at) })
  })

  it('unloading the plugin removes the tools and stops the timers', async () => {
    await onFakeClock(async () => {
      const h2 = await createHarness({})
      harnesses.push(h2)
      // Logged before the mount, so the mount arms a timer for it (the live agent's pending reminder).
      h2.session.append('schedule/created', {
        id: 'sch-1',
        kind: 'after',
        prompt: 'never',
        dueAt: Date.now() + 200,
        createdAt: Date.now(),
      })
      const mounted = await h2.mount(Schedule, {})
      expect(h2.ctx.tools.get('schedule_create')).toBeDefined()
      expect(vi.getTimerCount()).toBeGreaterThan(0)
      await mounted.dispose()
      expect(h2.ctx.tools.get('schedule_create')).toBeUndefined()
      vi.advanceTimersByTime(10_000)
      expect(h2.session.events.some((e) => e.type === 'schedule/fired')).toBe(false)
    })
  })

  it("a subagent's session cannot schedule, and its agent arms nothing", async () => {
    const first = await boot([])
    const child = first.ctx.sessions.create({ cwd: '/w', parent: { sessionId: first.session.id, boundary: 0 } })
    child.append('schedule/created', {
      id: 'sch-1',
      kind: 'after',
      prompt: 'copied',
      dueAt: Date.now() - 1000,
      createdAt: Date.now() - 2000,
    })
    await onFakeClock(async () => {
      const h = await boot([call('schedule_create', { after_seconds: 5, prompt: 'x' }), { text: 'ok' }], {
        session: child,
      })
      await h.prompt('go')
      expect(results(h)[0].error?.code).toBe('SUBAGENT_SESSION')
      // The copied reminder is overdue: a timer armed for it would fire in this advance.
      vi.advanceTimersByTime(10_000)
      expect(h.session.events.some((e) => e.type === 'schedule/fired')).toBe(false)
    })
  })

  it('/schedule lists and cancels for the human; bad lines are one-line errors', async () => {
    const { default: CommandRegistry } = await import('@dsh/commands')
    const h = await createHarness({
      plugins: [
        [CommandRegistry, {}],
        [Schedule, {}],
      ],
    })
    harnesses.push(h)
    const run = async (line: string) => {
      const r = await h.ctx.commands.dispatch(h.agent, line)
      if (!r.handled) throw new Error('not handled')
      return r.ok ? (r.output ?? '') : `ERR ${r.error.message}`
    }
    expect(await run('/schedule')).toBe('No pending reminders.')
    h.session.append('schedule/created', {
      id: 'sch-1',
      kind: 'after',
      prompt: 'stretch',
      dueAt: Date.now() + 600_000,
      createdAt: Date.now(),
    })
    expect(await run('/schedule')).toMatch(/^sch-1 \(after\) next at .* \(in \d+ s\): "stretch"$/)
    expect(await run('/schedule cancel sch-9')).toBe(
      'ERR /schedule failed: no pending reminder "sch-9" in this session (pending: sch-1)',
    )
    expect(await run('/schedule remove sch-1')).toBe('ERR /schedule failed: usage: /schedule [cancel <id>]')
    expect(await run('/schedule cancel sch-1')).toBe('Reminder sch-1 cancelled.')
    expect(h.session.last('schedule/cancelled')!.data).toEqual({ id: 'sch-1', by: 'human' })
    expect(pendingSchedules(h.session)).toEqual([])
  })
})
