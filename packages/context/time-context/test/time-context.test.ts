import { describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness } from '@dsh/agent-loop-testkit'
import { Session, type AnySessionEvent } from '@dsh/session'
import * as TimeContext from '../src/index.ts'
import { formatElapsed, parseNote, renderNote, zonedTime } from '../src/index.ts'

const notes = (events: readonly AnySessionEvent[]) =>
  events.flatMap((e) =>
    e.type === 'user/message' && e.data.source.kind === 'plugin' && e.data.source.plugin === '@dsh/time-context'
      ? [e.data.content.map((b) => (b.type === 'text' ? b.text : '')).join('')]
      : [],
  )

// 2026-03-28 22:30 UTC: 23:30 in Berlin (UTC+1), the evening before the DST switch.
const T0 = Date.UTC(2026, 2, 28, 22, 30)

async function setup(config: object, clock: { now: number }, session?: Session) {
  const s = session ?? new Session({ cwd: process.cwd(), clock: () => clock.now })
  return createHarness({
    script: Array.from({ length: 20 }, () => ({ text: 'ok' })),
    session: s,
    plugins: [[TimeContext, config]],
  })
}

describe('rendering', () => {
  it('renders a zoned time with its offset and parses it back', () => {
    const berlin = zonedTime(T0, 'Europe/Berlin')
    expect(berlin).toEqual({
      date: '2026-03-28',
      time: '23:30',
      weekday: 'Saturday',
      offset: '+01:00',
      zone: 'Europe/Berlin',
    })
    expect(zonedTime(T0 + 3 * 3600_000, 'Europe/Berlin')).toMatchObject({
      date: '2026-03-29',
      time: '03:30',
      offset: '+02:00',
    })
    expect(zonedTime(T0, 'UTC')).toMatchObject({ offset: '+00:00', time: '22:30' })
    expect(zonedTime(T0, 'Asia/Kolkata')).toMatchObject({ offset: '+05:30', date: '2026-03-29', time: '04:00' })
    const text = renderNote(berlin, 75 * 60_000)
    expect(text).toBe(
      'current time: 2026-03-28 23:30 Saturday, UTC+01:00, time zone Europe/Berlin\nelapsed since the previous time note: 1 h 15 min',
    )
    expect(parseNote(text)).toEqual({ date: '2026-03-28', zone: 'Europe/Berlin' })
    expect(parseNote('something else')).toBeUndefined()
  })
  it('formats elapsed time coarsely', () => {
    expect([5_000, 12 * 60_000, 3 * 3600_000, 50 * 3600_000, -1].map(formatElapsed)).toEqual([
      '5 s',
      '12 min',
      '3 h',
      '2 d 2 h',
      '0 s',
    ])
  })
})

