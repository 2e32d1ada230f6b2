// The composer's buttons by state, its takeover and its read-only form, rendered with the real
// React server renderer (moved from @dsh/ui-conversation's view tests with the composer).
// Typing, history and sending are in @dsh/ui-conversation's browser test.
import { createElement as h } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { Composer } from '../src/composer.tsx'
import { t } from './translate.ts'

describe('Composer', () => {
  const base = { t, onSend: () => {}, onCancel: () => {}, history: [] }
  it('offers Send when idle, and Queue, Steer and Stop while a turn runs', () => {
    const idle = renderToStaticMarkup(h(Composer, { ...base, running: false }))
    expect(idle).toContain('>Send</button>')
    expect(idle).not.toContain('Stop')
    const busy = renderToStaticMarkup(h(Composer, { ...base, running: true }))
    expect(busy).toMatch(/>Steer<\/button>.*>Queue<\/button>.*>Stop<\/button>/s)
  })
  it('is replaced by a takeover, and read-only when disabled', () => {
    expect(renderToStaticMarkup(h(Composer, { ...base, running: true, takeover: h('div', null, 'APPROVE?') }))).toBe(
      '<div class="dsh-composer dsh-composer-takeover"><div>APPROVE?</div></div>',
    )
    expect(renderToStaticMarkup(h(Composer, { ...base, running: false, disabled: true }))).toContain('readOnly=""')
  })
})
