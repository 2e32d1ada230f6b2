// Issue #15: the system prompt's date is the day the session started, so a session resumed the
// next day keeps its logged prompt (and the provider's cached prefix); the new day reaches the
// model as an appended time note instead.
import { describe, expect, it } from 'vitest'
import { createHarness } from '@dsh/agent-loop-testkit'
import { Session, type AnySessionEvent } from '@dsh/session'
import * as TimeContext from '../src/index.ts'

// Local times, so the system prompt (local date) and the time note (system zone) agree.
const DAY_1 = new Date(2026, 0, 2, 23, 30).getTime()
const DAY_2 = new Date(2026, 0, 3, 9, 15).getTime()

const headers = (events: readonly AnySessionEvent[]) => events.filter((e) => e.type === 'request/header')
const noteTexts = (events: readonly AnySessionEvent[]) =>
  events.flatMap((e) =>
    e.type === 'user/message' && e.data.source.kind === 'plugin' && e.data.source.plugin === TimeContext.name
      ? [e.data.content.map((b) => (b.type === 'text' ? b.text : '')).join('')]
      : [],
  )

describe('system prompt date across resume', () => {
  it('a session resumed the next day is prompted with the prompt it was logged with', async () => {
    const clock = { now: DAY_1 }
    const original = new Session({ cwd: process.cwd(), clock: () => clock.now })
    const first = await createHarness({ script: [{ text: 'ok' }], session: original, plugins: [[TimeContext, {}]] })
    await first.prompt('before midnight')
    const sent = first.model.requests[0].system ?? ''
    expect(sent).toContain('Session date: 2026-01-02')
    expect(headers(original.events)).toHaveLength(1)
    expect((headers(original.events)[0].data as { system: string }).system).toBe(sent)
    const log = original.events.slice()
    await first.dispose()

    // A new process the next morning restores the log.
    const resumed = new Session({ id: original.id, cwd: original.cwd, events: log, clock: () => DAY_2 })
    const second = await createHarness({ script: [{ text: 'ok' }], session: resumed, plugins: [[TimeContext, {}]] })
    try {
      await second.prompt('next morning')
      expect(second.model.requests[0].system).toBe(sent)
      // Nothing new to log: the prompt did not change.
      expect(headers(resumed.events)).toHaveLength(1)
      // The model still learns the day changed, from an appended note.
      expect(noteTexts(resumed.events).at(-1)).toMatch(/^current time: 2026-01-03 09:15 /)
    } finally {
      await second.dispose()
    }
  })
})
