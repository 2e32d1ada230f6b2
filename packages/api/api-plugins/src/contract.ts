// Browser-safe contracts of the plugin-management methods (no node imports); a client imports
// them from `@dsh/api-plugins/contract`. `plugins.list` itself is @dsh/plugin-inventory's.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'
import { PluginRowSchema, type PluginRow } from '@dsh/plugin-inventory/contract'

export interface PluginDetail {
  row: PluginRow
  /** The plugin's `Config` schema as JSON (`Schema(json)` rebuilds it), when it declares one and its module is loaded. */
  schema?: unknown
  /** The row's config as composed (what the plugin was given), secret fields left out. */
  config?: unknown
  /** Dotted paths of `role: 'secret'` fields and whether the row sets them. */
  secrets: { path: string; set: boolean }[]
  /** Whether the form may save (the reason when not: `!!js` values, no schema, protected row). */
  editable: boolean
  reason?: string
  /** Whether the row may be enabled/disabled here. */
  toggleable: boolean
  /** The patch layer a change is written to. */
  layer?: string
}

const DetailSchema: Schema<PluginDetail> = Schema.object({
  row: PluginRowSchema.required(),
  schema: Schema.any(),
  config: Schema.any(),
  secrets: Schema.array(
    Schema.object({ path: Schema.string().required(), set: Schema.boolean().required() }),
  ).required(),
  editable: Schema.boolean().required(),
  reason: Schema.string(),
  toggleable: Schema.boolean().required(),
  layer: Schema.string(),
}) as Schema<PluginDetail>

const ROW_ID = Schema.string().min(1).max(200).required()

export const pluginsDescribe = defineMethod('plugins.describe', {
  params: Schema.object({ id: ROW_ID }) as Schema<{ id: string }>,
  result: DetailSchema,
  description: 'One row of the plugin tree with its config schema (JSON) and composed config (secrets left out).',
})

export const pluginsSetEnabled = defineMethod('plugins.setEnabled', {
  params: Schema.object({ id: ROW_ID, enabled: Schema.boolean().required() }) as Schema<{
    id: string
    enabled: boolean
  }>,
  result: DetailSchema,
  loopbackOnly: true,
  description: "Enables or disables a row now and in the profile's patch layer (kept for the next start).",
})

export const pluginsConfigure = defineMethod('plugins.configure', {
  params: Schema.object({ id: ROW_ID, config: Schema.any().required() }) as Schema<{ id: string; config: unknown }>,
  result: DetailSchema,
  loopbackOnly: true,
  description:
    "Validates a row's new config against its plugin's schema, writes it to the profile's patch layer and applies it now. A secret field left out keeps its value.",
})