describe('time-context in the loop', () => {
  it('injects on the first request, then only after the interval or a date change, with the elapsed time', async () => {
    const clock = { now: T0 }
    const harness = await setup({ timeZone: 'Europe/Berlin', refreshIntervalMs: 3_600_000 }, clock)
    await harness.prompt('one')
    expect(notes(harness.session.events)).toEqual([
      'current time: 2026-03-28 23:30 Saturday, UTC+01:00, time zone Europe/Berlin',
    ])
    expect(JSON.stringify(harness.model.requests[0].messages)).toContain('current time: 2026-03-28 23:30')

    clock.now += 10 * 60_000 // 23:40, same day, inside the hour: nothing
    await harness.prompt('two')
    expect(notes(harness.session.events)).toHaveLength(1)

    clock.now += 25 * 60_000 // 00:05 next day: the date changed
    await harness.prompt('three')
    expect(notes(harness.session.events)[1]).toBe(
      'current time: 2026-03-29 00:05 Sunday, UTC+01:00, time zone Europe/Berlin\nelapsed since the previous time note: 35 min',
    )

    clock.now += 2 * 3_600_000 // 01:05 UTC: past the 01:00 UTC switch, so 03:05 local
    await harness.prompt('four')
    expect(notes(harness.session.events)[2]).toMatch(/^current time: 2026-03-29 03:05 Sunday, UTC\+02:00, .*\n.*: 2 h$/)
    await harness.dispose()
  })

  it('schedules from the log after resume, and a zone change injects at once', async () => {
    const clock = { now: T0 }
    const first = await setup({ timeZone: 'UTC', refreshIntervalMs: 3_600_000 }, clock)
    await first.prompt('one')
    const events = first.session.events
    await first.dispose()

    clock.now += 60_000
    const restored = new Session({ cwd: process.cwd(), clock: () => clock.now, events })
    const second = await setup({ timeZone: 'UTC', refreshIntervalMs: 3_600_000 }, clock, restored)
    await second.prompt('two')
    expect(notes(second.session.events)).toHaveLength(1)
    await second.dispose()

    const third = await setup(
      { timeZone: 'Asia/Tokyo', refreshIntervalMs: 3_600_000 },
      clock,
      new Session({ cwd: process.cwd(), clock: () => clock.now, events: restored.events }),
    )
    await third.prompt('three')
    expect(notes(third.session.events)[1]).toMatch(
      /time zone Asia\/Tokyo\nelapsed since the previous time note: 1 min$/,
    )
    await third.dispose()
  })

  it('samples before every request unless firstStepOnly, and records nothing for a rejected step', async () => {
    const clock = { now: T0 }
    const script = [{ toolCalls: [{ name: 'nope', arguments: {} }] }, { text: 'done' }]
    const session = new Session({ cwd: process.cwd(), clock: () => clock.now })
    const harness = await createHarness({ script, session, plugins: [[TimeContext, { refreshIntervalMs: 1 }]] })
    // The clock moves between the two requests of the turn.
    harness.ctx.on('tools/result', () => void (clock.now += 5_000))
    await harness.prompt('go')
    expect(notes(harness.session.events)).toHaveLength(2)
    await harness.dispose()

    const h2 = await createHarness({
      script,
      session: new Session({ cwd: process.cwd(), clock: () => clock.now }),
      plugins: [[TimeContext, { refreshIntervalMs: 1, firstStepOnly: true }]],
    })
    h2.ctx.on('tools/result', () => void (clock.now += 5_000))
    await h2.prompt('go')
    expect(notes(h2.session.events)).toHaveLength(1)
    await h2.dispose()

    const h3 = await setup({}, clock)
    const gate = await h3.mount({
      name: 'gate',
      apply(ctx: Context) {
        ctx.on('agent/pre-step', async () => ({ action: 'reject' as const, code: 'NO', reason: 'test' }))
      },
    })
    expect((await h3.prompt('x')).reason).toBe('blocked')
    expect(notes(h3.session.events)).toEqual([])
    await gate.dispose()
    await h3.prompt('y')
    expect(notes(h3.session.events)).toHaveLength(1)
    await h3.dispose()
  })

  it('stops when unloaded', async () => {
    const clock = { now: T0 }
    const harness = await createHarness({
      script: [{ text: 'a' }, { text: 'b' }],
      session: new Session({ cwd: process.cwd(), clock: () => clock.now }),
    })
    const mounted = await harness.mount(TimeContext, { refreshIntervalMs: 1 })
    await harness.prompt('1')
    await mounted.dispose()
    clock.now += 86_400_000
    await harness.prompt('2')
    expect(notes(harness.session.events)).toHaveLength(1)
    await harness.dispose()
  })

  it('refuses an unknown zone and a zero interval at load', async () => {
    const harness = await createHarness({})
    const logs: string[] = []
    harness.ctx.on('internal/error' as never, ((e: unknown) => void logs.push(String(e))) as never)
    expect(() => TimeContext.Config({ refreshIntervalMs: 0 })).toThrow()
    expect(() => TimeContext.apply(harness.ctx, TimeContext.Config({ timeZone: 'Mars/Olympus' }))).toThrow(
      /Mars\/Olympus/,
    )
    await harness.dispose()
  })
})
