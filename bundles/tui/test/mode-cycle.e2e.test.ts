// Shift+Tab never moves the TUI into danger-full-access without an explicit `y`: the real `dsh`
// bin in tmux (see harness.ts), every assertion on the screen after real key presses. The status
// line shows the session's preset as the permission-presets service holds it.
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { TuiSession, killServer } from './harness.ts'

vi.setConfig({ testTimeout: 60_000 })

let open: TuiSession[] = []
afterEach(async () => {
  for (const s of open) await s.close()
  open = []
})
afterAll(() => killServer())

const STATUS = /deepseek-official\/deepseek-v4-flash/
const CONFIRM = /Switch to danger-full-access\?/
/** The status line's mode field. */
const mode = (screen: string) => /deepseek-v4-flash · ([a-z-]+)/.exec(screen)?.[1]

describe('dsh --profile tui: Shift+Tab and danger-full-access', () => {
  it('asks before danger-full-access; n, Esc or Shift+Tab again keep the mode, only y switches', async () => {
    const s = await TuiSession.start({ steps: [] })
    open.push(s)
    expect(mode(await s.waitFor(STATUS))).toBe('workspace-write')

    // Declined three ways; each time the mode stays, and the next press moves past danger.
    for (const decline of ['n', 'Escape', 'BTab']) {
      s.keys('BTab')
      const asked = await s.waitFor(CONFIRM)
      expect(asked).toContain('No confinement and no approval prompts')
      expect(asked).toMatch(/y switches · any other key keeps workspace-write/)
      expect(mode(asked)).toBe('workspace-write')
      s.keys(decline)
      const after = await s.waitFor((t) => !CONFIRM.test(t) && /permission mode unchanged: workspace-write/.test(t))
      expect(mode(after), decline).toBe('workspace-write')
      s.keys('BTab')
      expect(mode(await s.waitFor((t) => mode(t) === 'read-only' && !CONFIRM.test(t)))).toBe('read-only')
      s.keys('BTab')
      await s.waitFor((t) => mode(t) === 'workspace-write')
    }

    // Positive control: y switches.
    s.keys('BTab')
    await s.waitFor(CONFIRM)
    s.keys('y')
    const switched = await s.waitFor((t) => !CONFIRM.test(t) && mode(t) === 'danger-full-access')
    expect(switched).toMatch(/permission mode: danger-full-access/)
    // Leaving danger needs no question.
    s.keys('BTab')
    expect(mode(await s.waitFor((t) => mode(t) === 'read-only'))).toBe('read-only')
  })
})
