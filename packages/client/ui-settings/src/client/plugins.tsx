// Plugins: every row of the host's plugin tree (package, state, error), enable/disable, and a
// config form generated from the plugin's schema; changes apply now and go to the patch layer.
import { useMemo, useState } from 'react'
import Schema from 'schemastery'
import { useCtx } from '@dsh/client-runtime'
import type { PluginRow } from '@dsh/plugin-inventory/contract'
import { pluginsConfigure, pluginsDescribe, pluginsSetEnabled, type PluginDetail } from '@dsh/api-plugins/contract'
import { failure, useSettingsT } from './names.ts'
import { check, SchemaForm } from './form.tsx'
import { replaceRow, usePluginRows } from './plugin-rows.tsx'

const BADGE: Record<string, string> = { active: 'ok', failed: 'bad', 'not-loaded': 'bad', disabled: 'warn' }

export default function PluginsPage() {
  const t = useSettingsT()
  const listing = usePluginRows()
  const [filter, setFilter] = useState('')
  const [layer, setLayer] = useState<string>()
  if (listing.placeholder) return listing.placeholder
  const { value: rows, update } = listing
  const needle = filter.trim().toLowerCase()
  const shown = needle
    ? rows.filter((r) => r.id.toLowerCase().includes(needle) || r.package?.toLowerCase().includes(needle))
    : rows
  return (
    <div data-testid="settings-plugins">
      <div className="dsh-settings-row">
        <input
          type="search"
          aria-label={t('filter')}
          placeholder={t('filter')}
          value={filter}
          onChange={(e) => setFilter(e.target.value)}
          data-testid="plugin-filter"
        />
        <span className="dsh-settings-muted">{rows.length}</span>
      </div>
      {layer ? <p className="dsh-settings-muted">{t('writtenTo', { file: layer })}</p> : null}
      <ul className="dsh-settings-list">
        {shown.map((row) => (
          <PluginItem
            key={row.id}
            row={row}
            onChanged={(r, file) => {
              update(replaceRow(r))
              if (file) setLayer(file)
            }}
          />
        ))}
      </ul>
    </div>
  )
}

export function PluginItem({
  row,
  onChanged,
}: {
  row: PluginRow
  onChanged: (row: PluginRow, layer?: string) => void
}) {
  const ctx = useCtx()
  const t = useSettingsT()
  const [detail, setDetail] = useState<PluginDetail>()
  const [open, setOpen] = useState(false)
  const [status, setStatus] = useState<{ ok: boolean; text: string }>()
  const [busy, setBusy] = useState(false)
  const toggle = async (enabled: boolean) => {
    setBusy(true)
    try {
      const next = await ctx.remote.call(pluginsSetEnabled, { id: row.id, enabled })
      setDetail(next)
      onChanged(next.row, next.layer)
      setStatus(undefined)
    } catch (e) {
      setStatus({ ok: false, text: failure(e, t) })
    } finally {
      setBusy(false)
    }
  }
  const expand = async () => {
    if (open) return setOpen(false)
    setOpen(true)
    try {
      setDetail(await ctx.remote.call(pluginsDescribe, { id: row.id }))
    } catch (e) {
      setStatus({ ok: false, text: failure(e, t) })
    }
  }
  return (
    <li className="dsh-settings-item" data-plugin={row.id}>
      <header>
        {row.toggleable === false ? (
          // The host refuses to switch this row (the app cannot run without it): no switch, the reason.
          <span className="dsh-settings-row" style={{ margin: 0 }} data-testid="plugin-locked">
            <strong>{row.id}</strong>
            <span className="dsh-settings-muted">{t('locked', { reason: row.lockedReason ?? '' })}</span>
          </span>
        ) : (
          <label className="dsh-settings-row" style={{ margin: 0 }}>
            <input
              type="checkbox"
              checked={row.enabled}
              disabled={busy || detail?.toggleable === false}
              aria-label={`${t('enabled')}: ${row.id}`}
              onChange={(e) => void toggle(e.target.checked)}
              data-testid="plugin-enabled"
            />
            <strong>{row.id}</strong>
          </label>
        )}
        {row.package ? <code className="dsh-settings-muted">{row.package}</code> : null}
        <span className={'dsh-badge ' + (BADGE[row.state] ?? 'warn')} data-testid="plugin-state">
          {row.state}
        </span>
        {row.parent ? <span className="dsh-settings-muted">↳ {row.parent}</span> : null}
        <button type="button" onClick={() => void expand()} aria-expanded={open} data-testid="plugin-configure">
          {open ? t('hideConfig') : t('configure')}
        </button>
      </header>
      {row.error ? <p className="dsh-settings-error">{t('errorOf', { message: row.error })}</p> : null}
      {open && detail ? (
        <ConfigEditor
          detail={detail}
          onSaved={(d) => {
            setDetail(d)
            onChanged(d.row, d.layer)
          }}
        />
      ) : open ? (
        <p className="dsh-settings-muted">{t('loading')}</p>
      ) : null}
      {status ? (
        <p className={status.ok ? 'dsh-settings-ok' : 'dsh-settings-error'} role="alert">
          {status.text}
        </p>
      ) : null}
    </li>
  )
}

function ConfigEditor({ detail, onSaved }: { detail: PluginDetail; onSaved: (d: PluginDetail) => void }) {
  const ctx = useCtx()
  const t = useSettingsT()
  const schema = useMemo(
    () => (detail.schema !== undefined ? Schema(detail.schema as never) : undefined),
    [detail.schema],
  )
  const [value, setValue] = useState<Record<string, unknown>>(() =>
    detail.config && typeof detail.config === 'object'
      ? (structuredClone(detail.config) as Record<string, unknown>)
      : {},
  )
  const [problem, setProblem] = useState<{ field?: string; text: string; ok?: boolean }>()
  const secretsSet = useMemo(() => new Set(detail.secrets.filter((s) => s.set).map((s) => s.path)), [detail.secrets])
  if (!schema)
    return (
      <p className="dsh-settings-muted" data-testid="plugin-not-editable">
        {t('notEditable', { reason: detail.reason ?? '' })}
      </p>
    )
  const save = async () => {
    // The same schema as the host's, so a bad value is named before anything is sent.
    const verdict = check(schema, value)
    if (verdict) return setProblem({ field: verdict.field, text: `${verdict.field}: ${verdict.message}` })
    try {
      const next = await ctx.remote.call(pluginsConfigure, { id: detail.row.id, config: value })
      setProblem({ ok: true, text: t('configSaved') })
      onSaved(next)
    } catch (e) {
      const err = e as { field?: string }
      setProblem({ ...(err.field ? { field: err.field } : {}), text: failure(e, t) })
    }
  }
  return (
    <form
      className="dsh-settings-form"
      data-testid="plugin-form"
      onSubmit={(e) => {
        e.preventDefault()
        void save()
      }}
    >
      <SchemaForm
        schema={schema}
        value={value}
        onChange={setValue}
        secretsSet={secretsSet}
        invalid={problem?.ok ? undefined : problem?.field}
        t={t}
      />
      {detail.editable ? (
        <button type="submit" className="primary" data-testid="plugin-save">
          {t('save')}
        </button>
      ) : (
        <p className="dsh-settings-muted">{t('notEditable', { reason: detail.reason ?? '' })}</p>
      )}
      {problem ? (
        <p
          className={problem.ok ? 'dsh-settings-ok' : 'dsh-settings-error'}
          role="alert"
          data-testid="plugin-form-status"
        >
          {problem.text}
        </p>
      ) : null}
    </form>
  )
}
