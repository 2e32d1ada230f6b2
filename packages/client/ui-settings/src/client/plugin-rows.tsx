// The host's plugin rows for the Tools and Advanced (plugins) pages: one listing call through the
// pages' shared loader (its loading and failure lines), and a way to replace one row after a change.
import { pluginsList, type PluginRow } from '@dsh/plugin-inventory/contract'
import { type Loaded, useLoaded } from './loaded.tsx'

/** Lists the plugin rows once per page; a result that lands after the page closed is dropped. */
export function usePluginRows(): Loaded<PluginRow[]> {
  return useLoaded((ctx) => ctx.remote.call(pluginsList, {}).then((r) => r.plugins), 'plugin-rows')
}

/** The change that puts a row the host answered with in place of the listed one of the same id. */
export const replaceRow = (row: PluginRow) => (list: PluginRow[]) => list.map((x) => (x.id === row.id ? row : x))
