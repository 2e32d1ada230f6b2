// The sidebar: new session, search by title, workspaces with their sessions newest first, and
// per-session rename / fork / archive.
import { useMemo, useRef, useState, type KeyboardEvent } from 'react'
import { Slot, useCtx, useStore, useT } from '@dsh/client-runtime'
import type { SessionRow } from '@dsh/web-protocol'
import { NS } from './messages.ts'
import { archiveSession, forkSession, groupSessions, renameSession, titleOf, type Group } from './sessions.ts'
import { useShell } from './state.ts'

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
    <nav className="sidebar" aria-label={t('sessions')}>
      <div className="sidebar-top">
        <span className="wordmark">dsh</span>
        <button type="button" className="primary" onClick={() => shell.newSession()} data-testid="new-session">
          + {t('newSession')}
        </button>
        <Slot name="sidebar.header" />
      </div>
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
  const shown = group.rows.slice(0, limit)
  return (
    <section className="session-group" aria-label={group.name}>
      <h3 title={group.path}>{group.name}</h3>
      <ul>
        {shown.map((row) => (
          <SessionItem key={row.sessionId} row={row} active={row.sessionId === current} />
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

function SessionItem({ row, active }: { row: SessionRow; active: boolean }) {
  const ctx = useCtx()
  const t = useT(NS)
  const [menu, setMenu] = useState(false)
  const [editing, setEditing] = useState(false)
  const input = useRef<HTMLInputElement>(null)
  const title = titleOf(row) ?? t('untitled')
  const run = (fn: () => Promise<unknown>) => {
    setMenu(false)
    void fn().catch((error) => console.warn(`[dsh] ${(error as Error).message}`))
  }
  const onRenameKey = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'Enter') {
      const value = e.currentTarget.value.trim()
      setEditing(false)
      if (value && value !== title) run(() => renameSession(ctx, row, value))
    } else if (e.key === 'Escape') setEditing(false)
  }
  return (
    <li className={'session-item' + (active ? ' active' : '')} data-session-id={row.sessionId} data-status={row.status}>
      {editing ? (
        <input
          ref={input}
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
            ctx.router.openSession(row.sessionId)
          }}
        >
          <span className="title">{title}</span>
          {row.status === 'running' || row.status === 'waiting' ? (
            <span className={'dot ' + row.status} aria-hidden="true" />
          ) : null}
        </a>
      )}
      <button
        type="button"
        className="icon"
        aria-label={t('sessionActions')}
        aria-expanded={menu}
        onClick={() => setMenu(!menu)}
      >
        ⋯
      </button>
      {menu ? (
        <div className="menu" role="menu" onKeyDown={(e) => e.key === 'Escape' && setMenu(false)}>
          <button
            type="button"
            role="menuitem"
            // biome-ignore lint/a11y/noAutofocus: a menu opened from its button moves focus to its first item, as the ARIA menu pattern asks
            autoFocus
            onClick={() => {
              setMenu(false)
              setEditing(true)
            }}
          >
            {t('rename')}
          </button>
          <button
            type="button"
            role="menuitem"
            onClick={() => run(async () => ctx.router.openSession((await forkSession(ctx, row)).sessionId))}
          >
            {t('fork')}
          </button>
          <button type="button" role="menuitem" onClick={() => run(() => archiveSession(ctx, row))}>
            {t('archive')}
          </button>
        </div>
      ) : null}
    </li>
  )
}
