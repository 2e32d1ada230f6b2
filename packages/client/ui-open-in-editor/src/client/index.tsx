// @dsh/ui-open-in-editor/client: an "Open in editor" action on each workspace heading of the
// sidebar (the shell's `sidebar.workspace.actions` slot). It calls `host.openPath` for the
// workspace's folder: the host (open-in-editor row) starts the user's editor on its own desktop
// through the subprocess seam. The method is loopback-only, so the action is offered only on a page
// opened through a loopback address; a failure (no editor set, the editor exited non-zero) shows
// as the action's one-line alert.
import type { Context } from 'cordis'
import { useState } from 'react'
import { installStyles, useT } from '@dsh/client-runtime'
import { FilePen, IconButton } from '@dsh/client-design'
import { hostOpenPath } from '@dsh/open-in-editor/contract'

export const NAMESPACE = 'openInEditor'
export const name = '@dsh/ui-open-in-editor'
export const inject = ['slots', 'locale', 'remote']

/** The props the shell gives each entry of the slot: the workspace (or folder) of one heading. */
export interface WorkspaceActionProps {
  path: string
  name: string
}
declare module '@dsh/client-runtime' {
  interface SlotProps {
    'sidebar.workspace.actions': WorkspaceActionProps
  }
}

const en = {
  open: 'Open {name} in editor',
  failed: 'Could not open {name}: {message}',
}
const zh: Record<keyof typeof en, string> = {
  open: '在编辑器中打开 {name}',
  failed: '无法打开 {name}：{message}',
}

/** Whether the page was opened through a loopback address (the host refuses others anyway). */
export function isLoopbackPage(hostname = globalThis.location?.hostname ?? ''): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

const CSS = `
.dsh-open-in-editor { margin-left: auto; display: inline-flex; align-items: center; }
.dsh-open-in-editor .dsh-icon-btn { opacity: .55; }
.session-group h3:hover .dsh-open-in-editor .dsh-icon-btn, .dsh-open-in-editor .dsh-icon-btn:focus-visible { opacity: 1; }
.dsh-open-in-editor-error { color: var(--dsh-color-danger, #c0362c); font-weight: normal; margin-left: 4px; }
`

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-open-in-editor: stylesheet')

  function Action({ path, name: label }: WorkspaceActionProps) {
    const t = useT(NAMESPACE)
    const [busy, setBusy] = useState(false)
    const [error, setError] = useState<string | undefined>(undefined)
    if (!isLoopbackPage() || !path) return null
    const open = () => {
      setBusy(true)
      setError(undefined)
      ctx.remote.call(hostOpenPath, { path }).then(
        () => setBusy(false),
        (e: Error) => {
          setBusy(false)
          setError(e.message)
        },
      )
    }
    return (
      <span className="dsh-open-in-editor">
        <IconButton
          label={t('open', { name: label })}
          icon={FilePen}
          size={13}
          disabled={busy}
          data-open-in-editor={path}
          onClick={(e) => {
            // The heading is not a button; keep the click from reaching anything around it.
            e.stopPropagation()
            open()
          }}
        />
        {error ? (
          <span className="dsh-open-in-editor-error" role="alert" title={error}>
            {t('failed', { name: label, message: error })}
          </span>
        ) : null}
      </span>
    )
  }
  ctx.slots.register('sidebar.workspace.actions', { id: 'ui-open-in-editor', order: 10, component: Action })
}

export default { name, inject, apply }
