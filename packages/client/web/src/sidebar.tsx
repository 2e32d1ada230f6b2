// The sidebar: new session, search by title, workspaces with their sessions newest first (title,
// status dot, relative time), and per-session rename / fork / archive from a menu.
import { useEffect, useMemo, useState, type KeyboardEvent } from 'react'
import { Slot, useCtx, useStore, useT } from '@dsh/client-runtime'
import {
  Archive,
  Ellipsis,
  Folder,
  GitFork,
  IconButton,
  Menu,
  Pencil,
  Plus,
  Search,
  StatusDot,
} from '@dsh/client-design'
import type { SessionRow } from '@dsh/web-protocol'
import { NS } from './messages.ts'
import {
  archiveSession,
  forkSession,
  groupSessions,
  relativeTime,
  renameSession,
  titleOf,
  type Group,
} from './sessions.ts'
import { useShell } from './state.ts'

/** The current time, refreshed every minute (relative times in the list follow it). */
function useMinute(): number {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 60_000)
    return () => clearInterval(timer)
  }, [])
  return now
}

const PAGE = 100

export function Sidebar() {
  const ctx = useCtx()
  const t = useT(NS)
  const catalog = useStore(ctx.catalog.state)
  const route = useStore(ctx.router.route)
  const shell = useShell()
  const [query, setQuery] = useState('')
  const groups = useMemo(
    () => groupSessions(catalog.sessions, catalog.workspaces, query),
    [catalog.sessions, catalog.workspaces, query],
  )
  return (
    <nav className="sidebar" aria-label={t('sessions')} id="dsh-sidebar">
      {/* The level above the workspace groups' <h3>, unseen (the nav is labelled already). */}
      <h2 className="visually-hidden">{t('sessions')}</h2>
      <div className="sidebar-top">
        <span className="wordmark">dsh</span>
        <Slot name="sidebar.header" />
      </div>
      <div className="sidebar-actions">
        <button
          type="button"
          className="new-session"
          onClick={() => {
            shell.closeDrawer()
            shell.newSession()
          }}
          data-testid="new-session"
        >
          <Plus size={16} aria-hidden="true" />
          {t('newSession')}
        </button>
      </div>
      <div className="search-box">
        <Search size={14} aria-hidden="true" />
        <input
          ref={shell.searchRef}
          className="search"
          type="search"
          placeholder={t('search')}
          aria-label={t('search')}
          value={query}
          onChange={(e) => setQuery(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              setQuery('')
              e.currentTarget.blur()
            }
          }}
        />
      </div>
      <div className="session-groups">
        {catalog.loaded && catalog.sessions.length === 0 ? <p className="muted">{t('noSessions')}</p> : null}
        {query && groups.every((g) => g.rows.length === 0) ? <p className="muted">{t('noMatch', { query })}</p> : null}
        {groups.map((group) => (
          <SessionGroup key={group.key} group={group} current={route.sessionId} />
        ))}
      </div>
      <div className="sidebar-bottom">
        <Slot name="sidebar.footer" />
      </div>
    </nav>
  )
}

function SessionGroup({ group, current }: { group: Group; current?: string }) {
  const t = useT(NS)
  const [limit, setLimit] = useState(PAGE)
  const now = useMinute()
  const shown = group.rows.slice(0, limit)
  return (
    <section className="session-group" aria-label={group.name}>
      <h3 title={group.path}>
        <Folder size={13} aria-hidden="true" />
        <span>{group.name}</span>
        {/* Per-workspace actions of browser halves (e.g. Open in editor): {path, name}. */}
        <Slot name="sidebar.workspace.actions" props={{ path: group.path, name: group.name }} />
      </h3>
      <ul>
        {shown.map((row) => (
          <SessionItem key={row.sessionId} row={row} active={row.sessionId === current} now={now} />
        ))}
      </ul>
      {group.rows.length > limit ? (
        <button type="button" className="link" onClick={() => setLimit(limit + PAGE)}>
          {t('showMore', { count: Math.min(PAGE, group.rows.length - limit) })}
        </button>
      ) : null}
    </section>
  )
}

function SessionItem({ row, active, now }: { row: SessionRow; active: boolean; now: number }) {
  const ctx = useCtx()
  const t = useT(NS)
  const shell = useShell()
  const lang = useStore(ctx.locale.current)
  const [editing, setEditing] = useState(false)
  const title = titleOf(row) ?? t('untitled')
  const run = (fn: () => Promise<unknown>) => {
    void fn().catch((error) => console.warn(`[dsh] ${(error as Error).message}`))
  }
  const onRenameKey = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'Enter') {
      const value = e.currentTarget.value.trim()
      setEditing(false)
      if (value && value !== title) run(() => renameSession(ctx, row, value))
    } else if (e.key === 'Escape') setEditing(false)
  }
  const busy = row.status === 'running' || row.status === 'waiting'
  const when = relativeTime(row.updatedAt, now, lang)
  return (
    <li className={'session-item' + (active ? ' active' : '')} data-session-id={row.sessionId} data-status={row.status}>
      {editing ? (
        <input
          className="rename"
          defaultValue={titleOf(row) ?? ''}
          aria-label={t('renamePrompt')}
          // biome-ignore lint/a11y/noAutofocus: the field appears when the user chose Rename; the focus goes where they are about to type
          autoFocus
          onKeyDown={onRenameKey}
          onBlur={() => setEditing(false)}
        />
      ) : (
        <a
          href={`/s/${encodeURIComponent(row.sessionId)}`}
          aria-current={active ? 'page' : undefined}
          onClick={(e) => {
            if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return
            e.preventDefault()
            shell.closeDrawer()
            ctx.router.openSession(row.sessionId)
          }}
        >
          {busy ? (
            <StatusDot status={row.status} label={t(row.status === 'running' ? 'statusRunning' : 'statusWaiting')} />
          ) : null}
          <span className="title">{title}</span>
          {when ? (
            <time className="when" dateTime={new Date(row.updatedAt).toISOString()}>
              {when}
            </time>
          ) : null}
        </a>
      )}
      <Menu
        label={t('sessionActions')}
        trigger={<IconButton className="item-actions" label={t('sessionActions')} icon={Ellipsis} tooltip={false} />}
        items={[
          // The field takes the focus: the menu must not hand it back to its trigger (a blur would
          // close the field again before anyone types; seen on a loaded machine).
          { label: t('rename'), icon: Pencil, movesFocus: true, onSelect: () => setEditing(true) },
          {
            label: t('fork'),
            icon: GitFork,
            onSelect: () => run(async () => ctx.router.openSession((await forkSession(ctx, row)).sessionId)),
          },
          'separator',
          { label: t('archive'), icon: Archive, danger: true, onSelect: () => run(() => archiveSession(ctx, row)) },
        ]}
      />
    </li>
  )
}
