// @dsh/ui-fences/client: renders `dsh-ui` fences inside assistant replies (the `conversation.fence`
// slot, key `dsh-ui`) as components built from plain elements: a table, a bar chart, a panel or a
// form. Nothing from the fence becomes HTML or a link; a fence still streaming shows a placeholder,
// a malformed one its error above the code. Submitting a form sends the answers as the user's
// next message in the open session.
import type { Context } from 'cordis'
import { useState } from 'react'
import { installStyles, useCtx, useStore, useT } from '@dsh/client-runtime'
import { FENCE_LANGUAGE, type Field, formMessage, parseSpec, type Spec } from '../spec.ts'

export const NAMESPACE = 'fences'
export const name = '@dsh/ui-fences'
export const inject = ['slots', 'locale', 'remote', 'router']

const en = {
  loading: 'Preparing a component…',
  invalid: 'This dsh-ui block could not be shown: {error}',
  sent: 'Sent.',
}
const zh: Record<keyof typeof en, string> = {
  loading: '正在准备组件…',
  invalid: '无法显示此 dsh-ui 块: {error}',
  sent: '已发送。',
}

const CSS = `
.dsh-ui { border: 1px solid var(--border, #ddd); border-radius: 8px; padding: 8px 12px; margin: 8px 0; font-size: 13px; }
.dsh-ui h4 { margin: 0 0 6px; font-size: 13px; }
.dsh-ui table { border-collapse: collapse; }
.dsh-ui th, .dsh-ui td { border: 1px solid var(--border, #ddd); padding: 2px 8px; text-align: left; }
.dsh-ui-bar { display: grid; grid-template-columns: minmax(60px, max-content) 1fr max-content; gap: 6px; align-items: center; margin: 2px 0; }
.dsh-ui-bar > span:nth-child(2) { height: 12px; background: var(--accent, #3b6fd8); border-radius: 3px; }
.dsh-ui[data-tone="warning"] { border-color: #d9a400; } .dsh-ui[data-tone="success"] { border-color: #2f9e55; }
.dsh-ui form label { display: block; margin: 4px 0; }
.dsh-ui-error { color: var(--danger, #c0362c); font-size: 12px; }
`

/** The props `@dsh/ui-conversation` gives a `conversation.fence` entry (keyed by the fence's language). */
export interface FenceSlotProps {
  lang: string
  code: string
  /** False while the fence is still streaming. */
  complete: boolean
}

declare module '@dsh/client-runtime' {
  interface SlotProps {
    'conversation.fence': FenceSlotProps
  }
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-fences: stylesheet')

  function Form({ spec }: { spec: Extract<Spec, { type: 'form' }> }) {
    const c = useCtx()
    const t = useT(NAMESPACE)
    const route = useStore(c.router.route)
    const [values, setValues] = useState<Record<string, string | boolean>>(() =>
      Object.fromEntries(spec.fields.map((f) => [f.name, f.kind === 'checkbox' ? false : (f.options?.[0] ?? '')])),
    )
    const [state, setState] = useState<{ sent?: boolean; error?: string }>({})
    const field = (f: Field) => {
      const set = (v: string | boolean) => setValues({ ...values, [f.name]: v })
      if (f.kind === 'checkbox')
        return (
          <input
            type="checkbox"
            name={f.name}
            checked={values[f.name] === true}
            onChange={(e) => set(e.target.checked)}
          />
        )
      if (f.kind === 'select')
        return (
          <select name={f.name} value={String(values[f.name])} onChange={(e) => set(e.target.value)}>
            {f.options?.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        )
      return <input type="text" name={f.name} value={String(values[f.name])} onChange={(e) => set(e.target.value)} />
    }
    return (
      <form
        onSubmit={(e) => {
          e.preventDefault()
          const sessionId = route.sessionId
          if (!sessionId || state.sent) return
          ctx.remote.call('sessions.prompt', { sessionId, text: formMessage(spec, values) }).then(
            () => setState({ sent: true }),
            (error: Error) => setState({ error: error.message }),
          )
        }}
      >
        {spec.fields.map((f) => (
          // biome-ignore lint/a11y/noLabelWithoutControl: field() renders the control inside this label
          <label key={f.name}>
            {f.label} {field(f)}
          </label>
        ))}
        <button type="submit" disabled={state.sent}>
          {spec.submit}
        </button>
        {state.sent ? <span role="status"> {t('sent')}</span> : null}
        {state.error ? <p className="dsh-ui-error">{state.error}</p> : null}
      </form>
    )
  }

  function Component({ spec }: { spec: Spec }) {
    const title = spec.title ? <h4>{spec.title}</h4> : null
    switch (spec.type) {
      case 'panel':
        return (
          <section className="dsh-ui" data-dsh-ui="panel" data-tone={spec.tone}>
            {title}
            <p>{spec.body}</p>
          </section>
        )
      case 'table':
        return (
          <section className="dsh-ui" data-dsh-ui="table">
            {title}
            <table>
              <thead>
                <tr>
                  {spec.columns.map((c, i) => (
                    // biome-ignore lint/suspicious/noArrayIndexKey: columns are positional and may repeat
                    <th key={i}>{c}</th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {spec.rows.map((row, r) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: rows are positional
                  <tr key={r}>
                    {row.map((v, i) => (
                      // biome-ignore lint/suspicious/noArrayIndexKey: cells are positional
                      <td key={i}>{v}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        )
      case 'chart': {
        const max = Math.max(1e-9, ...spec.data.map((d) => Math.abs(d.value)))
        return (
          <section className="dsh-ui" data-dsh-ui="chart" role="img" aria-label={spec.title ?? 'chart'}>
            {title}
            {spec.data.map((d, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: bars are positional and labels may repeat
              <div className="dsh-ui-bar" key={i} data-bar={d.label}>
                <span>{d.label}</span>
                <span style={{ width: `${(Math.abs(d.value) / max) * 100}%` }} />
                <span>{d.value}</span>
              </div>
            ))}
          </section>
        )
      }
      case 'form':
        return (
          <section className="dsh-ui" data-dsh-ui="form">
            {title}
            <Form spec={spec} />
          </section>
        )
    }
  }

  function Fence({ code, complete }: FenceSlotProps) {
    const t = useT(NAMESPACE)
    if (!complete)
      return (
        <p className="dsh-ui" data-dsh-ui="loading">
          {t('loading')}
        </p>
      )
    const spec = parseSpec(code)
    if ('error' in spec)
      return (
        <div data-dsh-ui="invalid">
          <p className="dsh-ui-error">{t('invalid', { error: spec.error })}</p>
          <pre>{code}</pre>
        </div>
      )
    return <Component spec={spec} />
  }

  ctx.slots.register('conversation.fence', { id: 'ui-fences', key: FENCE_LANGUAGE, order: 50, component: Fence })
}

export default { name, inject, apply }
