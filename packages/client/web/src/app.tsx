// The app shell: three columns (sidebar, conversation, collapsible side panel), the host
// banner, keyboard shortcuts, the missing-key notice and the first-run session.
import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import {
  Slot,
  useCtx,
  useSessionFeed,
  useStore,
  useT,
  LANGS,
  KEY_BINDINGS,
  pageKey,
  type KeyScope,
  type Lang,
  type SessionSlotProps,
  type ThemePreference,
} from '@dsh/client-runtime'
import { IconButton, Kbd, Keyboard, MenuIcon, PanelRight, Settings } from '@dsh/client-design'
import { NS } from './messages.ts'
import { Sidebar } from './sidebar.tsx'
import { ShellContext, useShell, type ShellState } from './state.ts'
import { openFreshSession, titleOf } from './sessions.ts'
import { checkKey, KeyNotice, SettingsDialog, useMissingKey } from './settings.tsx'
import { ContextMeter } from './panel.tsx'
import { Dialog } from './dialog.tsx'
import { CommandPalette } from './palette.tsx'

export function App({ launchCwd }: { launchCwd?: string }) {
  const ctx = useCtx()
  const [panelOpen, setPanelOpen] = useState(() => globalThis.localStorage?.getItem('dsh.panel') !== 'closed')
  const [dialog, setDialog] = useState<ShellState['dialog']>()
  const [drawerOpen, setDrawerOpen] = useState(false)
  const searchRef = useRef<HTMLInputElement>(null)
  const newSession = useCallback(() => {
    if (!launchCwd && !ctx.catalog.state.get().sessions[0]) return
    const current = ctx.catalog.get(ctx.router.sessionId ?? '')
    // The open session is already a fresh one (what openFreshSession would reuse): stay. Deciding
    // this now, not after the asynchronous refresh, keeps a prompt typed right after the click in
    // the session the page shows (the page used to move to a new session under it).
    if (current && current.turns === 0 && current.queued === 0 && current.status !== 'running') return
    const cwd = current?.cwd ?? launchCwd ?? ctx.catalog.state.get().sessions[0].cwd
    void openFreshSession(ctx, cwd)
      .then((row) => ctx.router.openSession(row.sessionId))
      .catch((e) => console.warn(`[dsh] ${(e as Error).message}`))
  }, [ctx, launchCwd])
  const state = useMemo<ShellState>(
    () => ({
      panelOpen,
      togglePanel: () =>
        setPanelOpen((open) => {
          try {
            globalThis.localStorage?.setItem('dsh.panel', open ? 'closed' : 'open')
          } catch {
            // no storage
          }
          return !open
        }),
      drawerOpen,
      toggleDrawer: () => setDrawerOpen((open) => !open),
      closeDrawer: () => setDrawerOpen(false),
      dialog,
      openDialog: setDialog,
      newSession,
      searchRef,
      launchCwd,
    }),
    [panelOpen, drawerOpen, dialog, newSession, launchCwd],
  )

  // First run: a page opened on no session goes to a fresh session in the launch folder.
  useEffect(() => {
    if (ctx.router.sessionId || !launchCwd) return
    let cancelled = false
    void openFreshSession(ctx, launchCwd)
      .then((row) => {
        if (!cancelled && !ctx.router.sessionId) ctx.router.openSession(row.sessionId, { replace: true })
      })
      .catch((e) => console.warn(`[dsh] first session: ${(e as Error).message}`))
    return () => {
      cancelled = true
    }
  }, [ctx, launchCwd])

  const closeDialog = useCallback(() => setDialog(undefined), [])
  // A key may have been stored from whichever dialog fills the seat: ask again when it closes.
  const closeSettings = useCallback(() => {
    setDialog(undefined)
    void checkKey(ctx)
  }, [ctx])

  useShortcuts(state)
  useEffect(() => void performance.mark('dsh-shell'), [])

  return (
    <ShellContext.Provider value={state}>
      <div className={'app' + (panelOpen ? ' panel-open' : '') + (drawerOpen ? ' drawer-open' : '')}>
        <HostBanner />
        <Sidebar />
        {drawerOpen ? (
          // biome-ignore lint/a11y/noStaticElementInteractions lint/a11y/useKeyWithClickEvents: the scrim is the pointer's way out of the drawer; the keyboard has Escape and the menu button
          <div className="drawer-scrim" onClick={() => setDrawerOpen(false)} />
        ) : null}
        <Conversation />
        {panelOpen ? <SidePanel /> : null}
      </div>
      {dialog === 'shortcuts' ? <ShortcutsDialog onClose={() => setDialog(undefined)} /> : null}
      {dialog === 'palette' ? <CommandPalette onClose={closeDialog} /> : null}
      {dialog === 'settings' ? (
        <Slot
          name="settings.dialog"
          single
          props={{ onClose: closeSettings }}
          fallback={<SettingsDialog onClose={closeSettings} />}
        />
      ) : null}
      <Slot name="app.overlay" />
    </ShellContext.Provider>
  )
}

