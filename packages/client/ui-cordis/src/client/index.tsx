// @dsh/ui-cordis/client: the model-written plugins the host runner holds. A Plugins section in the
// side panel lists the definitions of the open session (the runner is one per host; the panel asks
// `cordis.definitions` for the session it shows) with their state,
// description, handlers and log, its code on demand, and Run (the approval is asked in the
// defining session) and Retract. The `cordis_define` tool card shows, read-only, what the call
// defined: name, description and the exact code. A session's list is fetched when its panel first
// renders, on each `cordis/changed` host event and after a reconnect.
import type { Context } from 'cordis'
import { useState } from 'react'
import {
  installStyles,
  type PropsOfSlot,
  type SessionSlotProps,
  Slot,
  Store,
  useStore,
  useT,
} from '@dsh/client-runtime'
import { CORDIS_CHANGED, cordisDefinitions, cordisRetract, cordisRun, type WireDefinition } from '../contract.ts'

export const NAMESPACE = 'cordis'
export const name = '@dsh/ui-cordis'
export const inject = ['slots', 'locale', 'remote', 'connection']

const en = {
  title: 'Model-written plugins',
  code: 'Code',
  hideCode: 'Hide code',
  run: 'Run',
  retract: 'Retract',
  handlers: 'Handlers: {list}',
  'state.defined': 'not running',
  'state.running': 'running',
  'state.failed': 'failed',
  defines: 'Defines the plugin {name}',
  'browser.waiting': 'browser half: waiting for a page',
  'browser.running': 'browser half: running in a page',
  'browser.failed': 'browser half: failed',
  browserCode: 'Browser half',
}
const zh: Record<keyof typeof en, string> = {
  title: '模型编写的插件',
  code: '代码',
  hideCode: '隐藏代码',
  run: '运行',
  retract: '撤下',
  handlers: '处理器: {list}',
  'state.defined': '未运行',
  'state.running': '运行中',
  'state.failed': '失败',
  defines: '定义插件 {name}',
  'browser.waiting': '浏览器部分：等待页面',
  'browser.running': '浏览器部分：在页面中运行',
  'browser.failed': '浏览器部分：失败',
  browserCode: '浏览器部分',
}

const CSS = `
.dsh-cordis ul { list-style: none; margin: 0; padding: 0; }
.dsh-cordis li { border-top: 1px solid var(--border, #eee); padding: 6px 0; font-size: 13px; }
.dsh-cordis .meta { color: var(--fg-muted, #666); font-size: 12px; margin-left: 6px; }
.dsh-cordis .actions { display: flex; gap: 6px; margin-top: 4px; }
.dsh-cordis pre, .dsh-cordis-card pre { white-space: pre-wrap; max-height: 30vh; overflow: auto; font-size: 12px; background: var(--bg-muted, #f6f6f6); padding: 6px; margin: 4px 0 0; }
.dsh-cordis-error { color: var(--danger, #c0362c); }
.dsh-cordis-card { border: 1px solid var(--border, #ddd); border-radius: 8px; padding: 6px 10px; margin: 4px 0; font-size: 13px; }
`

