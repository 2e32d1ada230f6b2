// @dsh/client-hmr/client: on `client-plugins/changed` from the host stream, unloads the halves
// that went away and re-imports the changed or new ones from a versioned URL (a new module, so the
// browser does not reuse the old one), all without reloading the page. Its own half is replaced last.
import type { Context } from 'cordis'
import type {} from '@dsh/client-runtime'
import { CLIENT_PLUGINS_CHANGED, type ClientPluginsChanged, versionedUrl } from '../shared.ts'

export const name = '@dsh/client-hmr'
export const inject = ['connection', 'clientPlugins']

export function apply(ctx: Context): void {
  const plugins = ctx.clientPlugins
  ctx.effect(
    () =>
      ctx.connection.onHost((event) => {
        if (event.type !== CLIENT_PLUGINS_CHANGED) return
        const change = event as unknown as ClientPluginsChanged
        if (!Array.isArray(change.load) || !Array.isArray(change.unload)) return
        const own = change.load.find((p) => p.package === name)
        void (async () => {
          for (const pkg of change.unload) await plugins.unload(pkg)
          for (const plugin of change.load) {
            if (plugin.package === name) continue
            console.info(`[dsh] hot reload: ${plugin.package}`)
            await plugins.load({ package: plugin.package, url: versionedUrl(plugin) })
          }
          if (own) await plugins.load({ package: own.package, url: versionedUrl(own) })
        })()
      }),
    'client-hmr: host events',
  )
}

export default { name, inject, apply }
