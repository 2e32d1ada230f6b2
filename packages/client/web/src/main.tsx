// Boot: the runtime's root context, the shell's own plugin (dictionaries, fallback views, footer
// controls), first paint, then the browser halves of the enabled host rows.
import { createRoot } from 'react-dom/client'
import '@dsh/client-design'
import type { Context } from 'cordis'
import { createRuntime, readManifest, RuntimeProvider, type BootManifest } from '@dsh/client-runtime'
import { App, FooterControls } from './app.tsx'
import { FallbackComposer, FallbackConversation } from './fallback.tsx'
import { NS, shellMessages } from './messages.ts'
import { checkKey } from './settings.tsx'
import { firstHalvesLoading, keepBootPreview } from './state.ts'
import './styles.css'

const shellPlugin = {
  name: 'client-web-shell',
  inject: ['slots', 'locale'],
  apply(ctx: Context) {
    ctx.locale.register(NS, shellMessages)
    ctx.slots.register('conversation.main', { id: 'shell-fallback', order: 1000, component: FallbackConversation })
    ctx.slots.register('conversation.composer', { id: 'shell-fallback', order: 1000, component: FallbackComposer })
    ctx.slots.register('sidebar.footer', { id: 'shell-controls', order: 100, component: FooterControls })
  },
}

async function boot() {
  const langParam = new URLSearchParams(location.search).get('lang')
  const ctx = await createRuntime(langParam === 'en' || langParam === 'zh' ? { locale: { lang: langParam } } : {})
  await ctx.plugin(shellPlugin)
  performance.mark('dsh-runtime')
  let manifest: BootManifest = { version: 1, plugins: [] }
  try {
    manifest = await readManifest()
  } catch (error) {
    console.warn(`[dsh] ${(error as Error).message}`)
  }
  ;(globalThis as { __dsh?: unknown }).__dsh = ctx
  // Two waves: the halves the first screen needs, then (after that screen has painted) the ones
  // whose package says `dsh.clientLoad: "deferred"` (overlays, sidebar and panel extras, settings).
  const first = manifest.plugins.filter((p) => !p.defer)
  const deferred = manifest.plugins.filter((p) => p.defer)
  firstHalvesLoading.set(first.length > 0)
  keepBootPreview()
  createRoot(document.getElementById('root')!).render(
    <RuntimeProvider ctx={ctx}>
      <App launchCwd={manifest.launchCwd} />
    </RuntimeProvider>,
  )
  void checkKey(ctx)
  await ctx.clientPlugins.loadAll(first)
  firstHalvesLoading.set(false)
  performance.mark('dsh-first-halves')
  if (deferred.length) {
    await afterPaint()
    await ctx.clientPlugins.loadAll(deferred)
  }
  performance.mark('dsh-ready')
  document.documentElement.dataset.ready = 'true'
}

/** Resolves after the next frame has been painted (a task queued from the frame's callback). */
function afterPaint(): Promise<void> {
  if (typeof requestAnimationFrame !== 'function' || document.visibilityState === 'hidden')
    return new Promise((resolve) => setTimeout(resolve, 0))
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)))
}

void boot()
