// The browser-safe part of @dsh/ui-input-trigger: the source and menu types of
// `ctx.inputTriggers` and the pure helpers (trigger detection, replacement, fuzzy score).
//
// Where a trigger sits under the caret: the token from the last whitespace before the caret up
// to the caret. `/` counts only at the very start of the input (a command line); `@` at any word
// boundary (start of input or after whitespace). Pure, browser-safe.

import type { PromptReference } from '@dsh/web-protocol'

export type TriggerChar = '/' | '@'

export interface TriggerMatch {
  char: TriggerChar
  /** Index of the trigger character. */
  start: number
  /** Index just past the token (the caret). */
  end: number
  /** What follows the trigger character up to the caret. */
  query: string
}

export function findTrigger(
  text: string,
  caret: number,
  chars: readonly TriggerChar[] = ['/', '@'],
): TriggerMatch | undefined {
  if (caret < 1 || caret > text.length) return undefined
  let start = caret
  while (start > 0 && !/\s/.test(text[start - 1])) start--
  const char = text[start] as TriggerChar
  if (!chars.includes(char)) return undefined
  if (char === '/' && start !== 0) return undefined
  const query = text.slice(start + 1, caret)
  // `//x` or `/a/b` is a path, not a command.
  if (char === '/' && query.includes('/')) return undefined
  return { char, start, end: caret, query }
}

/** `text` with `[start, end)` replaced by `insert`, and where the caret goes. */
export function replaceRange(
  text: string,
  start: number,
  end: number,
  insert: string,
): { text: string; caret: number } {
  return { text: text.slice(0, start) + insert + text.slice(end), caret: start + insert.length }
}

/**
 * Subsequence match score of `query` in `target` (case-insensitive): higher is better, undefined
 * when not every query character appears in order. Favours prefix, word-start and contiguous hits.
 */
export function fuzzyScore(query: string, target: string): number | undefined {
  if (!query) return 0
  const q = query.toLowerCase()
  const t = target.toLowerCase()
  let score = 0
  let ti = 0
  let last = -2
  for (const ch of q) {
    const at = t.indexOf(ch, ti)
    if (at < 0) return undefined
    score += 1
    if (at === last + 1) score += 3
    if (at === 0 || '/._- '.includes(t[at - 1])) score += 2
    last = at
    ti = at + 1
  }
  if (t.startsWith(q)) score += 10
  // A basename hit beats a hit spread over the directories.
  const base = t.slice(t.lastIndexOf('/') + 1)
  if (base.includes(q)) score += 5
  return score - t.length / 100
}

export interface TriggerCandidate {
  id: string
  label: string
  detail?: string
  /** Replaces the trigger token when picked (default: `label`); a space follows it. */
  insert?: string
  /**
   * What the pick attaches to the message as context (a file or a session). The composer sends
   * the references whose inserted token is still in the text (`takeReferences`); typed text that
   * looks the same is not a reference.
   */
  reference?: PromptReference
}

export interface TriggerSession {
  sessionId: string
}

/** The composer input a pick or an Enter handler works on. */
export interface ComposerInput {
  readonly element: HTMLTextAreaElement
  readonly text: string
  /** Replaces the whole text (the composer sees an ordinary input event). */
  setText(text: string, caret?: number): void
}

export interface TriggerSource {
  id: string
  char: TriggerChar
  /** Group heading in the menu. */
  group?: string
  /** Lower first (default 0). */
  order?: number
  candidates(
    query: string,
    session: TriggerSession,
    signal: AbortSignal,
  ): TriggerCandidate[] | Promise<TriggerCandidate[]>
  /** Default: the token becomes `insert ?? label` and a space. */
  pick?(
    candidate: TriggerCandidate,
    session: TriggerSession,
    input: ComposerInput,
    match: TriggerMatch,
  ): void | Promise<void>
  /** Claims Enter for a line (no menu open): return the handler, or undefined to pass. */
  matchEnter?(text: string, session: TriggerSession): ((input: ComposerInput) => void | Promise<void>) | undefined
}

export interface MenuGroup {
  source: TriggerSource
  items: TriggerCandidate[]
}
export interface MenuState {
  sessionId: string
  match: TriggerMatch
  anchor: HTMLTextAreaElement
  groups: MenuGroup[]
  active: number
  loading: boolean
  /**
   * The groups shown are an earlier query's, kept while this one's candidates load: Enter or Tab
   * then waits for the new list instead of picking from the old one.
   */
  stale?: boolean
  error?: string
}

/** `ctx.inputTriggers` (the browser half of @dsh/ui-input-trigger). */
export interface InputTriggersApi {
  /** Adds a source; an effect of the caller (its unload removes it). */
  register(source: TriggerSource): () => void
  list(): readonly TriggerSource[]
  /** Closes the open menu. */
  close(): void
  /**
   * A source's candidates changed (a command registered, a server re-listed): the open menu, when
   * it shows that source's trigger character, asks every source again for the same query. The
   * caret, the typed text and the active row stay; nothing happens while no menu is open.
   */
  refresh(sourceId?: string): void
  /**
   * The references picked in `sessionId`'s composer whose token is still in `text` (as a whole
   * word), in pick order without duplicates; the session's picks are forgotten (call it on send).
   */
  takeReferences(sessionId: string, text: string): PromptReference[]
  /**
   * Remembers `reference` as picked in `sessionId`'s composer under `token` (what a source's own
   * `pick` inserted, e.g. a resource template once its variables are filled in).
   */
  addReference(sessionId: string, token: string, reference: PromptReference): void
}

/** Whether `token` stands in `text` as a whole word (whitespace or an end on both sides; trailing punctuation allowed). */
export function hasToken(text: string, token: string): boolean {
  for (let at = text.indexOf(token); at >= 0; at = text.indexOf(token, at + 1)) {
    const before = at === 0 || /\s/.test(text[at - 1])
    const rest = text.slice(at + token.length)
    if (before && /^(?:[,.;:!?)\]}'"`]*)(?:\s|$)/.test(rest)) return true
  }
  return false
}

declare module 'cordis' {
  interface Context {
    inputTriggers: InputTriggersApi
  }
}
