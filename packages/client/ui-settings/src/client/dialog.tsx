// The Settings dialog: navigation over the `settings.section` entries and the selected page.
import { useEffect, useRef, useState } from 'react'
import { useCtx, useSlotEntries } from '@dsh/client-runtime'
import { NAMESPACE, SECTION_SLOT, useSettingsT } from './names.ts'

export default function SettingsDialog({ onClose }: { onClose: () => void }) {
  const ctx = useCtx()
  const t = useSettingsT()
  const sections = useSlotEntries(SECTION_SLOT)
  const [current, setCurrent] = useState<string>()
  const ref = useRef<HTMLDivElement>(null)
  const active = sections.find((s) => s.id === current) ?? sections[0]
  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null
    ref.current?.querySelector<HTMLElement>('[role=tab]')?.focus()
    return () => previous?.focus?.()
  }, [])
  const label = (id: string) => {
    const text = ctx.locale.t(NAMESPACE, `section.${id}`)
    return text === `section.${id}` ? id : text
  }
  const Page = active?.component
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions lint/a11y/useKeyWithClickEvents: a click on the backdrop is the pointer's way out; from the keyboard, Escape (the shell's shortcut) and the close button close the dialog
    <div className="dialog-backdrop" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div
        className="dialog dsh-settings"
        role="dialog"
        aria-modal="true"
        aria-label={t('title')}
        ref={ref}
        data-testid="settings-dialog"
      >
        <header>
          <h2>{t('title')}</h2>
          <button type="button" className="icon" aria-label={t('close')} onClick={onClose}>
            ×
          </button>
        </header>
        <div className="dsh-settings-body">
          <div className="dsh-settings-nav" role="tablist" aria-orientation="vertical">
            {sections.map((s) => (
              <button
                key={s.id}
                type="button"
                role="tab"
                aria-selected={s === active}
                data-section={s.id}
                onClick={() => setCurrent(s.id)}
              >
                {label(s.id)}
              </button>
            ))}
          </div>
          <section className="dsh-settings-page" role="tabpanel" aria-label={active ? label(active.id) : ''}>
            {Page ? <Page /> : null}
          </section>
        </div>
      </div>
    </div>
  )
}
