// @dsh/ui-directory-picker/client: an "Add workspace" action in the sidebar header opens a folder
// browser over host.listDirectory (directories only; Up, open a folder, show hidden) and adds the
// folder shown as a workspace with workspaces.create, then opens a new session in it.
import type { Context } from 'cordis'
import { useEffect, useState } from 'react'
import { Store, useStore, useT } from '@dsh/client-runtime'
import { hostListDirectory, type DirectoryListing } from '@dsh/directory-picker/contract'
import { workspacesCreate, workspacesWorlds, type WireWorld } from '@dsh/workspace/contract'

/** The props the shell gives each entry of the slot: the workspace (or folder) of one heading. */
declare module '@dsh/client-runtime' {
  interface SlotProps {
    'sidebar.workspace.actions': { path: string; name: string }
  }
}

export const NAMESPACE = 'directoryPicker'
export const name = '@dsh/ui-directory-picker'
export const inject = ['slots', 'locale', 'remote', 'catalog']

const en = {
  open: 'Add workspace',
  title: 'Add a workspace',
  up: 'Up',
  hidden: 'Show hidden',
  use: 'Add this folder',
  cancel: 'Cancel',
  loading: 'Loading…',
  empty: 'No folders here.',
  truncated: 'Showing {shown} of {total}.',
  failed: '{message}',
  world: 'Runs on',
  runsOn: '{name} runs on {world}: {description}',
}
const zh: Record<keyof typeof en, string> = {
  open: '添加工作区',
  title: '添加工作区',
  up: '上一级',
  hidden: '显示隐藏',
  use: '添加此文件夹',
  cancel: '取消',
  loading: '加载中…',
  empty: '这里没有文件夹。',
  truncated: '显示 {shown} / {total}。',
  failed: '{message}',
  world: '运行于',
  runsOn: '{name} 运行于 {world}：{description}',
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  const open = new Store(false)

  function Action() {
    const t = useT(NAMESPACE)
    return (
      <button type="button" data-directory-picker-open="true" onClick={() => open.set(true)}>
        {t('open')}
      </button>
    )
  }

  function Dialog() {
    const t = useT(NAMESPACE)
    const isOpen = useStore(open)
    const [path, setPath] = useState<string | undefined>(undefined)
    const [hidden, setHidden] = useState(false)
    const [listing, setListing] = useState<DirectoryListing | undefined>(undefined)
    const [error, setError] = useState<string | undefined>(undefined)
    const [busy, setBusy] = useState(false)
    // The worlds this host offers (more than this machine only with `dsh web --world NAME`).
    const [worlds, setWorlds] = useState<{ worlds: WireWorld[]; default: string } | undefined>(undefined)
    const [world, setWorld] = useState<string | undefined>(undefined)
    useEffect(() => {
      if (!isOpen) return
      let live = true
      ctx.remote.call(workspacesWorlds, {}).then(
        (r) => {
          if (!live) return
          setWorlds(r)
          setWorld(r.default)
        },
        () => live && setWorlds(undefined),
      )
      return () => {
        live = false
      }
    }, [isOpen])
    useEffect(() => {
      if (!isOpen) return
      let live = true
      setError(undefined)
      ctx.remote
        .call(hostListDirectory, { ...(path ? { path } : {}), showHidden: hidden, directoriesOnly: true, limit: 500 })
        .then(
          (r) => live && setListing(r),
          (e: Error) => live && setError(e.message),
        )
      return () => {
        live = false
      }
    }, [isOpen, path, hidden])
    if (!isOpen) return null
    const close = () => {
      open.set(false)
      setPath(undefined)
      setListing(undefined)
      setError(undefined)
    }
    const add = async () => {
      if (!listing) return
      setBusy(true)
      try {
        await ctx.remote.call(workspacesCreate, {
          path: listing.path,
          ...(worlds && worlds.worlds.length > 1 && world ? { world } : {}),
        })
        await ctx.catalog.refresh()
        close()
      } catch (e) {
        setError((e as Error).message)
      } finally {
        setBusy(false)
      }
    }
    return (
      // biome-ignore lint/a11y/noStaticElementInteractions lint/a11y/useKeyWithClickEvents: a click on the backdrop is the pointer's way out; from the keyboard, the Cancel button closes the dialog
      <div className="dialog-backdrop" onClick={(e) => e.target === e.currentTarget && close()}>
        <div
          className="dialog"
          role="dialog"
          aria-modal="true"
          aria-label={t('title')}
          data-directory-picker="true"
          style={{ width: 'min(560px, 92vw)' }}
        >
          <header>
            <h2>{t('title')}</h2>
          </header>
          <div style={{ display: 'flex', gap: 8, alignItems: 'center', marginBottom: 6 }}>
            <button
              type="button"
              disabled={!listing?.parent}
              onClick={() => listing?.parent && setPath(listing.parent)}
            >
              {t('up')}
            </button>
            <code
              data-directory-path="true"
              style={{ flex: 1, overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap' }}
            >
              {listing?.path ?? '…'}
            </code>
            <label>
              <input type="checkbox" checked={hidden} onChange={(e) => setHidden(e.target.checked)} /> {t('hidden')}
            </label>
          </div>
          <div
            role="listbox"
            style={{ maxHeight: '50vh', overflowY: 'auto', border: '1px solid var(--border)', borderRadius: 6 }}
          >
            {!listing && !error ? <p className="muted">{t('loading')}</p> : null}
            {listing && listing.entries.length === 0 ? <p className="muted">{t('empty')}</p> : null}
            {listing?.entries.map((entry) => (
              <div
                key={entry.path}
                role="option"
                aria-selected={false}
                tabIndex={0}
                data-directory-entry={entry.name}
                style={{ padding: '3px 8px', cursor: 'pointer' }}
                onClick={() => setPath(entry.path)}
                onKeyDown={(e) => {
                  if (e.key !== 'Enter' && e.key !== ' ') return
                  e.preventDefault()
                  setPath(entry.path)
                }}
              >
                📁 {entry.name}
              </div>
            ))}
          </div>
          {worlds && worlds.worlds.length > 1 ? (
            <label style={{ display: 'flex', gap: 8, alignItems: 'center', marginTop: 8 }}>
              {t('world')}
              <select data-directory-world="true" value={world} onChange={(e) => setWorld(e.target.value)}>
                {worlds.worlds.map((w) => (
                  <option key={w.name} value={w.name}>
                    {w.name}: {w.description}
                  </option>
                ))}
              </select>
            </label>
          ) : null}
          {listing?.truncated ? (
            <p className="muted">{t('truncated', { shown: listing.entries.length, total: listing.total })}</p>
          ) : null}
          {error ? (
            <p className="error" role="alert">
              {t('failed', { message: error })}
            </p>
          ) : null}
          <div style={{ display: 'flex', justifyContent: 'flex-end', gap: 8, marginTop: 10 }}>
            <button type="button" onClick={close}>
              {t('cancel')}
            </button>
            <button
              type="button"
              className="primary"
              data-directory-use="true"
              disabled={!listing || busy}
              onClick={() => void add()}
            >
              {t('use')}
            </button>
          </div>
        </div>
      </div>
    )
  }

  // Each workspace heading names its world, on a host that offers more than this machine.
  const offered = new Store<{ worlds: WireWorld[]; default: string } | undefined>(undefined)
  ctx.remote.call(workspacesWorlds, {}).then(
    (r) => offered.set(r),
    () => {},
  )
  function WorldBadge(props: { path: string; name: string }) {
    const t = useT(NAMESPACE)
    const worlds = useStore(offered)
    const catalog = useStore(ctx.catalog.state)
    if (!worlds || worlds.worlds.length < 2) return null
    const workspace = catalog.workspaces.find((w) => w.path === props.path)
    const world = workspace?.world ?? worlds.default
    const description = worlds.worlds.find((w) => w.name === world)?.description ?? ''
    return (
      <span
        className="muted"
        data-workspace-world={world}
        title={t('runsOn', { name: props.name, world, description })}
        style={{ fontSize: '0.8em', fontWeight: 'normal', marginLeft: 4 }}
      >
        {world}
      </span>
    )
  }

  ctx.slots.register('sidebar.header', { id: 'ui-directory-picker', order: 20, component: Action })
  ctx.slots.register('sidebar.workspace.actions', { id: 'ui-directory-picker-world', order: 5, component: WorldBadge })
  ctx.slots.register('app.overlay', { id: 'ui-directory-picker', order: 40, component: Dialog })
}

export default { name, inject, apply }
