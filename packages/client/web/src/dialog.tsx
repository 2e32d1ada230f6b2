// The modal dialog frame shared by the shell's dialogs (shortcuts, settings): focus moves into it
// on open and back on close, a click on the backdrop or the close button closes it. Its own file
// so that settings.tsx and app.tsx do not import each other.
import { useEffect, useRef } from 'react'
import { useT } from '@dsh/client-runtime'
import { NS } from './messages.ts'

export function Dialog({
  title,
  onClose,
  children,
}: {
  title: string
  onClose: () => void
  children: React.ReactNode
}) {
  const t = useT(NS)
  const ref = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null
    ref.current?.querySelector<HTMLElement>('button, input, select, textarea')?.focus()
    return () => previous?.focus?.()
  }, [])
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions lint/a11y/useKeyWithClickEvents: a click on the backdrop is the pointer's way out; from the keyboard, Escape (the shell's shortcut) and the close button close the dialog
    <div className="dialog-backdrop" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div className="dialog" role="dialog" aria-modal="true" aria-label={title} ref={ref}>
        <header>
          <h2>{title}</h2>
          <button type="button" className="icon" aria-label={t('close')} onClick={onClose}>
            ×
          </button>
        </header>
        {children}
      </div>
    </div>
  )
}
