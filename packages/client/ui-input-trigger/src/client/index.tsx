// @dsh/ui-input-trigger/client: `ctx.inputTriggers`, the `/` and `@` pipeline of the composer.
// Sources register per trigger character; typing a trigger under the caret opens one grouped
// candidate menu above the composer, ↑/↓ move, Enter/Tab pick, Esc closes. A source may also
// claim Enter for a whole line (`matchEnter`, e.g. a slash command run without a model turn).
// It attaches to the composer's textarea (`textarea[data-composer]`) through document listeners,
// so it works with whichever composer fills the seat.
import { type Context, Service } from 'cordis'
import { useEffect, useState } from 'react'
import { Store, useStore } from '@dsh/client-runtime'
import type { PromptReference } from '@dsh/web-protocol'
import {
  findTrigger,
  hasToken,
  replaceRange,
  type ComposerInput,
  type InputTriggersApi,
  type MenuGroup,
  type MenuState,
  type TriggerCandidate,
  type TriggerMatch,
  type TriggerSession,
  type TriggerSource,
} from '../shared.ts'

export * from '../shared.ts'

export const name = '@dsh/ui-input-trigger'

const valueSetter =
  typeof HTMLTextAreaElement === 'undefined'
    ? undefined
    : Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value')?.set

export function composerInput(element: HTMLTextAreaElement): ComposerInput {
  return {
    element,
    get text() {
      return element.value
    },
    setText(text: string, caret = text.length) {
      valueSetter?.call(element, text)
      element.dispatchEvent(new Event('input', { bubbles: true }))
      element.focus()
      element.selectionStart = element.selectionEnd = caret
    },
  }
}

const isComposer = (target: EventTarget | null): target is HTMLTextAreaElement =>
  typeof HTMLTextAreaElement !== 'undefined' &&
  target instanceof HTMLTextAreaElement &&
  target.dataset.composer === 'true'

const CSS = `
.dsh-trigger-menu { position: fixed; z-index: 30; max-height: 320px; overflow-y: auto; background: var(--bg, #fff); color: var(--fg, #111);
  border: 1px solid var(--border, #ddd); border-radius: 8px; box-shadow: 0 6px 24px rgb(0 0 0 / .18); font-size: 13px; padding: 4px 0; }
.dsh-trigger-menu h4 { margin: 4px 10px 2px; font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--fg-muted, #666); }
.dsh-trigger-item { display: flex; gap: 10px; align-items: baseline; padding: 4px 10px; cursor: pointer; }
.dsh-trigger-item[aria-selected="true"] { background: var(--bg-hover, #eceef2); }
.dsh-trigger-item .label { font-family: ui-monospace, monospace; white-space: nowrap; }
.dsh-trigger-item .detail { color: var(--fg-muted, #666); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.dsh-trigger-empty { padding: 4px 10px; color: var(--fg-muted, #666); }
`

export class InputTriggers extends Service implements InputTriggersApi {
  static inject = ['slots', 'router']
  readonly menu = new Store<MenuState | undefined>(undefined)
  private readonly sources: TriggerSource[] = []
  private generation = 0
  /** Enter or Tab pressed while the menu showed an earlier query's list: done when `generation` settles. */
  private pending?: { generation: number; key: 'Enter' | 'Tab'; target: HTMLTextAreaElement }
  /** Picks with a reference, per session: the inserted token and what it attaches. */
  private readonly picks = new Map<string, Array<{ token: string; reference: PromptReference }>>()
  private abort?: AbortController

