// The command palette (Ctrl/Cmd+K): one field that finds sessions by title and the shell's
// commands (new session, side panel, settings, shortcuts, theme, language), run with Enter.
// A combobox over a listbox: ↑/↓ move, Enter runs, Esc closes.
import { useMemo, useState, type KeyboardEvent } from 'react'
import { useCtx, useStore, useT } from '@dsh/client-runtime'
import {
  Dialog,
  Keyboard,
  type LucideIcon,
  MessageSquare,
  Monitor,
  Moon,
  PanelRight,
  Plus,
  Settings,
  Sun,
  Languages,
} from '@dsh/client-design'
import { NS } from './messages.ts'
import { cleanTitle, titleOf } from './sessions.ts'
import { useShell } from './state.ts'

interface Item {
  id: string
  group: 'sessions' | 'commands'
  label: string
  detail?: string
  icon: LucideIcon
  run(): void
}

const MAX_SESSIONS = 8

export function CommandPalette({ onClose }: { onClose: () => void }) {
  const ctx = useCtx()
  const t = useT(NS)
  const shell = useShell()
  const catalog = useStore(ctx.catalog.state)
  const lang = useStore(ctx.locale.current)
  const [query, setQuery] = useState('')
  const [active, setActive] = useState(0)
  const items = useMemo<Item[]>(() => {
    const q = query.trim().toLowerCase()
    const close = (fn: () => void) => () => {
      onClose()
      fn()
    }
    const commands: Item[] = [
      {
        id: 'new',
        group: 'commands',
        label: t('newSession'),
        detail: 'Alt+N',
        icon: Plus,
        run: close(shell.newSession),
      },
      {
        id: 'panel',
        group: 'commands',
        label: t('togglePanel'),
        detail: 'Alt+P',
        icon: PanelRight,
        run: close(shell.togglePanel),
      },
      {
        id: 'settings',
        group: 'commands',
        label: t('settings'),
        icon: Settings,
        run: () => shell.openDialog('settings'),
      },
      {
        id: 'shortcuts',
        group: 'commands',
        label: t('shortcuts'),
        detail: '?',
        icon: Keyboard,
        run: () => shell.openDialog('shortcuts'),
      },
      {
        id: 'theme-light',
        group: 'commands',
        label: `${t('theme')}: ${t('themeLight')}`,
        icon: Sun,
        run: close(() => ctx.theme.set('light')),
      },
      {
        id: 'theme-dark',
        group: 'commands',
        label: `${t('theme')}: ${t('themeDark')}`,
        icon: Moon,
        run: close(() => ctx.theme.set('dark')),
      },
      {
        id: 'theme-system',
        group: 'commands',
        label: `${t('theme')}: ${t('themeSystem')}`,
        icon: Monitor,
        run: close(() => ctx.theme.set('system')),
      },
      {
        id: 'language',
        group: 'commands',
        label: `${t('language')}: ${lang === 'en' ? '中文' : 'English'}`,
        icon: Languages,
        run: close(() => ctx.locale.set(lang === 'en' ? 'zh' : 'en')),
      },
    ]
    const sessions: Item[] = []
    for (const row of catalog.sessions) {
      if (sessions.length >= MAX_SESSIONS) break
      const title = titleOf(row) ?? t('untitled')
      if (q && !title.toLowerCase().includes(q)) continue
      sessions.push({
        id: `session:${row.sessionId}`,
        group: 'sessions',
        label: title,
        detail: cleanTitle(row.cwd.split('/').filter(Boolean).pop()),
        icon: MessageSquare,
        run: close(() => ctx.router.openSession(row.sessionId)),
      })
    }
    return [...sessions, ...commands.filter((c) => !q || c.label.toLowerCase().includes(q))]
  }, [query, catalog.sessions, ctx, t, shell, lang, onClose])
  const current = Math.min(active, Math.max(0, items.length - 1))
  const onKey = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault()
      const step = e.key === 'ArrowDown' ? 1 : -1
      setActive((current + step + items.length) % Math.max(1, items.length))
    } else if (e.key === 'Enter' && !e.nativeEvent.isComposing) {
      e.preventDefault()
      items[current]?.run()
    }
  }
  const optionId = (i: number) => `dsh-palette-option-${i}`
  let lastGroup: string | undefined
  return (
    <Dialog
      open
      onOpenChange={(open) => !open && onClose()}
      title={t('palette')}
      closeLabel={t('close')}
      size="md"
      testId="command-palette"
      className="palette"
    >
      <input
        className="palette-input"
        // biome-ignore lint/a11y/noAutofocus: the palette is opened to type into this field; the dialog keeps a focus already inside it
        autoFocus
        role="combobox"
        aria-label={t('paletteSearch')}
        aria-expanded="true"
        aria-controls="dsh-palette-list"
        aria-autocomplete="list"
        aria-activedescendant={items.length ? optionId(current) : undefined}
        placeholder={t('paletteSearch')}
        value={query}
        onChange={(e) => {
          setQuery(e.target.value)
          setActive(0)
        }}
        onKeyDown={onKey}
      />
      <div className="palette-list" id="dsh-palette-list" role="listbox" aria-label={t('palette')}>
        {items.length === 0 ? <p className="muted">{t('noMatch', { query })}</p> : null}
        {items.map((item, i) => {
          const heading = item.group !== lastGroup ? t(`palette.${item.group}`) : undefined
          lastGroup = item.group
          const Icon = item.icon
          return (
            <div key={item.id} role="presentation">
              {heading ? (
                <div className="palette-group" role="presentation">
                  {heading}
                </div>
              ) : null}
              <div
                id={optionId(i)}
                role="option"
                tabIndex={-1}
                aria-selected={i === current}
                className="palette-option"
                data-palette-item={item.id}
                onMouseMove={() => i !== current && setActive(i)}
                onClick={() => item.run()}
                onKeyDown={(e) => e.key === 'Enter' && item.run()}
              >
                <Icon size={15} aria-hidden="true" />
                <span className="palette-label">{item.label}</span>
                {item.detail ? <span className="palette-detail">{item.detail}</span> : null}
              </div>
            </div>
          )
        })}
      </div>
    </Dialog>
  )
}
