// @dsh/app-compose: profiles, bundles and patch layers composed into the rows a boot mounts.
export { DshUserError } from './errors.ts'
export {
  isJsExpr,
  JsExpr,
  jsTag,
  LayerError,
  locateInLayer,
  parseLayer,
  layerCacheKey,
  parseLayerCached,
  ROW_FIELDS,
  type InsertOp,
  type KeepOp,
  keepMatches,
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
  profileDirUrl,
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
export { nearest, unknownConfigKeys } from './near.ts'