  constructor(ctx: Context) {
    super(ctx, 'inputTriggers')
    ctx.effect(() => {
      if (typeof document === 'undefined') return () => {}
      const style = document.createElement('style')
      style.dataset.owner = name
      style.textContent = CSS
      document.head.append(style)
      const onInput = (e: Event) => isComposer(e.target) && this.update(e.target)
      const onKey = (e: KeyboardEvent) => this.onKey(e)
      const onBlur = (e: FocusEvent) => isComposer(e.target) && this.close()
      const onSelect = () => {
        const el = document.activeElement
        if (this.menu.get() && isComposer(el)) this.update(el)
      }
      document.addEventListener('input', onInput, true)
      document.addEventListener('keydown', onKey, true)
      document.addEventListener('focusout', onBlur, true)
      document.addEventListener('selectionchange', onSelect)
      return () => {
        style.remove()
        document.removeEventListener('input', onInput, true)
        document.removeEventListener('keydown', onKey, true)
        document.removeEventListener('focusout', onBlur, true)
        document.removeEventListener('selectionchange', onSelect)
        this.close()
      }
    }, 'ui-input-trigger: composer listeners')
    const menu = this.menu
    const pick = (group: MenuGroup, item: TriggerCandidate) => void this.pick(group, item)
    function Menu() {
      const state = useStore(menu)
      const [, setTick] = useState(0)
      useEffect(() => {
        // Follow the composer when the window resizes.
        const onResize = () => setTick((n) => n + 1)
        window.addEventListener('resize', onResize)
        return () => window.removeEventListener('resize', onResize)
      }, [])
      if (!state) return null
      const rect = state.anchor.getBoundingClientRect()
      let index = 0
      return (
        <div
          className="dsh-trigger-menu"
          role="listbox"
          data-trigger-menu={state.match.char}
          style={{ left: rect.left, width: rect.width, bottom: window.innerHeight - rect.top + 4 }}
          onMouseDown={(e) => e.preventDefault()}
        >
          {state.groups.map((group) => (
            <div key={group.source.id} data-trigger-group={group.source.id}>
              {group.source.group ? <h4>{group.source.group}</h4> : null}
              {group.items.map((item) => {
                const at = index++
                return (
                  // biome-ignore lint/a11y/useFocusableInteractive lint/a11y/useKeyWithClickEvents: options of the composer's completion popup: the focus stays in the composer, whose keydown moves the active option and picks it (Enter, Tab); the click is the pointer's path
                  <div
                    key={item.id}
                    role="option"
                    className="dsh-trigger-item"
                    aria-selected={at === state.active}
                    data-trigger-item={item.id}
                    onClick={() => pick(group, item)}
                  >
                    <span className="label">{item.label}</span>
                    {item.detail ? <span className="detail">{item.detail}</span> : null}
                  </div>
                )
              })}
            </div>
          ))}
          {state.error ? (
            <div className="dsh-trigger-empty" role="alert">
              {state.error}
            </div>
          ) : null}
          {!state.error && index === 0 ? <div className="dsh-trigger-empty">{state.loading ? '…' : '∅'}</div> : null}
        </div>
      )
    }
    ctx.slots.register('app.overlay', { id: 'ui-input-trigger', order: 10, component: Menu })
  }

  /** Adds a source; an effect of the caller (its unload removes it). */
  register(source: TriggerSource): () => void {
    if (
      !source ||
      typeof source.candidates !== 'function' ||
      (source.char !== '/' && source.char !== '@') ||
      !source.id
    ) {
      throw new TypeError('inputTriggers.register: expected {id, char: "/" | "@", candidates()}')
    }
    return this.ctx.effect(() => {
      if (this.sources.some((s) => s.id === source.id))
        throw new Error(`inputTriggers.register: a source ${JSON.stringify(source.id)} is already registered`)
      this.sources.push(source)
      this.sources.sort((a, b) => (a.order ?? 0) - (b.order ?? 0))
      // A browser half that loads after a menu of its character opened joins that menu.
      if (this.menu.get()?.match.char === source.char) this.refresh(source.id)
      return () => {
        const at = this.sources.indexOf(source)
        if (at >= 0) this.sources.splice(at, 1)
      }
    }, `inputTriggers: ${source.id}`)
  }

