// Tools and integrations: the plugin rows a user thinks of as what the agent can do (the model's
// tools) and what it connects to (MCP servers, skills, hooks, web search and fetch, other agents),
// each with its switch, state and config, without the internal rows of "Advanced: plugins".
import { useCallback, useEffect, useState } from 'react'
import { useCtx } from '@dsh/client-runtime'
import { pluginsList, type PluginRow } from '@dsh/plugin-inventory/contract'
import { failure, useSettingsT } from './names.ts'
import { PluginItem } from './plugins.tsx'

/** Which group a row belongs to, by its package; undefined: an internal row (Advanced only). */
export function toolGroup(row: PluginRow): 'tools' | 'integrations' | undefined {
  const pkg = row.package ?? ''
  if (/^@dsh\/tool-/.test(pkg)) return 'tools'
  if (/^@dsh\/(mcp-client|skill|hooks-|web-search-|web-fetch-|subagent-)/.test(pkg)) return 'integrations'
  return undefined
}

export default function ToolsPage() {
  const ctx = useCtx()
  const t = useSettingsT()
  const [rows, setRows] = useState<PluginRow[]>()
  const [error, setError] = useState<string>()
  const reload = useCallback(
    () =>
      ctx.remote.call(pluginsList, {}).then(
        (r) => setRows(r.plugins),
        (e) => setError(failure(e, t)),
      ),
    [ctx, t],
  )
  useEffect(() => void reload(), [reload])
  if (error)
    return (
      <p className="dsh-settings-error" role="alert">
        {error}
      </p>
    )
  if (!rows)
    return (
      <p className="dsh-settings-muted" role="status">
        {t('loading')}
      </p>
    )
  const changed = (r: PluginRow) => setRows((list) => list?.map((x) => (x.id === r.id ? r : x)))
  return (
    <div data-testid="settings-tools">
      <p className="dsh-settings-muted">{t('tools.intro')}</p>
      {(['tools', 'integrations'] as const).map((group) => {
        const listed = rows.filter((r) => toolGroup(r) === group)
        return (
          <section key={group} data-tool-group={group} aria-labelledby={`dsh-tools-${group}`}>
            <h3 id={`dsh-tools-${group}`}>{t(`tools.${group}`)}</h3>
            {listed.length ? (
              <ul className="dsh-settings-list">
                {listed.map((row) => (
                  <PluginItem key={row.id} row={row} onChanged={changed} />
                ))}
              </ul>
            ) : (
              <p className="dsh-settings-muted">{t('tools.none')}</p>
            )}
          </section>
        )
      })}
    </div>
  )
}