/** The slot's props (declared by @dsh/ui-tool); only `node.callId` and `node.input` are read. */
type ToolViewProps = PropsOfSlot<'tool.call.toolview'> & {
  node: { callId: string; input?: Record<string, unknown> }
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-cordis: stylesheet')

  type Listed = { definitions: WireDefinition[]; loaded: boolean; error?: string }
  const bySession = new Map<string, Store<Listed>>()
  const storeOf = (sessionId: string) => {
    let store = bySession.get(sessionId)
    if (!store) {
      bySession.set(sessionId, (store = new Store<Listed>({ definitions: [], loaded: false })))
      void refresh(sessionId)
    }
    return store
  }
  // One fetch per session at a time; a change during it asks for one more.
  const inFlight = new Map<string, { again: boolean; done: Promise<void> }>()
  const refresh = (sessionId: string): Promise<void> => {
    const running = inFlight.get(sessionId)
    if (running) {
      running.again = true
      return running.done
    }
    const flight = { again: false, done: Promise.resolve() }
    flight.done = (async () => {
      do {
        flight.again = false
        const store = bySession.get(sessionId)
        try {
          const { definitions } = await ctx.remote.call(cordisDefinitions, { sessionId })
          store?.set({ definitions, loaded: true })
        } catch (error) {
          if (store) store.set({ ...store.get(), error: (error as Error).message })
        }
      } while (flight.again)
    })().finally(() => inFlight.delete(sessionId))
    inFlight.set(sessionId, flight)
    return flight.done
  }
  ctx.effect(
    () =>
      ctx.connection.onHost((event) => {
        if (event.type === CORDIS_CHANGED || event.type === 'connection/reset')
          for (const id of bySession.keys()) void refresh(id)
      }),
    'ui-cordis: host events',
  )

  function Item({ d, sessionId }: { d: WireDefinition; sessionId: string }) {
    const t = useT(NAMESPACE)
    const [shown, setShown] = useState(false)
    const [busy, setBusy] = useState(false)
    const [error, setError] = useState<string | undefined>(undefined)
    const act = (run: () => Promise<unknown>) => {
      setBusy(true)
      setError(undefined)
      run()
        .catch((e: Error) => setError(e.message))
        .finally(() => {
          setBusy(false)
          void refresh(sessionId)
        })
    }
    return (
      <li data-cordis-definition={d.name} data-cordis-state={d.state}>
        <strong>{d.name}</strong>
        <span className="meta">{t(`state.${d.state}`)}</span>
        <div>{d.description}</div>
        {d.handlers.length > 0 ? <div className="meta">{t('handlers', { list: d.handlers.join(', ') })}</div> : null}
        {d.browserState ? (
          <div className="meta" data-cordis-browser={d.browserState}>
            {t(`browser.${d.browserState}`)}
          </div>
        ) : null}
        {d.browserError ? <div className="dsh-cordis-error">{d.browserError}</div> : null}
        {d.error ? <div className="dsh-cordis-error">{d.error}</div> : null}
        {d.log.length > 0 ? <pre data-cordis-log={d.name}>{d.log.join('\n')}</pre> : null}
        <div className="actions">
          <button type="button" data-cordis-code={d.name} onClick={() => setShown(!shown)}>
            {shown ? t('hideCode') : t('code')}
          </button>
          {d.state !== 'running' ? (
            <button
              type="button"
              data-cordis-run={d.name}
              disabled={busy}
              onClick={() => act(() => ctx.remote.call(cordisRun, { sessionId, name: d.name }))}
            >
              {t('run')}
            </button>
          ) : null}
          <button
            type="button"
            data-cordis-retract={d.name}
            disabled={busy}
            onClick={() => act(() => ctx.remote.call(cordisRetract, { sessionId, name: d.name }))}
          >
            {t('retract')}
          </button>
        </div>
        {error ? (
          <p className="dsh-cordis-error" role="alert">
            {error}
          </p>
        ) : null}
        {shown ? <pre data-cordis-source={d.name}>{d.code}</pre> : null}
        {shown && d.browser ? (
          <>
            <div className="meta">{t('browserCode')}</div>
            <pre data-cordis-browser-source={d.name}>{d.browser}</pre>
          </>
        ) : null}
      </li>
    )
  }

  function Section({ sessionId }: SessionSlotProps) {
    const t = useT(NAMESPACE)
    const { definitions, error } = useStore(storeOf(sessionId))
    if (definitions.length === 0 && !error) return null
    return (
      <section className="dsh-cordis" aria-label={t('title')} data-cordis-panel="true">
        <h3>{t('title')}</h3>
        {error ? <p className="dsh-cordis-error">{error}</p> : null}
        <ul>
          {definitions.map((d) => (
            <Item key={d.name} d={d} sessionId={sessionId} />
          ))}
        </ul>
      </section>
    )
  }

  /** `cordis_define`: what the call defined, read-only, above the generic card. */
  function DefineCard(props: ToolViewProps) {
    const t = useT(NAMESPACE)
    const input = props.node.input ?? {}
    const pluginName = typeof input.name === 'string' ? input.name : ''
    return (
      <div className="dsh-cordis-card" data-cordis-card={pluginName || props.node.callId}>
        <strong>{t('defines', { name: pluginName })}</strong>
        {typeof input.description === 'string' ? <div>{input.description}</div> : null}
        {typeof input.code === 'string' ? <pre data-cordis-card-code="true">{input.code}</pre> : null}
        {typeof input.browser === 'string' ? <pre data-cordis-card-browser="true">{input.browser}</pre> : null}
        <Slot name="tool.call.toolview" single props={props} />
      </div>
    )
  }

  ctx.slots.register('panel.side', { id: 'ui-cordis', order: 30, component: Section })
  ctx.slots.register('tool.call.toolview', { id: 'ui-cordis', key: 'cordis_define', order: 50, component: DefineCard })
}

export default { name, inject, apply }
