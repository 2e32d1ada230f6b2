// The small form a picked MCP resource template opens above the composer: one labelled field per
// variable of its URI template, Enter inserts, Esc (or Cancel) goes back to the composer. Only a
// template whose every variable has a value becomes `@server:<filled uri>` (and a picked
// reference); a blank one is refused with a message naming it, and the focus goes to that field.
import { type ReactElement, useId, useRef, useState } from 'react'
import { Store, useStore, useT } from '@dsh/client-runtime'
import type { ComposerInput, TriggerMatch } from '@dsh/ui-input-trigger/shared'
import { expandTemplate, firstEmptyVariable, templateVariables } from '@dsh/mcp-client/contract'

export interface Filling {
  sessionId: string
  server: string
  /** The URI template, `{variables}` and all. */
  template: string
  name: string
  input: ComposerInput
  match: TriggerMatch
}

export const FORM_CSS = `
.dsh-template-form { position: fixed; z-index: 31; background: var(--bg, #fff); color: var(--fg, #111); border: 1px solid var(--border, #ddd);
  border-radius: 8px; box-shadow: 0 6px 24px rgb(0 0 0 / .18); font-size: 13px; padding: 8px 10px; display: grid; gap: 6px; }
.dsh-template-form h4 { margin: 0; font-size: 12px; font-weight: 600; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.dsh-template-form label { display: grid; grid-template-columns: minmax(80px, max-content) 1fr; gap: 8px; align-items: center; }
.dsh-template-form label span { font-family: ui-monospace, monospace; }
.dsh-template-form input[aria-invalid="true"] { border-color: var(--danger, #c0362c); }
.dsh-template-form [role="alert"] { margin: 0; color: var(--danger, #c0362c); }
.dsh-template-form .actions { display: flex; gap: 8px; justify-content: flex-end; }
`

/** The open form's state and the component that draws it (an `app.overlay`). */
export function templateForm(
  namespace: string,
  done: (filling: Filling, uri: string) => void,
): { open: Store<Filling | undefined>; Form: () => ReactElement | null } {
  const open = new Store<Filling | undefined>(undefined)
  // Each opening is a fresh form (its own values and error): keyed by the opening.
  const openings = new WeakMap<Filling, number>()
  let count = 0
  function Form() {
    const state = useStore(open)
    if (!state) return null
    if (!openings.has(state)) openings.set(state, ++count)
    return <Fields key={openings.get(state)} state={state} />
  }
  function Fields({ state }: { state: Filling }) {
    const tr = useT(namespace)
    const [values, setValues] = useState<Record<string, string>>({})
    const [empty, setEmpty] = useState<string | undefined>()
    const fields = useRef(new Map<string, HTMLInputElement>())
    const id = useId()
    const variables = templateVariables(state.template)
    const rect = state.input.element.getBoundingClientRect()
    const cancel = () => {
      open.set(undefined)
      state.input.element.focus()
    }
    const submit = (e: { preventDefault(): void }) => {
      e.preventDefault()
      const missing = firstEmptyVariable(state.template, values)
      if (missing !== undefined) {
        setEmpty(missing)
        fields.current.get(missing)?.focus()
        return
      }
      const trimmed = Object.fromEntries(variables.map((name) => [name, values[name].trim()]))
      open.set(undefined)
      done(state, expandTemplate(state.template, trimmed))
    }
    return (
      <form
        className="dsh-template-form"
        role="dialog"
        aria-labelledby={`${id}-title`}
        data-template-form={`${state.server}:${state.template}`}
        style={{ left: rect.left, width: Math.min(rect.width, 520), bottom: window.innerHeight - rect.top + 4 }}
        onSubmit={submit}
        onKeyDown={(e) => {
          if (e.key !== 'Escape') return
          e.preventDefault()
          e.stopPropagation()
          cancel()
        }}
      >
        <h4 id={`${id}-title`}>{tr('templateTitle', { template: `@${state.server}:${state.template}` })}</h4>
        {variables.map((name, i) => (
          <label key={name}>
            <span>{name}</span>
            <input
              ref={(el) => {
                if (el) fields.current.set(name, el)
                else fields.current.delete(name)
              }}
              name={name}
              // biome-ignore lint/a11y/noAutofocus: the form opens on the user's pick from the keyboard; its first field takes the focus the menu had
              autoFocus={i === 0}
              autoComplete="off"
              aria-invalid={empty === name}
              aria-describedby={empty === name ? `${id}-error` : undefined}
              value={values[name] ?? ''}
              onChange={(e) => {
                const value = e.target.value
                setValues((prev) => ({ ...prev, [name]: value }))
                if (empty === name && value.trim()) setEmpty(undefined)
              }}
            />
          </label>
        ))}
        {empty !== undefined ? (
          <p role="alert" id={`${id}-error`}>
            {tr('templateEmpty', { name: empty })}
          </p>
        ) : null}
        <div className="actions">
          <button type="button" onClick={cancel}>
            {tr('templateCancel')}
          </button>
          <button type="submit">{tr('templateInsert')}</button>
        </div>
      </form>
    )
  }
  return { open, Form }
}
