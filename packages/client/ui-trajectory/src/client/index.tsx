// @dsh/ui-trajectory/client: a "Trajectory" button in the conversation header opens a dialog
// with the session's model requests (tokens, latency, TTFT, tool durations), a timeline per turn
// and totals, derived from the session feed. The view itself is a lazy chunk.
import type { Context } from 'cordis'
import { lazy, Suspense, useEffect, useState } from 'react'
import {
  installStyles,
  Store,
  useCtx,
  useSessionFeed,
  useStore,
  useT,
  type SessionSlotProps,
} from '@dsh/client-runtime'
import { trajectoryPrices } from '../contract.ts'
import type { Price } from '../model.ts'
import { en, zh } from './strings.ts'
import { CSS } from './styles.ts'

export const NAMESPACE = 'trajectory'
export const name = '@dsh/ui-trajectory'
export const inject = ['slots', 'locale', 'remote', 'router']

const View = lazy(() => import('./view.tsx'))

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-trajectory: stylesheet')
  /** The session whose trajectory is open. */
  const open = new Store<string | undefined>(undefined)
  let prices: Promise<Record<string, Price>> | undefined
  const loadPrices = () =>
    (prices ??= ctx.remote.call(trajectoryPrices, {}).then(
      (r) => r.prices,
      () => ({}),
    ))

  function Button({ sessionId }: SessionSlotProps) {
    const t = useT(NAMESPACE)
    return (
      <button
        type="button"
        className="dsh-button"
        data-trajectory-open="true"
        title={t('openHint')}
        onClick={() => open.set(sessionId)}
      >
        {t('open')}
      </button>
    )
  }

  function Dialog() {
    const c = useCtx()
    const t = useT(NAMESPACE)
    const sessionId = useStore(open)
    const route = useStore(c.router.route)
    const feed = useSessionFeed(sessionId)
    const [known, setKnown] = useState<Record<string, Price> | undefined>(undefined)
    useEffect(() => {
      if (sessionId) void loadPrices().then(setKnown)
    }, [sessionId])
    useEffect(() => {
      // Leaving the session closes its trajectory.
      if (sessionId && route.sessionId !== sessionId) open.set(undefined)
    }, [route.sessionId, sessionId])
    useEffect(() => {
      if (!sessionId) return
      const onKey = (e: KeyboardEvent) => e.key === 'Escape' && open.set(undefined)
      window.addEventListener('keydown', onKey)
      return () => window.removeEventListener('keydown', onKey)
    }, [sessionId])
    if (!sessionId) return null
    return (
      // biome-ignore lint/a11y/noStaticElementInteractions lint/a11y/useKeyWithClickEvents: a click on the backdrop is the pointer's way out; from the keyboard, Escape (the window listener above) and the close button close the dialog
      <div className="dialog-backdrop" onClick={(e) => e.target === e.currentTarget && open.set(undefined)}>
        <div
          className="dialog dsh-traj-dialog"
          role="dialog"
          aria-modal="true"
          aria-label={t('title')}
          data-trajectory="true"
        >
          <header>
            <h2>{t('title')}</h2>
            <button type="button" onClick={() => open.set(undefined)}>
              {t('close')}
            </button>
          </header>
          {feed?.loaded ? (
            <Suspense fallback={<p className="muted">{t('loading')}</p>}>
              <View t={t} feed={feed} {...(known ? { prices: known } : {})} />
            </Suspense>
          ) : (
            <p className="muted">{t('loading')}</p>
          )}
        </div>
      </div>
    )
  }

  ctx.slots.register('conversation.header.pickers', { id: 'ui-trajectory', order: 50, component: Button })
  ctx.slots.register('app.overlay', { id: 'ui-trajectory', order: 0, component: Dialog })
}

export default { name, inject, apply }
