// General: theme and language (this browser), the default model and default permission mode of
// new sessions (the host's `model` and `permissions` settings sections).
import { useEffect, useState } from 'react'
import Schema from 'schemastery'
import { LANGS, useCtx, useStore, type Lang, type ThemePreference } from '@dsh/client-runtime'
import { settingsDescribe, settingsUpdate, type WireSection } from '@dsh/api-settings/contract'
import { failure, useSettingsT } from './names.ts'
import { useLoaded } from './loaded.tsx'

interface SchemaNode {
  type?: string
  dict?: Record<string, SchemaNode>
  list?: SchemaNode[]
  value?: unknown
}

/** The const choices of a union field of an object schema sent as JSON. */
export function choicesOf(schemaJson: unknown, field: string): string[] {
  const schema = Schema(schemaJson as never) as unknown as SchemaNode
  const node = schema.dict?.[field]
  return (node?.list ?? []).filter((n) => n.type === 'const').map((n) => String(n.value))
}

export default function GeneralPage() {
  const ctx = useCtx()
  const t = useSettingsT()
  const lang = useStore(ctx.locale.current)
  const theme = useStore(ctx.theme.preference)
  const listing = useLoaded(
    (host) => host.remote.call(settingsDescribe, {}).then((r) => r.sections),
    'settings-sections',
  )
  const section = (ns: string) => listing.value?.find((s) => s.namespace === ns)
  const onSaved = (next: WireSection) =>
    listing.update((list) => list.map((s) => (s.namespace === next.namespace ? next : s)))
  return (
    <div data-testid="settings-general">
      <h3>
        {t('theme')} · {t('language')}
      </h3>
      <div className="dsh-settings-row">
        <label>
          {t('theme')}
          <select
            value={theme}
            onChange={(e) => ctx.theme.set(e.target.value as ThemePreference)}
            data-testid="settings-theme"
          >
            <option value="system">{t('themeSystem')}</option>
            <option value="light">{t('themeLight')}</option>
            <option value="dark">{t('themeDark')}</option>
          </select>
        </label>
        <label>
          {t('language')}
          <select value={lang} onChange={(e) => ctx.locale.set(e.target.value as Lang)} data-testid="settings-language">
            {LANGS.map((l) => (
              <option key={l} value={l}>
                {l === 'en' ? 'English' : '中文'}
              </option>
            ))}
          </select>
        </label>
      </div>
      <p className="dsh-settings-muted">{t('themeNote')}</p>
      {listing.placeholder}
      {section('model') ? <DefaultModel section={section('model')!} onSaved={onSaved} /> : null}
      {section('permissions') ? <DefaultPermission section={section('permissions')!} onSaved={onSaved} /> : null}
    </div>
  )
}

function useSave(onSaved: (s: WireSection) => void) {
  const ctx = useCtx()
  const t = useSettingsT()
  const [status, setStatus] = useState<{ ok: boolean; text: string }>()
  const save = async (namespace: string, patch: Record<string, unknown>) => {
    setStatus({ ok: true, text: t('saving') })
    try {
      onSaved(await ctx.remote.call(settingsUpdate, { namespace, patch }))
      setStatus({ ok: true, text: t('saved') })
    } catch (e) {
      setStatus({ ok: false, text: failure(e, t) })
    }
  }
  const view = status ? (
    <p className={status.ok ? 'dsh-settings-ok' : 'dsh-settings-error'} role="status">
      {status.text}
    </p>
  ) : null
  return { save, view }
}

function DefaultModel({ section, onSaved }: { section: WireSection; onSaved: (s: WireSection) => void }) {
  const ctx = useCtx()
  const t = useSettingsT()
  const value = (section.value ?? {}) as { provider?: string; model?: string }
  const [fallback, setFallback] = useState<{ provider: string; model: string }>()
  const [providers, setProviders] = useState<string[]>([])
  const [provider, setProvider] = useState(value.provider ?? '')
  const [models, setModels] = useState<string[]>([])
  const [model, setModel] = useState(value.model ?? '')
  const { save, view } = useSave(onSaved)
  // biome-ignore lint/correctness/useExhaustiveDependencies: fetched once per ctx; value only decides whether the host's default fills an empty field on first load, and a later save must not refetch or overwrite the user's pick
  useEffect(() => {
    void ctx.remote
      .call('llm.providers', {})
      .then((r) => {
        setProviders(r.providers)
        if (r.default) setFallback(r.default)
        if (!value.provider && r.default) setProvider(r.default.provider)
        if (!value.model && r.default) setModel(r.default.model)
      })
      .catch(() => {})
  }, [ctx])
  useEffect(() => {
    if (!provider) return
    let live = true
    ctx.remote.call('llm.models', { provider }).then(
      (r) => live && setModels(r.models.map((m) => m.id)),
      () => live && setModels([]),
    )
    return () => {
      live = false
    }
  }, [ctx, provider])
  const list = model && !models.includes(model) ? [model, ...models] : models
  return (
    <>
      <h3>{t('defaultModel')}</h3>
      <p className="dsh-settings-muted">
        {t('defaultModelNote')}
        {fallback && !value.provider ? ' ' + t('unset', { value: `${fallback.provider}/${fallback.model}` }) : ''}
      </p>
      <div className="dsh-settings-row">
        <select
          aria-label="provider"
          value={provider}
          onChange={(e) => {
            setProvider(e.target.value)
            setModel('')
          }}
          data-testid="default-provider"
        >
          {(providers.includes(provider) || !provider ? providers : [provider, ...providers]).map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
        <select aria-label="model" value={model} onChange={(e) => setModel(e.target.value)} data-testid="default-model">
          <option value="" disabled>
            —
          </option>
          {list.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
        <button
          type="button"
          className="primary"
          disabled={!provider || !model}
          onClick={() => void save('model', { provider, model })}
          data-testid="save-default-model"
        >
          {t('save')}
        </button>
      </div>
      {view}
    </>
  )
}

function DefaultPermission({ section, onSaved }: { section: WireSection; onSaved: (s: WireSection) => void }) {
  const t = useSettingsT()
  const choices = choicesOf(section.schema, 'default')
  const current = (section.value as { default?: string } | undefined)?.default ?? ''
  const [mode, setMode] = useState(current)
  const { save, view } = useSave(onSaved)
  return (
    <>
      <h3>{t('defaultPermission')}</h3>
      <p className="dsh-settings-muted">{t('defaultPermissionNote')}</p>
      <div className="dsh-settings-row">
        <select
          aria-label={t('defaultPermission')}
          value={mode}
          onChange={(e) => setMode(e.target.value)}
          data-testid="default-permission"
        >
          <option value="">—</option>
          {choices.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
        <button
          type="button"
          className="primary"
          disabled={!mode || mode === current}
          onClick={() => void save('permissions', { default: mode })}
        >
          {t('save')}
        </button>
      </div>
      {view}
    </>
  )
}
