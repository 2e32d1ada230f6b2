// @dsh/ui-attachment/client: attach (a button in the composer's tools), paste or drop images into
// the composer. Each image file is uploaded to `POST /attachments` (JSON, base64) (stored
// content-addressed by the host) and the returned token (`[image sha256:<hex> <name>]`) is
// inserted at the caret; the composer shows it as a thumbnail, the message carries the token and
// the host sends the pixels to models that accept images. Non-image files and images over the
// limit are refused with the host's one-line reason; the composer text is never touched then.
import type { Context } from 'cordis'
import { useRef } from 'react'
import { Store, useStore, useT, type SessionSlotProps } from '@dsh/client-runtime'
import { IconButton, Paperclip } from '@dsh/client-design'

export const NAMESPACE = 'attachment'
export const name = '@dsh/ui-attachment'
export const inject = ['slots', 'locale']

const en = {
  uploading: 'Uploading {name}…',
  refused: '{name}: {message}',
  notImage: 'not an image (PNG, JPEG, GIF or WebP)',
  dismiss: 'Dismiss',
  attach: 'Attach images',
}
const zh: Record<keyof typeof en, string> = {
  uploading: '正在上传 {name}…',
  refused: '{name}: {message}',
  notImage: '不是图片(PNG、JPEG、GIF 或 WebP)',
  dismiss: '关闭',
  attach: '添加图片',
}

const CSS = `
.dsh-attach-status { position: fixed; left: 50%; transform: translateX(-50%); bottom: 150px; z-index: 26; background: var(--bg, #fff); color: var(--fg, #111);
  border: 1px solid var(--border, #ddd); border-radius: 8px; padding: 6px 12px; box-shadow: 0 6px 24px rgb(0 0 0 / .18); font-size: 13px; display: flex; gap: 10px; align-items: center; }
.dsh-attach-status.error { border-color: var(--danger, #c0362c); color: var(--danger, #c0362c); }
textarea[data-composer="true"].dsh-attach-drop { outline: 2px dashed var(--accent, #2f6fed); }
.dsh-composer-tools .dsh-attach-button { padding: 0; }
`

type Status = { kind: 'uploading' | 'error'; text: string } | undefined
const valueSetter =
  typeof HTMLTextAreaElement === 'undefined'
    ? undefined
    : Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value')?.set
/** The formats the host admits (the file dialog offers these; the host checks the bytes). */
const ACCEPT = 'image/png,image/jpeg,image/gif,image/webp'
const composerOf = (from: Element | null): HTMLTextAreaElement | null =>
  from?.closest('form')?.querySelector<HTMLTextAreaElement>('textarea[data-composer="true"]') ??
  document.querySelector<HTMLTextAreaElement>('textarea[data-composer="true"]')
const isComposer = (target: EventTarget | null): target is HTMLTextAreaElement =>
  typeof HTMLTextAreaElement !== 'undefined' &&
  target instanceof HTMLTextAreaElement &&
  target.dataset.composer === 'true'

