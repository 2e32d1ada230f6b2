// The host's plugin rows for the Tools and Advanced (plugins) pages: one listing call, its
// loading and failure lines, and a way to replace one row after a change. Both pages show the
// same two lines while the list is not there, so they come from here.
import { type ReactElement, useCallback, useEffect, useState } from 'react'
import { useCtx } from '@dsh/client-runtime'
import { pluginsList, type PluginRow } from '@dsh/plugin-inventory/contract'
import { failure, useSettingsT } from './names.ts'

export type PluginRows =
  /** Still listing, or the listing failed: `placeholder` says which (a status or an alert line). */
  | { rows: undefined; placeholder: ReactElement }
  | { rows: PluginRow[]; placeholder: undefined; update: (row: PluginRow) => void }

/** Lists the plugin rows once per mount; a result that lands after the page closed is dropped. */
export function usePluginRows(): PluginRows {
  const ctx = useCtx()
  const t = useSettingsT()
  const [rows, setRows] = useState<PluginRow[]>()
  const [error, setError] = useState<string>()
  useEffect(() => {
    let live = true
    ctx.remote.call(pluginsList, {}).then(
      (r) => live && setRows(r.plugins),
      (e) => live && setError(failure(e, t)),
    )
    return () => void (live = false)
  }, [ctx, t])
  const update = useCallback((row: PluginRow) => setRows((list) => list?.map((x) => (x.id === row.id ? row : x))), [])
  if (rows) return { rows, placeholder: undefined, update }
  return {
    rows: undefined,
    placeholder: error ? (
      <p className="dsh-settings-error" role="alert" data-testid="plugin-rows-error">
        {error}
      </p>
    ) : (
      <p className="dsh-settings-muted" role="status" aria-busy="true">
        {t('loading')}
      </p>
    ),
  }
}
