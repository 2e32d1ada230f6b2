// @dsh/ui-notifications/client: browser notifications for `dsh web`. A Notifications switch in the
// sidebar footer turns them on; the browser's permission is asked for only when the user flips
// it (a user gesture), never at load. While on, each `notifications/attention` host event of
// @dsh/desktop-notifications (a turn ended, an approval or a question waits) for a session of the
// catalog becomes a browser Notification, but only while the page is hidden (the user looked
// away). Clicking the notification focuses the tab and opens the session.
import type { Context } from 'cordis'
import { useEffect, useState } from 'react'
import { Store, useStore, useT } from '@dsh/client-runtime'
import { isAttentionEvent, type AttentionEvent } from '@dsh/desktop-notifications/contract'

export const NAMESPACE = 'notifications'
export const name = '@dsh/ui-notifications'
export const inject = ['slots', 'locale', 'connection', 'router', 'catalog']

/** localStorage key of the switch (`on` when the user turned notifications on). */
export const STORAGE_KEY = 'dsh.notifications'

const en = {
  label: 'Notifications',
  on: 'Notify me when a hidden tab needs me',
  blocked: 'Notifications are blocked for this site in the browser settings.',
  unsupported: 'This browser cannot show notifications.',
  'title.turn-end': 'dsh: turn finished',
  'title.turn-ended': 'dsh: turn ended ({reason})',
  'title.approval': 'dsh needs your approval',
  'title.question': 'dsh has a question',
}
const zh: Record<keyof typeof en, string> = {
  label: '通知',
  on: '标签页在后台且需要我时通知我',
  blocked: '浏览器设置已阻止本站的通知。',
  unsupported: '此浏览器无法显示通知。',
  'title.turn-end': 'dsh：本轮已完成',
  'title.turn-ended': 'dsh：本轮已结束（{reason}）',
  'title.approval': 'dsh 需要你的批准',
  'title.question': 'dsh 有一个问题',
}

type Permission = 'default' | 'granted' | 'denied' | 'unsupported'

const supported = () => typeof Notification === 'function'
const permissionNow = (): Permission => (supported() ? Notification.permission : 'unsupported')

function readSwitch(): boolean {
  try {
    return globalThis.localStorage?.getItem(STORAGE_KEY) === 'on'
  } catch {
    return false
  }
}
function writeSwitch(on: boolean): void {
  try {
    if (on) globalThis.localStorage?.setItem(STORAGE_KEY, 'on')
    else globalThis.localStorage?.removeItem(STORAGE_KEY)
  } catch {
    // storage refused (private mode): the switch holds for this page only
  }
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  const enabled = new Store<boolean>(readSwitch())
  const permission = new Store<Permission>(permissionNow())
  /** How many attention events this page heard (shown or not): a mark tests can wait for. */
  const heard = new Store<number>(0)

  const show = (event: AttentionEvent) => {
    const row = ctx.catalog.get(event.sessionId)
    // Only the sessions this page can open (a subagent's own session is not listed).
    if (!row) return
    if (!enabled.get() || permissionNow() !== 'granted') return
    if (typeof document === 'undefined' || document.visibilityState !== 'hidden') return
    const t = (key: keyof typeof en, params?: Record<string, string>) => ctx.locale.t(NAMESPACE, key, params)
    const head =
      event.kind === 'turn-end'
        ? event.reason && event.reason !== 'completed'
          ? t('title.turn-ended', { reason: event.reason })
          : t('title.turn-end')
        : t(`title.${event.kind}`)
    const label = row.title ?? row.firstPrompt
    const note = new Notification(label ? `${head} · ${label.replace(/\s+/g, ' ').slice(0, 60)}` : head, {
      body: event.body,
      // One notification per session and kind: a later one (or another tab's) replaces it.
      tag: `dsh:${event.sessionId}:${event.kind}`,
    })
    note.onclick = () => {
      globalThis.focus?.()
      ctx.router.openSession(event.sessionId)
      note.close()
    }
  }
  ctx.effect(
    () =>
      ctx.connection.onHost((event) => {
        if (!isAttentionEvent(event)) return
        heard.set(heard.get() + 1)
        show(event)
      }),
    'ui-notifications: host events',
  )

  function Switch() {
    const t = useT(NAMESPACE)
    const on = useStore(enabled)
    const state = useStore(permission)
    const count = useStore(heard)
    const [asking, setAsking] = useState(false)
    // The permission can change in the browser's own settings meanwhile: follow it.
    useEffect(() => {
      const sync = () => permission.set(permissionNow())
      document.addEventListener('visibilitychange', sync)
      let status: PermissionStatus | undefined
      let live = true
      void globalThis.navigator?.permissions
        ?.query({ name: 'notifications' })
        .then((s) => {
          if (!live) return
          status = s
          s.addEventListener('change', sync)
          sync()
        })
        .catch(() => {})
      return () => {
        live = false
        status?.removeEventListener('change', sync)
        document.removeEventListener('visibilitychange', sync)
      }
    }, [])
    const active = on && state === 'granted'
    const flip = async () => {
      if (active) {
        enabled.set(false)
        writeSwitch(false)
        return
      }
      if (!supported()) return
      let answer = Notification.permission as Permission
      if (answer === 'default') {
        setAsking(true)
        try {
          answer = await Notification.requestPermission()
        } finally {
          setAsking(false)
        }
      }
      permission.set(answer)
      enabled.set(answer === 'granted')
      writeSwitch(answer === 'granted')
    }
    const hint = state === 'unsupported' ? t('unsupported') : state === 'denied' ? t('blocked') : t('on')
    return (
      <label
        className="dsh-notifications-switch"
        title={hint}
        data-notifications-heard={count}
        style={{ display: 'inline-flex', alignItems: 'center', gap: 4 }}
      >
        <input
          type="checkbox"
          role="switch"
          aria-checked={active}
          checked={active}
          disabled={asking || state === 'unsupported'}
          aria-describedby="dsh-notifications-hint"
          onChange={() => void flip()}
          data-notifications={active ? 'on' : state === 'denied' ? 'blocked' : 'off'}
        />
        <span>{t('label')}</span>
        <span id="dsh-notifications-hint" className="visually-hidden">
          {hint}
        </span>
      </label>
    )
  }
  ctx.slots.register('sidebar.footer', { id: 'ui-notifications', order: 90, component: Switch })
}

export default { name, inject, apply }