/** Inserts `text` at the caret of the composer (the composer sees an ordinary input event). */
function insertAtCaret(el: HTMLTextAreaElement, text: string): void {
  const start = el.selectionStart ?? el.value.length
  const end = el.selectionEnd ?? start
  const before = el.value.slice(0, start)
  const pad = before && !/\s$/.test(before) ? ' ' : ''
  const value = before + pad + text + ' ' + el.value.slice(end)
  valueSetter?.call(el, value)
  el.dispatchEvent(new Event('input', { bubbles: true }))
  el.focus()
  el.selectionStart = el.selectionEnd = start + pad.length + text.length + 1
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  const status = new Store<Status>(undefined)
  const t = (key: keyof typeof en, vars?: Record<string, string | number>) => ctx.locale.t(NAMESPACE, key, vars)

  const upload = async (el: HTMLTextAreaElement, files: File[]) => {
    for (const file of files) {
      const label = file.name || 'image'
      status.set({ kind: 'uploading', text: t('uploading', { name: label }) })
      try {
        const data = await new Promise<string>((resolve, reject) => {
          const reader = new FileReader()
          reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''))
          reader.onerror = () => reject(reader.error ?? new Error('the file could not be read'))
          reader.readAsDataURL(file)
        })
        const response = await fetch('/attachments', {
          method: 'POST',
          body: JSON.stringify({ name: label, data }),
          headers: { 'content-type': 'application/json' },
          credentials: 'same-origin',
        })
        const body = (await response.json().catch(() => ({}))) as { token?: string; error?: { message?: string } }
        if (!response.ok || !body.token) throw new Error(body.error?.message ?? `HTTP ${response.status}`)
        insertAtCaret(el, body.token)
        status.set(undefined)
      } catch (error) {
        status.set({ kind: 'error', text: t('refused', { name: label, message: (error as Error).message }) })
        return
      }
    }
  }

  ctx.effect(() => {
    if (typeof document === 'undefined') return () => {}
    const style = document.createElement('style')
    style.dataset.owner = name
    style.textContent = CSS
    document.head.append(style)
    const onPaste = (e: ClipboardEvent) => {
      if (!isComposer(e.target)) return
      const files = [...(e.clipboardData?.files ?? [])]
      if (!files.length) return
      // Files pasted: handled here (text pastes go to the composer as usual).
      e.preventDefault()
      void upload(e.target, files)
    }
    const onDragOver = (e: DragEvent) => {
      if (!isComposer(e.target) || !e.dataTransfer?.types.includes('Files')) return
      e.preventDefault()
      e.target.classList.add('dsh-attach-drop')
    }
    const onDragLeave = (e: DragEvent) => isComposer(e.target) && e.target.classList.remove('dsh-attach-drop')
    const onDrop = (e: DragEvent) => {
      if (!isComposer(e.target)) return
      e.target.classList.remove('dsh-attach-drop')
      const files = [...(e.dataTransfer?.files ?? [])]
      if (!files.length) return
      e.preventDefault()
      void upload(e.target, files)
    }
    document.addEventListener('paste', onPaste, true)
    document.addEventListener('dragover', onDragOver, true)
    document.addEventListener('dragleave', onDragLeave, true)
    document.addEventListener('drop', onDrop, true)
    return () => {
      style.remove()
      document.removeEventListener('paste', onPaste, true)
      document.removeEventListener('dragover', onDragOver, true)
      document.removeEventListener('dragleave', onDragLeave, true)
      document.removeEventListener('drop', onDrop, true)
    }
  }, 'ui-attachment: paste and drop')

  function StatusLine() {
    const tr = useT(NAMESPACE)
    const current = useStore(status)
    if (!current) return null
    return (
      <div
        className={`dsh-attach-status${current.kind === 'error' ? ' error' : ''}`}
        data-attachment-status={current.kind}
        role={current.kind === 'error' ? 'alert' : 'status'}
      >
        <span>{current.text}</span>
        {current.kind === 'error' ? (
          <button type="button" onClick={() => status.set(undefined)}>
            {tr('dismiss')}
          </button>
        ) : null}
      </div>
    )
  }
  /** The composer's attach button: a file dialog whose images go the way of a paste. */
  function AttachButton({ row }: SessionSlotProps) {
    const tr = useT(NAMESPACE)
    const picker = useRef<HTMLInputElement>(null)
    const busy = useStore(status)?.kind === 'uploading'
    return (
      <>
        <IconButton
          label={tr('attach')}
          icon={Paperclip}
          className="dsh-attach-button"
          data-action="attach"
          disabled={row?.archived === true || busy}
          onClick={() => picker.current?.click()}
        />
        <input
          ref={picker}
          type="file"
          accept={ACCEPT}
          multiple
          hidden
          tabIndex={-1}
          aria-hidden="true"
          data-attach-input="true"
          onChange={(e) => {
            const input = e.currentTarget
            const files = [...(input.files ?? [])]
            // Cleared at once, so choosing the same file again fires another change.
            input.value = ''
            const el = composerOf(input)
            if (el && files.length) void upload(el, files)
          }}
        />
      </>
    )
  }

  ctx.slots.register('app.overlay', { id: 'ui-attachment', order: 30, component: StatusLine })
  ctx.slots.register('conversation.composer.tools', { id: 'ui-attachment', order: -10, component: AttachButton })
}

export default { name, inject, apply }
