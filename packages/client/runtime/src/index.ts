// @dsh/client-runtime: Cordis in the browser. One root context carries the page's services:
// `ctx.slots` (named places plugins fill with React components), `ctx.remote` (typed host calls),
// `ctx.connection` (host and session streams, online state), `ctx.catalog` (sessions and
// workspaces), `ctx.router`, `ctx.locale`, `ctx.theme` and `ctx.clientPlugins` (the browser halves
// of enabled host rows). The app shell and every plugin's browser half import this package by its
// bare name; the page's import map gives them one shared copy.
import { Context } from 'cordis'
import { SlotRegistry } from './slots.ts'
import { Remote, type RemoteConfig, Connection, type ConnectionConfig } from '@dsh/client-connection'
import { Locale, type LocaleConfig } from './locale.ts'
import { Theme } from './theme.ts'
import { Catalog } from './catalog.ts'
import { Router } from './router.ts'
import { ClientPlugins, type ModuleImporter } from './plugins.ts'

// The host link (ctx.remote, ctx.connection, the SSE reader) is @dsh/client-connection; every name
// of it stays a name of this package.
export {
  Store,
  frameBatcher,
  type ReadableStore,
  Remote,
  RemoteError,
  type RemoteMethods,
  type InputOf,
  type CallOptions,
  type RemoteConfig,
  Connection,
  SessionFeed,
  DELTA_PUBLISH_MS,
  type OnlineState,
  type SessionFeedState,
  type PendingApproval,
  type PendingQuestion,
  type ConnectionConfig,
  readSse,
  StreamError,
  type SseFrame,
  Utf8Decoder,
} from '@dsh/client-connection'
export { SlotRegistry, type SlotEntry, type SlotProps, type SlotRecord, type PropsOfSlot } from './slots.ts'
export { formatCount } from './format.ts'
export { installStyles } from './styles.ts'
export {
  KEY_BINDINGS,
  matchKey,
  pageKey,
  type KeyBinding,
  type KeyChord,
  type KeyPress,
  type KeyScope,
} from './keys.ts'
export { Locale, pickLang, LANGS, type Lang, type Messages, type Dictionary, type Translate } from './locale.ts'
export { Theme, type ThemePreference, type ColorScheme } from './theme.ts'
export { Catalog, type CatalogState } from './catalog.ts'
export { Router, parseRoute, sessionPath, type Route } from './router.ts'
export { ClientPlugins, type ClientPluginEntry, type LoadedPlugin, type ModuleImporter } from './plugins.ts'
export { readManifest, parseManifest, MANIFEST_PATH, MANIFEST_ELEMENT_ID, type BootManifest } from './manifest.ts'
export {
  RuntimeProvider,
  useCtx,
  useStore,
  useSlotEntries,
  Slot,
  SlotBoundary,
  useT,
  useSessionFeed,
  plainService,
  type SlotComponentProps,
  type SessionFeedOptions,
} from './react.ts'
export { SLOTS, type SlotName, type SessionSlotProps } from './names.ts'

declare module 'cordis' {
  interface Context {
    slots: SlotRegistry
  }
}

/** A browser half: what a package's `./client` module exports by default. */
export interface ClientPluginModule<C = any> {
  name: string
  inject?: string[] | Record<string, unknown>
  apply(ctx: Context, config: C): void | Promise<void>
}

export interface RuntimeOptions {
  remote?: RemoteConfig
  connection?: ConnectionConfig
  locale?: LocaleConfig
  /** How browser halves are imported (default: dynamic `import(url)`). */
  importer?: ModuleImporter
}

/** Creates the root context with every runtime service started. */
export async function createRuntime(options: RuntimeOptions = {}): Promise<Context> {
  const ctx = new Context()
  await Promise.all([
    ctx.plugin(SlotRegistry),
    ctx.plugin(Remote, options.remote ?? {}),
    ctx.plugin(Locale, options.locale ?? {}),
    ctx.plugin(Theme),
    ctx.plugin(Router),
  ])
  await ctx.plugin(Connection, options.connection ?? {})
  await ctx.plugin(Catalog)
  await ctx.plugin(ClientPlugins, options.importer as never)
  return ctx
}
