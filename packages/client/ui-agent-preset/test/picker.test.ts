// The picker rendered by React's server renderer, and the fold of the log it reads.
import { createElement as h } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { en, presetState, PresetPicker, zh } from '../src/client/index.tsx'

const t = (key: string, vars: Record<string, string> = {}) =>
  ((en as Record<string, string>)[key] ?? key).replace(/\{(\w+)\}/g, (_, k: string) => vars[k] ?? '')

describe('ui-agent-preset', () => {
  it('reads the recorded preset and whether a turn started', () => {
    expect(presetState([])).toEqual({ started: false })
    expect(presetState([{ type: 'preset/selected', data: { name: 'minimal' } }, { type: 'turn/start' }])).toEqual({
      recorded: 'minimal',
      started: true,
    })
  })

  it('is a picker before the first turn and a label after it', () => {
    const open = renderToStaticMarkup(
      h(PresetPicker, {
        names: ['code', 'minimal', 'standard'],
        current: 'standard',
        locked: false,
        t,
        onSelect: () => {},
      }),
    )
    expect(open).toContain('<option value="standard" selected="">Preset: standard</option>')
    expect(open).toContain('data-locked="false"')
    const locked = renderToStaticMarkup(
      h(PresetPicker, { names: ['standard'], current: 'minimal', locked: true, t, onSelect: () => {} }),
    )
    expect(locked).toContain('data-locked="true"')
    expect(locked).toContain('>Preset: minimal</span>')
  })

  it('Chinese covers every English key', () => {
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort())
  })
})