function HostBanner() {
  const ctx = useCtx()
  const t = useT(NS)
  const state = useStore(ctx.connection.state)
  const plugins = useStore(ctx.clientPlugins.list)
  const failed = plugins.filter((p) => p.state === 'failed')
  return (
    <div className="banners">
      {state === 'offline' ? (
        <div className="banner offline" role="status" data-testid="offline-banner">
          {t('offline')}
        </div>
      ) : null}
      {failed.map((p) => (
        <div key={p.package} className="banner warn" role="status">
          {t('pluginFailed', { name: p.package, message: p.error ?? '' })}
        </div>
      ))}
    </div>
  )
}

function Conversation() {
  const ctx = useCtx()
  const t = useT(NS)
  const route = useStore(ctx.router.route)
  const catalog = useStore(ctx.catalog.state)
  const shell = useShell()
  // The settled feed: slot entries re-render when something other than a streamed delta changes
  // (views of the streaming text follow it through their own feed or model).
  const feed = useSessionFeed(route.sessionId, { deltas: false })
  const row = route.sessionId
    ? (catalog.sessions.find((r) => r.sessionId === route.sessionId) ?? ctx.catalog.get(route.sessionId))
    : undefined
  const missingKey = useMissingKey()
  if (!route.sessionId) {
    return (
      <main className="conversation empty">
        <IconButton
          className="drawer-toggle floating"
          label={t('toggleSidebar')}
          icon={MenuIcon}
          tooltip={false}
          aria-expanded={shell.drawerOpen}
          aria-controls="dsh-sidebar"
          onClick={shell.toggleDrawer}
        />
        <p className="muted">{shell.launchCwd ? t('loading') : t('noSession')}</p>
      </main>
    )
  }
  if (!feed)
    return (
      <main className="conversation">
        <p className="muted">{t('loading')}</p>
      </main>
    )
  const props: SessionSlotProps = { sessionId: route.sessionId, feed, ...(row ? { row } : {}) }
  const approval = feed.approvals[0]
  const question = feed.questions[0]
  return (
    <main className="conversation" data-session-id={route.sessionId}>
      <header className="conversation-header">
        <IconButton
          className="drawer-toggle"
          label={t('toggleSidebar')}
          icon={MenuIcon}
          tooltip={false}
          aria-expanded={shell.drawerOpen}
          aria-controls="dsh-sidebar"
          onClick={shell.toggleDrawer}
        />
        <h1 className="session-title">{titleOf(row) ?? t('untitled')}</h1>
        <div className="pickers">
          <Slot name="conversation.header.pickers" props={props} />
        </div>
        <IconButton
          className="panel-toggle"
          label={t('togglePanel')}
          icon={PanelRight}
          aria-pressed={shell.panelOpen}
          onClick={shell.togglePanel}
        />
      </header>
      {feed.error ? (
        <p className="error" role="alert">
          {t('sessionMissing')}
        </p>
      ) : null}
      <div className="conversation-scroll">
        {feed.loaded ? <Slot name="conversation.main" props={props} single /> : <p className="muted">{t('loading')}</p>}
      </div>
      {missingKey ? <KeyNotice missing={missingKey} /> : null}
      <div className="composer-area">
        {approval ? (
          <Slot
            name="conversation.composer.takeover"
            slotKey="approval"
            single
            props={{ ...props, approval }}
            fallback={<p className="takeover-note">{t('waitingApproval')}</p>}
          />
        ) : question ? (
          <Slot
            name="conversation.composer.takeover"
            slotKey="question"
            single
            props={{ ...props, question }}
            fallback={<p className="takeover-note">{t('waitingQuestion')}</p>}
          />
        ) : (
          <Slot name="conversation.composer" props={props} single />
        )}
      </div>
    </main>
  )
}

