// @dsh/plugin-manager: `dsh plugin add|remove|update|list|new` (run through the `dsh` launcher).
export { PLUGIN_HELP, runPluginCommand, type PluginCommandOptions } from './cli.ts'
export { describeFailure, PluginManager, type AddResult, type ManagerOptions, type PluginStatus } from './manager.ts'
export { defaultRowId, readPluginManifest, type PluginManifest } from './manifest.ts'
export { addRow, removeRows, rowsOf, type PluginRow } from './patch-file.ts'
export { PEERS, scaffold, type ScaffoldResult } from './scaffold.ts'
export { isPackageName, parseSpec, type PluginSpec, type SpecKind } from './spec.ts'
export { PluginError } from './errors.ts'