  addReference(sessionId: string, token: string, reference: PromptReference): void {
    const list = this.picks.get(sessionId) ?? []
    list.push({ token, reference })
    this.picks.set(sessionId, list)
  }

  takeReferences(sessionId: string, text: string): PromptReference[] {
    const picks = this.picks.get(sessionId) ?? []
    this.picks.delete(sessionId)
    const out: PromptReference[] = []
    const seen = new Set<string>()
    for (const { token, reference } of picks) {
      const key = JSON.stringify(reference)
      if (seen.has(key) || !hasToken(text, token)) continue
      seen.add(key)
      out.push(reference)
    }
    return out
  }

  list(): readonly TriggerSource[] {
    return [...this.sources]
  }

  close(): void {
    this.generation++
    this.abort?.abort()
    this.menu.set(undefined)
  }

  private session(): TriggerSession | undefined {
    const sessionId = this.ctx.router.route.get().sessionId
    return sessionId ? { sessionId } : undefined
  }

  private update(el: HTMLTextAreaElement): void {
    const session = this.session()
    const chars = [...new Set(this.sources.map((s) => s.char))]
    const match =
      session && el.selectionStart === el.selectionEnd ? findTrigger(el.value, el.selectionStart, chars) : undefined
    if (!session || !match) {
      this.close()
      return
    }
    const current = this.menu.get()
    if (
      current &&
      current.match.start === match.start &&
      current.match.query === match.query &&
      current.match.char === match.char
    )
      return
    this.ask(el, session, match, current?.match.char === match.char ? current.groups : [], 0)
  }

  refresh(sourceId?: string): void {
    const state = this.menu.get()
    if (!state) return
    if (sourceId !== undefined && !this.sources.some((s) => s.id === sourceId && s.char === state.match.char)) return
    // An Enter or Tab waiting for this query's list waits for the one asked now (same query).
    const waiting = this.pending?.generation === this.generation ? this.pending : undefined
    this.ask(state.anchor, { sessionId: state.sessionId }, state.match, state.groups, state.active)
    if (waiting) waiting.generation = this.generation
  }

  /** Asks the sources of `match`'s character for candidates and shows them (the newest ask wins). */
  private ask(
    el: HTMLTextAreaElement,
    session: TriggerSession,
    match: TriggerMatch,
    shown: MenuGroup[],
    active: number,
  ): void {
    const generation = ++this.generation
    this.abort?.abort()
    const abort = (this.abort = new AbortController())
    const sources = this.sources.filter((s) => s.char === match.char)
    const stale = shown.length > 0 && (this.menu.get()?.match.query !== match.query || this.menu.get()?.stale === true)
    this.menu.set({ sessionId: session.sessionId, match, anchor: el, groups: shown, active, loading: true, stale })
    void Promise.allSettled(
      sources.map(async (source) => ({ source, items: await source.candidates(match.query, session, abort.signal) })),
    ).then((results) => {
      if (generation !== this.generation) return
      const groups = results.flatMap((r) => (r.status === 'fulfilled' && r.value.items.length ? [r.value] : []))
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
      const count = groups.reduce((n, g) => n + g.items.length, 0)
      this.menu.set({
        sessionId: session.sessionId,
        match,
        anchor: el,
        groups,
        active: Math.min(active, Math.max(0, count - 1)),
        loading: false,
        ...(failed ? { error: String(failed.reason?.message ?? failed.reason) } : {}),
      })
      const pending = this.pending
      if (pending?.generation !== generation) return
      this.pending = undefined
      const state = this.menu.get()
      const items = state ? this.flat(state) : []
      // Nothing to pick in the new list: the key is spent (the text stays, a second Enter sends it).
      if (state && items.length && pending.target.isConnected) this.choose(state, items, pending.key, pending.target)
    })
  }

