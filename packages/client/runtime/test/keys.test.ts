// The one table of keyboard bindings: what a press means in each scope, and the rules the shell
// and the composers rely on (modifiers exact, Shift ignored where unspecified, typing guards).
import { describe, expect, it } from 'vitest'
import { KEY_BINDINGS, matchKey, pageKey, type KeyPress } from '../src/keys.ts'

const press = (key: string, mods: Partial<KeyPress> = {}, code?: string): KeyPress => ({
  key,
  ...(code ? { code } : {}),
  ctrlKey: false,
  metaKey: false,
  altKey: false,
  shiftKey: false,
  ...mods,
})

describe('KEY_BINDINGS', () => {
  it('has unique ids and something to show for each', () => {
    const ids = KEY_BINDINGS.map((b) => b.id)
    expect(new Set(ids).size).toBe(ids.length)
    for (const b of KEY_BINDINGS) expect(b.keys.length > 0 && b.chords.length > 0).toBe(true)
  })

  it('page: Ctrl or ⌘+K anywhere, ? and / only outside a text field, Alt by key position', () => {
    expect(pageKey(press('k', { ctrlKey: true }), true)?.id).toBe('palette')
    expect(pageKey(press('K', { metaKey: true }), false)?.id).toBe('palette')
    expect(pageKey(press('k', { ctrlKey: true, shiftKey: true }), false)).toBeUndefined()
    expect(pageKey(press('?', { shiftKey: true }), false)?.id).toBe('help')
    expect(pageKey(press('?', { shiftKey: true }), true)).toBeUndefined()
    expect(pageKey(press('/'), false)?.id).toBe('search')
    expect(pageKey(press('/', { ctrlKey: true }), false)).toBeUndefined()
    // Alt+N types a dead key on some layouts: the code decides.
    expect(pageKey(press('˜', { altKey: true }, 'KeyN'), true)?.id).toBe('new')
    expect(pageKey(press('ArrowUp', { altKey: true }, 'ArrowUp'), true)?.id).toBe('prev')
    expect(pageKey(press('Escape'), true)?.id).toBe('escape')
  })

  it('composer: Enter sends, Shift+Enter is a new line, plain arrows walk the history, Alt+arrows do not', () => {
    expect(matchKey(press('Enter'), 'composer')).toBe('send')
    expect(matchKey(press('Enter', { shiftKey: true }), 'composer')).toBe('newline')
    expect(matchKey(press('Enter', { ctrlKey: true }), 'composer')).toBeUndefined()
    expect(matchKey(press('ArrowUp'), 'composer')).toBe('historyPrev')
    expect(matchKey(press('ArrowUp', { altKey: true }, 'ArrowUp'), 'composer')).toBeUndefined()
    expect(matchKey(press('Escape'), 'composer')).toBe('stop')
  })
})
