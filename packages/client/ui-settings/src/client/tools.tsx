// Tools and integrations: the plugin rows a user thinks of as what the agent can do (the model's
// tools) and what it connects to (MCP servers, skills, hooks, web search and fetch, other agents),
// each with its switch, state and config, without the internal rows of "Advanced: plugins".
import type { PluginRow } from '@dsh/plugin-inventory/contract'
import { useSettingsT } from './names.ts'
import { replaceRow, usePluginRows } from './plugin-rows.tsx'
import { PluginItem } from './plugins.tsx'

/** Which group a row belongs to, by its package; undefined: an internal row (Advanced only). */
export function toolGroup(row: PluginRow): 'tools' | 'integrations' | undefined {
  const pkg = row.package ?? ''
  if (/^@dsh\/tool-/.test(pkg)) return 'tools'
  if (/^@dsh\/(mcp-client|skill|hooks-|web-search-|web-fetch-|subagent-)/.test(pkg)) return 'integrations'
  return undefined
}

export default function ToolsPage() {
  const t = useSettingsT()
  const listing = usePluginRows()
  if (listing.placeholder) return listing.placeholder
  const rows = listing.value
  const changed = (row: PluginRow) => listing.update(replaceRow(row))
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
