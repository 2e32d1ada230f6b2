// The keyboard bindings of dsh web, in one table: the shell's key handler and the composer find
// what a key press means here (`matchKey`), and the shortcuts sheet lists the same rows, so the
// sheet cannot drift from what the keys do. Labels are messages of the shell's namespace
// (`shortcut.<id>`).

/** Where a binding acts: anywhere on the page, or in the message composer. */
export type KeyScope = 'page' | 'composer'

/** One way to press a binding. A modifier left undefined is ignored (for `shift` only); `mod` is Ctrl or ⌘. */
export interface KeyChord {
  /** `KeyboardEvent.key`, compared case-insensitively. */
  key?: string
  /** `KeyboardEvent.code` (layout-independent: Alt+N types `˜` on a Mac keyboard). */
  code?: string
  mod?: boolean
  alt?: boolean
  shift?: boolean
}

export interface KeyBinding {
  id: string
  /** What the sheet shows, e.g. `Ctrl+K`. */
  keys: string
  scope: KeyScope
  /** Also acts while the focus is in a text field (page bindings; composer bindings always do). */
  whileTyping?: boolean
  chords: readonly KeyChord[]
}

export const KEY_BINDINGS: readonly KeyBinding[] = [
  { id: 'palette', keys: 'Ctrl+K', scope: 'page', whileTyping: true, chords: [{ key: 'k', mod: true, shift: false }] },
  { id: 'help', keys: '?', scope: 'page', chords: [{ key: '?' }] },
  { id: 'search', keys: '/', scope: 'page', chords: [{ key: '/' }] },
  { id: 'new', keys: 'Alt+N', scope: 'page', whileTyping: true, chords: [{ code: 'KeyN', alt: true }] },
  { id: 'panel', keys: 'Alt+P', scope: 'page', whileTyping: true, chords: [{ code: 'KeyP', alt: true }] },
  { id: 'prev', keys: 'Alt+↑', scope: 'page', whileTyping: true, chords: [{ code: 'ArrowUp', alt: true }] },
  { id: 'next', keys: 'Alt+↓', scope: 'page', whileTyping: true, chords: [{ code: 'ArrowDown', alt: true }] },
  { id: 'escape', keys: 'Esc', scope: 'page', whileTyping: true, chords: [{ key: 'Escape' }] },
  { id: 'send', keys: 'Enter', scope: 'composer', chords: [{ key: 'Enter', shift: false }] },
  { id: 'newline', keys: 'Shift+Enter', scope: 'composer', chords: [{ key: 'Enter', shift: true }] },
  { id: 'historyPrev', keys: '↑', scope: 'composer', chords: [{ key: 'ArrowUp', shift: false }] },
  { id: 'historyNext', keys: '↓', scope: 'composer', chords: [{ key: 'ArrowDown', shift: false }] },
  { id: 'stop', keys: 'Esc', scope: 'composer', chords: [{ key: 'Escape' }] },
]

/** The fields of a keyboard event a chord reads (a DOM or React event has them). */
export interface KeyPress {
  key: string
  code?: string
  ctrlKey: boolean
  metaKey: boolean
  altKey: boolean
  shiftKey: boolean
}

function matches(chord: KeyChord, e: KeyPress): boolean {
  if (chord.key !== undefined && e.key?.toLowerCase() !== chord.key.toLowerCase()) return false
  if (chord.code !== undefined && e.code !== chord.code) return false
  if ((e.ctrlKey || e.metaKey) !== (chord.mod ?? false)) return false
  if (e.altKey !== (chord.alt ?? false)) return false
  return chord.shift === undefined || e.shiftKey === chord.shift
}

/** The id of the binding of `scope` a key press means, or undefined. */
export function matchKey(e: KeyPress, scope: KeyScope): string | undefined {
  for (const binding of KEY_BINDINGS)
    if (binding.scope === scope && binding.chords.some((c) => matches(c, e))) return binding.id
  return undefined
}

/** The page binding a press means, honouring `whileTyping` (`typing`: the focus is in a text field). */
export function pageKey(e: KeyPress, typing: boolean): KeyBinding | undefined {
  return KEY_BINDINGS.find(
    (b) => b.scope === 'page' && (!typing || b.whileTyping === true) && b.chords.some((c) => matches(c, e)),
  )
}
