// @dsh/app-boot: profiles, bundles, patch layers, .env layering and the fail-loud boot.
export { DshUserError } from './errors.ts'
export {
  isJsExpr,
  JsExpr,
  jsTag,
  LayerError,
  parseLayer,
  parseLayerCached,
  ROW_FIELDS,
  type InsertOp,
  type Layer,
  type Op,
  type PatchOp,
  type Row,
  type RowField,
} from './layer.ts'
export { applyLayers, type Applied, type ComposedRow } from './apply.ts'
export { isBareSpecifier, resolveFirst, resolveFrom } from './resolve.ts'
export {
  collectLayers,
  composeLayers,
  composeProfile,
  ensureProfile,
  listProfileTemplates,
  readLayerFile,
  readProfile,
  resolveBundle,
  type BundleManifest,
  type ComposeOptions,
  type Composition,
  type LayerInfo,
  type ProfileManifest,
  type ResolvedRow,
} from './profile.ts'
export { dumpComposition } from './dump.ts'
export { applyDotEnv, layerEnv, readEnvFile } from './env.ts'
export {
  BootError,
  bootComposition,
  DEFAULT_STOP_GRACE_MS,
  DshLoader,
  formatFailure,
  probeComposition,
  type BootedTree,
  type BootFailure,
  type BootFailureKind,
  type BootInfo,
  type StartCheck,
  type BootOptions,
  type ReloadReport,
  type StopInfo,
} from './boot.ts'
export { loadPrelinked, type PrelinkDecision, type PrelinkVariant } from '@dsh/app-prelink'
export { watchLayers, type LayerWatcher, type WatchOptions } from './watch.ts'
export { runApp, runTree, SIGNAL_EXIT_CODES, type RunOptions, type RunTreeOptions } from './app.ts'
