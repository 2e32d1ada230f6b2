// The shell's dialogs (shortcuts, settings) on the design system's dialog: focus moves into it
// on open and back on close; Escape, the close button and a click outside close it. Its own file
// so that settings.tsx and app.tsx do not import each other.
import type { ReactNode } from 'react'
import { useT } from '@dsh/client-runtime'
import { Dialog as DesignDialog } from '@dsh/client-design'
import { NS } from './messages.ts'

export function Dialog({
  title,
  onClose,
  children,
  testId,
}: {
  title: string
  onClose: () => void
  children: ReactNode
  testId?: string
}) {
  const t = useT(NS)
  return (
    <DesignDialog
      closeLabel={t('close')}
      open
      onOpenChange={(open) => !open && onClose()}
      title={title}
      size="sm"
      {...(testId ? { testId } : {})}
    >
      {children}
    </DesignDialog>
  )
}
