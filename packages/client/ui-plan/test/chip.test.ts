// The chip rendered by React's server renderer, and the fold of the log it shows.
import { createElement as h } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { en, planActive, PlanChip, zh } from '../src/client/index.tsx'

const t = (key: string) => (en as Record<string, string>)[key] ?? key

describe('ui-plan', () => {
  it('folds the last plan/mode event of the log', () => {
    expect(planActive([])).toBe(false)
    expect(planActive([{ type: 'plan/mode', data: { active: true } }, { type: 'turn/start' }])).toBe(true)
    expect(
      planActive([
        { type: 'plan/mode', data: { active: true } },
        { type: 'plan/mode', data: { active: false } },
      ]),
    ).toBe(false)
  })

  it('shows the state and what a click does', () => {
    const on = renderToStaticMarkup(h(PlanChip, { active: true, busy: false, t, onToggle: () => {} }))
    expect(on).toContain('data-active="true"')
    expect(on).toContain('aria-pressed="true"')
    expect(on).toContain('title="Leave plan mode"')
    expect(on).toContain('>Plan mode</button>')
    const off = renderToStaticMarkup(h(PlanChip, { active: false, busy: true, t, onToggle: () => {} }))
    expect(off).toContain('data-active="false"')
    expect(off).toContain('disabled=""')
  })

  it('Chinese covers every English key', () => {
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort())
  })
})