function SidePanel() {
  const ctx = useCtx()
  const t = useT(NS)
  const route = useStore(ctx.router.route)
  const feed = useSessionFeed(route.sessionId, { deltas: false })
  return (
    <aside className="side-panel" aria-label={t('sidePanel')} data-testid="side-panel">
      {/* The level between the page's <h1> (the session title) and the sections' <h3>, unseen;
          the panel still collapses when this is all it holds (styles.css). */}
      <h2 className="visually-hidden side-panel-heading">{t('sidePanel')}</h2>
      {route.sessionId && feed
        ? (() => {
            const props = { sessionId: route.sessionId, feed, row: ctx.catalog.get(route.sessionId) }
            // The shell's context meter stands in until a package fills the panel.
            return <Slot name="panel.side" props={props} fallback={<ContextMeter {...props} />} />
          })()
        : null}
    </aside>
  )
}

function typing(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null
  return (
    !!el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.isContentEditable)
  )
}

function useShortcuts(state: ShellState) {
  const ctx = useCtx()
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented) return
      // What the key means comes from the one table the shortcuts sheet lists (KEY_BINDINGS).
      const binding = pageKey(e, typing(e.target))
      if (!binding) return
      switch (binding.id) {
        case 'palette':
          state.openDialog(state.dialog === 'palette' ? undefined : 'palette')
          break
        case 'help':
          state.openDialog(state.dialog === 'shortcuts' ? undefined : 'shortcuts')
          break
        case 'search':
          state.searchRef.current?.focus()
          break
        case 'new':
          state.newSession()
          break
        case 'panel':
          state.togglePanel()
          break
        case 'prev':
        case 'next': {
          const list = ctx.catalog.state.get().sessions
          const at = list.findIndex((r) => r.sessionId === ctx.router.sessionId)
          const next = list[Math.max(0, Math.min(list.length - 1, at + (binding.id === 'prev' ? -1 : 1)))]
          if (next) ctx.router.openSession(next.sessionId)
          break
        }
        case 'escape':
          // Esc closes a dialog, else the drawer; otherwise it is left to the focused control.
          if (state.dialog) state.openDialog(undefined)
          else if (state.drawerOpen) state.closeDrawer()
          return
        default:
          return
      }
      e.preventDefault()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [ctx, state])
}

function ShortcutsDialog({ onClose }: { onClose: () => void }) {
  const t = useT(NS)
  const scopes: KeyScope[] = ['page', 'composer']
  return (
    <Dialog title={t('shortcuts')} onClose={onClose}>
      <div className="shortcuts" data-testid="shortcuts">
        {scopes.map((scope) => (
          <section key={scope} aria-labelledby={`shortcuts-${scope}`}>
            <h3 id={`shortcuts-${scope}`}>{t(`shortcut.scope.${scope}`)}</h3>
            <dl>
              {KEY_BINDINGS.filter((b) => b.scope === scope).map((b) => (
                <div key={b.id} data-binding={b.id}>
                  <dt>
                    <Kbd>{b.keys}</Kbd>
                  </dt>
                  <dd>{t(`shortcut.${b.id}`)}</dd>
                </div>
              ))}
            </dl>
          </section>
        ))}
      </div>
    </Dialog>
  )
}

/** Footer controls: language and theme pickers, shortcuts and settings. */
export function FooterControls() {
  const ctx = useCtx()
  const t = useT(NS)
  const shell = useShell()
  const lang = useStore(ctx.locale.current)
  const theme = useStore(ctx.theme.preference)
  return (
    <div className="footer-controls">
      <label>
        <span className="visually-hidden">{t('language')}</span>
        <select
          aria-label={t('language')}
          value={lang}
          onChange={(e) => ctx.locale.set(e.target.value as Lang)}
          data-testid="language"
        >
          {LANGS.map((l) => (
            <option key={l} value={l}>
              {l === 'en' ? 'English' : '中文'}
            </option>
          ))}
        </select>
      </label>
      <label>
        <span className="visually-hidden">{t('theme')}</span>
        <select
          aria-label={t('theme')}
          value={theme}
          onChange={(e) => ctx.theme.set(e.target.value as ThemePreference)}
        >
          <option value="system">{t('themeSystem')}</option>
          <option value="light">{t('themeLight')}</option>
          <option value="dark">{t('themeDark')}</option>
        </select>
      </label>
      <IconButton label={t('settings')} icon={Settings} onClick={() => shell.openDialog('settings')} />
      <IconButton label={t('shortcuts')} icon={Keyboard} onClick={() => shell.openDialog('shortcuts')} />
    </div>
  )
}
