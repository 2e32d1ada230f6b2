// `ctx.clientPlugins`: the browser halves of enabled host rows. The host lists them in the boot
// manifest (`{package, url}`); each is an ES module whose default export is a Cordis plugin
// (`{name, inject?, apply(ctx)}` or a Service class). Its bare imports of the shared libraries
// resolve through the page's import map to the app's own copies.
import { type Context, Service } from 'cordis'
import { isFiberActive } from '@dsh/cordis-compat'
import { Store } from '@dsh/client-connection'

declare module 'cordis' {
  interface Context {
    clientPlugins: ClientPlugins
  }
}

export interface ClientPluginEntry {
  /** The npm package the half belongs to (one half per package). */
  package: string
  /** Where its entry module is served (`/plugins/<package>/<file>`). */
  url: string
  /** Imported after the conversation's first screen has painted (the package's `dsh.clientLoad: "deferred"`). */
  defer?: boolean
}

export interface LoadedPlugin {
  package: string
  url: string
  /** `waiting`: mounted, but its inject names a service nobody provides (yet). */
  state: 'loading' | 'active' | 'waiting' | 'failed'
  error?: string
}

/** How a module is fetched; the default is a dynamic import. Tests and dev servers may replace it. */
export type ModuleImporter = (url: string) => Promise<unknown>

const defaultImporter: ModuleImporter = (url) => import(/* @vite-ignore */ url)

export class ClientPlugins extends Service {
  readonly list = new Store<readonly LoadedPlugin[]>([])
  // Named through ctx.plugin's return type: cordis' Fiber becomes generic when a program also
  // sees @cordisjs/plugin-loader's augmentation (host halves type-checked with the client).
  private readonly fibers = new Map<string, ReturnType<Context['plugin']>>()

  constructor(
    ctx: Context,
    private readonly importer: ModuleImporter = defaultImporter,
  ) {
    super(ctx, 'clientPlugins')
  }

  /** Loads every entry (in parallel); a failing one is reported in `list` and on the console, never thrown. */
  async loadAll(entries: readonly ClientPluginEntry[]): Promise<void> {
    await Promise.all(entries.map((entry) => this.load(entry)))
  }

  /** Imports one browser half and mounts its default export under the root context. */
  async load(entry: ClientPluginEntry): Promise<void> {
    if (this.fibers.has(entry.package)) await this.unload(entry.package)
    this.setState({ package: entry.package, url: entry.url, state: 'loading' })
    try {
      const mod = (await this.importer(entry.url)) as { default?: unknown }
      const plugin = mod?.default
      if (!plugin || (typeof plugin !== 'function' && typeof (plugin as { apply?: unknown }).apply !== 'function')) {
        throw new TypeError(`its default export is not a Cordis plugin ({name, apply(ctx)} or a Service class)`)
      }
      const fiber = this.ctx.plugin(plugin as never, undefined as never)
      this.fibers.set(entry.package, fiber)
      await fiber
      // A half whose `inject` names a service nobody provides stays pending (it starts if the
      // service appears later): say which services it waits for.
      if (!isFiberActive(fiber)) {
        const missing = Object.keys(fiber.inject ?? {}).filter((name) => this.ctx.get(name) === undefined)
        this.setState({
          package: entry.package,
          url: entry.url,
          state: 'waiting',
          error: `it waits for ${missing.length ? missing.join(', ') : 'its services'}`,
        })
        return
      }
      this.setState({ package: entry.package, url: entry.url, state: 'active' })
    } catch (error) {
      const message = (error as Error)?.message ?? String(error)
      console.warn(`[dsh] client plugin ${entry.package} failed to load: ${message}`)
      this.setState({ package: entry.package, url: entry.url, state: 'failed', error: message })
    }
  }

  /** Unmounts a browser half: everything it registered (slots, dictionaries, listeners) goes. */
  async unload(pkg: string): Promise<void> {
    const fiber = this.fibers.get(pkg)
    this.fibers.delete(pkg)
    if (fiber) await fiber.dispose()
    this.list.set(this.list.get().filter((p) => p.package !== pkg))
  }

  private setState(next: LoadedPlugin): void {
    const list = this.list.get().filter((p) => p.package !== next.package)
    this.list.set([...list, next])
  }
}
