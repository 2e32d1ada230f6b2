// @dsh/ui-settings/client: the Settings dialog. The page loads only this file; the dialog and
// each of its pages are separate chunks fetched when the dialog first opens. It fills the shell's
// `settings.dialog` seat and declares `settings.section` (one page per entry: `id` names it, the
// nav label is the `section.<id>` message of the `settings` namespace, else the id).
import { lazy, Suspense, type ComponentType } from 'react'
import type { Context } from 'cordis'
import { installStyles } from '@dsh/client-runtime'
import { en, zh } from './strings.ts'
import { CSS } from './styles.ts'
import { NAMESPACE, SECTION_SLOT } from './names.ts'

export { NAMESPACE, SECTION_SLOT }

export const name = '@dsh/ui-settings'
export const inject = ['slots', 'locale', 'remote']

function deferred<P extends object>(load: () => Promise<{ default: ComponentType<P> }>): ComponentType<P> {
  const Lazy = lazy(load)
  return function Deferred(props: P) {
    return (
      <Suspense
        fallback={
          <p className="dsh-settings-muted" role="status">
            …
          </p>
        }
      >
        <Lazy {...props} />
      </Suspense>
    )
  }
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-settings: stylesheet')
  ctx.slots.register('settings.dialog', {
    id: 'ui-settings',
    order: 0,
    component: deferred(() => import('./dialog.tsx')),
  })
  // Providers and models first (what a new user comes for), then tools and integrations, then
  // the general settings; the host's plugin rows last, under "Advanced".
  ctx.slots.register(SECTION_SLOT, { id: 'models', order: 0, component: deferred(() => import('./models.tsx')) })
  ctx.slots.register(SECTION_SLOT, { id: 'tools', order: 5, component: deferred(() => import('./tools.tsx')) })
  ctx.slots.register(SECTION_SLOT, { id: 'general', order: 10, component: deferred(() => import('./general.tsx')) })
  ctx.slots.register(SECTION_SLOT, { id: 'plugins', order: 100, component: deferred(() => import('./plugins.tsx')) })
}

export default { name, inject, apply }
