// Browser-safe contract of the inventory's one method (no node imports); a client imports it
// from `@dsh/plugin-inventory/contract`.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export type PluginState =
  | 'pending'
  | 'loading'
  | 'active'
  | 'failed'
  | 'disposed'
  | 'unloading'
  | 'disabled'
  | 'not-loaded'

export interface PluginRow {
  /** The Loader entry id (the row id of the profile), e.g. `llm-deepseek` or `group:child`. */
  id: string
  /** The row's module as the Loader holds it (a resolved file URL in a dsh boot, or a bare name). */
  module: string
  /** The npm package the module belongs to, when one can be found. */
  package?: string
  /** Whether the row is enabled (its `disabled` expression evaluated to false). */
  enabled: boolean
  state: PluginState
  /** First line of the error that failed the row (config, apply, import), when it failed. */
  error?: string
  /** The id of the enclosing group row, when the row is nested. */
  parent?: string
  /**
   * False when the host will refuse to switch the row on or off (the app cannot run without it),
   * with the reason in `lockedReason`. Absent means switchable (hosts before this field send none).
   */
  toggleable?: boolean
  lockedReason?: string
}

export const PluginRowSchema: Schema<PluginRow> = Schema.object({
  id: Schema.string().required(),
  module: Schema.string().required(),
  package: Schema.string(),
  enabled: Schema.boolean().required(),
  state: Schema.union([
    'pending',
    'loading',
    'active',
    'failed',
    'disposed',
    'unloading',
    'disabled',
    'not-loaded',
  ] as const).required(),
  error: Schema.string(),
  parent: Schema.string(),
  toggleable: Schema.boolean(),
  lockedReason: Schema.string(),
}) as Schema<PluginRow>

export const pluginsList = defineMethod('plugins.list', {
  params: Schema.object({}) as Schema<Record<string, never>>,
  result: Schema.object({ plugins: Schema.array(PluginRowSchema).required() }) as Schema<{ plugins: PluginRow[] }>,
  description:
    'The rows of the plugin tree: id, module, package, enabled, state, error; `toggleable: false` (with `lockedReason`) on rows the host refuses to switch.',
})