  private flat(state: MenuState): Array<{ group: MenuGroup; item: TriggerCandidate }> {
    return state.groups.flatMap((group) => group.items.map((item) => ({ group, item })))
  }

  private async pick(group: MenuGroup, item: TriggerCandidate): Promise<void> {
    const state = this.menu.get()
    if (!state) return
    this.close()
    const input = composerInput(state.anchor)
    const session = { sessionId: state.sessionId }
    if (item.reference) this.addReference(state.sessionId, item.insert ?? item.label, item.reference)
    if (group.source.pick) return group.source.pick(item, session, input, state.match)
    const { text, caret } = replaceRange(
      input.text,
      state.match.start,
      state.match.end,
      (item.insert ?? item.label) + ' ',
    )
    input.setText(text, caret)
  }

  private onKey(e: KeyboardEvent): void {
    if (!isComposer(e.target) || e.isComposing) return
    const state = this.menu.get()
    const stop = () => {
      e.preventDefault()
      e.stopPropagation()
    }
    const items = state ? this.flat(state) : []
    if (state && e.key === 'Escape') {
      stop()
      this.close()
      return
    }
    // A menu still loading its candidates (or with none) does not own Enter: the line is offered to
    // the sources below, so `/compact` typed and sent at once runs the command instead of going to
    // the model as text while the menu was still waiting for its list.
    if (state && items.length) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        stop()
        const step = e.key === 'ArrowDown' ? 1 : -1
        this.menu.set({ ...state, active: (state.active + step + items.length) % items.length })
        return
      }
      if ((e.key === 'Enter' || e.key === 'Tab') && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
        stop()
        // The list on screen answers an earlier query ("@" while "@coun" is loading): picking its
        // active row would insert something the typed text does not match. The key waits for
        // this query's list (a later keystroke asks again and drops it).
        if (state.loading && state.stale) {
          this.pending = { generation: this.generation, key: e.key, target: e.target }
          return
        }
        this.choose(state, items, e.key, e.target)
        return
      }
      return
    }
    if (e.key !== 'Enter' || e.shiftKey || e.altKey || e.ctrlKey || e.metaKey) return
    const session = this.session()
    if (!session) return
    const claimed = this.claim(e.target.value, session)
    if (!claimed) return
    stop()
    if (state) this.close()
    this.run(claimed, e.target)
  }

  /** Enter or Tab on an open menu with candidates: runs a whole claimed line, else picks the active row. */
  private choose(
    state: MenuState,
    items: Array<{ group: MenuGroup; item: TriggerCandidate }>,
    key: string,
    target: HTMLTextAreaElement,
  ): void {
    // Enter on a line that is already a whole candidate (`/export` typed out) and that a
    // source claims runs it at once: one Enter, not a pick and then a second Enter.
    const line = target.value.trim()
    const session = this.session()
    if (key === 'Enter' && session && items.some(({ item }) => (item.insert ?? item.label) === line)) {
      const handler = this.claim(target.value, session)
      if (handler) {
        this.close()
        this.run(handler, target)
        return
      }
    }
    const chosen = items[Math.min(state.active, items.length - 1)]
    void this.pick(chosen.group, chosen.item)
  }

  /** The first source that claims Enter on `text`, with its handler. */
  private claim(
    text: string,
    session: TriggerSession,
  ): { source: TriggerSource; handler: (input: ComposerInput) => void | Promise<void> } | undefined {
    for (const source of this.sources) {
      const handler = source.matchEnter?.(text, session)
      if (handler) return { source, handler }
    }
    return undefined
  }

  private run(
    claimed: { source: TriggerSource; handler: (input: ComposerInput) => void | Promise<void> },
    target: HTMLTextAreaElement,
  ): void {
    void Promise.resolve(claimed.handler(composerInput(target))).catch((error: unknown) =>
      console.warn(`${claimed.source.id}: ${String((error as Error)?.message ?? error)}`),
    )
  }
}

export default InputTriggers
