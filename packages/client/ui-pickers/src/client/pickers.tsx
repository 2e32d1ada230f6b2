// Per-session pickers: model (grouped by provider) with reasoning effort, and permission mode.
// Props only: the plugin wires `listProviders`/`listModels` to llm.providers/llm.models and
// `onSelect*` to sessions.setModel / sessions.setPermissionMode.
import { useEffect, useState } from 'react'
import type { ReasoningEffort, WireModel } from '@dsh/web-protocol'
import type { Translate } from './strings.ts'

export const EFFORTS: readonly ReasoningEffort[] = ['off', 'low', 'high', 'max']
export const BUILTIN_MODES: readonly string[] = ['read-only', 'workspace-write', 'danger-full-access']
/** Modes that need an explicit acknowledgement before they are applied. */
export const RISKY_MODES: readonly string[] = ['danger-full-access']

export interface ModelPickerProps {
  t: Translate
  current?: WireModel
  listProviders: () => Promise<{ providers: string[]; default?: WireModel }>
  listModels: (provider: string) => Promise<string[]>
  /** `model` is `provider/model`. */
  onSelect: (model: string, reasoningEffort?: ReasoningEffort) => Promise<unknown> | unknown
}

type Catalog =
  | { state: 'loading' }
  | { state: 'failed'; message: string }
  | { state: 'ready'; groups: Array<{ provider: string; models: string[] }> }

export function ModelPicker({ t, current, listProviders, listModels, onSelect }: ModelPickerProps) {
  const [catalog, setCatalog] = useState<Catalog>({ state: 'loading' })
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  useEffect(() => {
    let live = true
    ;(async () => {
      const { providers } = await listProviders()
      const groups = await Promise.all(
        providers.map(async (provider) => ({
          provider,
          models: await listModels(provider).catch(() => [] as string[]),
        })),
      )
      if (live) setCatalog({ state: 'ready', groups })
    })().catch(
      (e: unknown) => live && setCatalog({ state: 'failed', message: e instanceof Error ? e.message : String(e) }),
    )
    return () => {
      live = false
    }
  }, [listProviders, listModels])

  const apply = async (model: string, effort: ReasoningEffort | undefined) => {
    setBusy(true)
    setError(undefined)
    try {
      await onSelect(model, effort)
    } catch (e) {
      setError(t('failed', { message: e instanceof Error ? e.message : String(e) }))
    } finally {
      setBusy(false)
    }
  }

  const value = current ? `${current.provider}/${current.model}` : ''
  const groups = catalog.state === 'ready' ? catalog.groups : []
  const listed = groups.some((g) => g.models.some((m) => `${g.provider}/${m}` === value))
  return (
    <span className="dsh-picker dsh-model-picker">
      <label>
        <span className="dsh-sr-only">{t('model.label')}</span>
        <select
          aria-label={t('model.label')}
          value={value}
          disabled={busy || catalog.state !== 'ready'}
          onChange={(e) => void apply(e.target.value, current?.reasoningEffort)}
        >
          {catalog.state === 'loading' ? <option value={value}>{t('model.loading')}</option> : null}
          {catalog.state === 'failed' ? (
            <option value={value}>{t('model.failed', { message: catalog.message })}</option>
          ) : null}
          {current && !listed && catalog.state === 'ready' ? <option value={value}>{current.model}</option> : null}
          {groups.map((g) => (
            <optgroup key={g.provider} label={g.provider}>
              {g.models.length === 0 ? (
                <option disabled value="">
                  {t('model.none', { provider: g.provider })}
                </option>
              ) : null}
              {g.models.map((m) => (
                <option key={m} value={`${g.provider}/${m}`}>
                  {m}
                </option>
              ))}
            </optgroup>
          ))}
        </select>
      </label>
      <label>
        <span className="dsh-sr-only">{t('effort.label')}</span>
        <select
          aria-label={t('effort.label')}
          value={current?.reasoningEffort ?? ''}
          disabled={busy || !current}
          onChange={(e) => current && void apply(value, (e.target.value || undefined) as ReasoningEffort | undefined)}
        >
          <option value="">
            {t('effort.label')}: {t('effort.unset')}
          </option>
          {EFFORTS.map((effort) => (
            <option key={effort} value={effort}>
              {t('effort.label')}: {t(`effort.${effort}`)}
            </option>
          ))}
        </select>
      </label>
      {error ? (
        <span className="dsh-picker-error" role="alert">
          {error}
        </span>
      ) : null}
    </span>
  )
}

export interface PermissionPickerProps {
  t: Translate
  /** The session's mode; undefined: the deployment default (shown as `fallback`). */
  current?: string
  fallback?: string
  modes?: readonly string[]
  onSelect: (mode: string) => Promise<unknown> | unknown
}

export function PermissionPicker({
  t,
  current,
  fallback = 'workspace-write',
  modes = BUILTIN_MODES,
  onSelect,
}: PermissionPickerProps) {
  const [confirming, setConfirming] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const value = current ?? fallback
  const all = modes.includes(value) ? modes : [...modes, value]
  const label = (mode: string) => (BUILTIN_MODES.includes(mode) ? t(`mode.${mode}`) : mode)

  const apply = async (mode: string) => {
    setConfirming(undefined)
    setBusy(true)
    setError(undefined)
    try {
      await onSelect(mode)
    } catch (e) {
      setError(t('failed', { message: e instanceof Error ? e.message : String(e) }))
    } finally {
      setBusy(false)
    }
  }

  return (
    <span className="dsh-picker dsh-mode-picker">
      <label>
        <span className="dsh-sr-only">{t('mode.label')}</span>
        <select
          aria-label={t('mode.label')}
          value={value}
          disabled={busy}
          title={BUILTIN_MODES.includes(value) ? t(`mode.${value}.hint`) : undefined}
          onChange={(e) => {
            const mode = e.target.value
            if (mode === value) return
            if (RISKY_MODES.includes(mode)) setConfirming(mode)
            else void apply(mode)
          }}
        >
          {all.map((mode) => (
            <option key={mode} value={mode}>
              {t('mode.label')}: {label(mode)}
            </option>
          ))}
        </select>
      </label>
      {confirming ? (
        <div className="dsh-confirm" role="alertdialog" aria-labelledby="dsh-mode-confirm-title">
          <strong id="dsh-mode-confirm-title">{t('mode.confirmTitle')}</strong>
          <p>{t('mode.confirmBody')}</p>
          <div className="dsh-takeover-buttons">
            {/* biome-ignore lint/a11y/noAutofocus: an alertdialog the user's mode choice opened moves focus to its safe choice (cancel), as the ARIA dialog pattern asks */}
            <button type="button" className="dsh-button" autoFocus onClick={() => setConfirming(undefined)}>
              {t('mode.cancel')}
            </button>
            <button type="button" className="dsh-button dsh-button-danger" onClick={() => void apply(confirming)}>
              {t('mode.confirm')}
            </button>
          </div>
        </div>
      ) : null}
      {error ? (
        <span className="dsh-picker-error" role="alert">
          {error}
        </span>
      ) : null}
    </span>
  )
}
