// Long outputs are never cut silently: the first `previewLines` show with an explicit
// "Show all N lines"; expanded, a text past `virtualizeAbove` lines renders only the rows in
// view (fixed row height, a spacer keeps the scroll range), so 100,000 lines stay cheap.
import { useCallback, useMemo, useRef, useState, type ReactNode } from 'react'
import { linesOf } from '../present.ts'
import type { Translate } from './strings.ts'

export interface LongTextProps {
  text: string
  t: Translate
  previewLines?: number
  virtualizeAbove?: number
  /** Row height in px of the virtual window (matches the stylesheet's line height). */
  rowHeight?: number
  /** Renders one line (e.g. diff colouring); default plain text. */
  renderLine?: (line: string, index: number) => ReactNode
  className?: string
  /** Start expanded (e.g. a card the user opened to read everything). */
  initiallyExpanded?: boolean
}

export function LongText({
  text,
  t,
  previewLines = 40,
  virtualizeAbove = 2000,
  rowHeight = 18,
  renderLine,
  className,
  initiallyExpanded = false,
}: LongTextProps) {
  const lines = useMemo(() => linesOf(text), [text])
  const [expanded, setExpanded] = useState(initiallyExpanded)
  const count = lines.length
  const cut = !expanded && count > previewLines
  const shown = cut ? lines.slice(0, previewLines) : lines
  const render = renderLine ?? ((line: string) => line)
  return (
    <div className={`dsh-long ${className ?? ''}`} data-lines={count}>
      {expanded && count > virtualizeAbove ? (
        <VirtualLines lines={lines} rowHeight={rowHeight} render={render} />
      ) : (
        <pre
          className="dsh-long-pre"
          // biome-ignore lint/a11y/noNoninteractiveTabindex: the output scrolls sideways; keyboard users must be able to focus it to scroll it
          tabIndex={0}
        >
          {shown.map((line, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the lines of one text are positional and may repeat; the index is their identity
            <div key={i} className="dsh-line">
              {render(line, i) || '\u200b'}
            </div>
          ))}
        </pre>
      )}
      {count > previewLines ? (
        <div className="dsh-long-bar">
          {cut ? <span className="dsh-muted">{t('showingOf', { shown: previewLines, count })}</span> : null}
          <button
            type="button"
            className="dsh-link-button"
            aria-expanded={expanded}
            onClick={() => setExpanded(!expanded)}
          >
            {expanded ? t('showLess') : t('showAll', { count })}
          </button>
        </div>
      ) : null}
    </div>
  )
}

function VirtualLines({
  lines,
  rowHeight,
  render,
}: {
  lines: string[]
  rowHeight: number
  render: (line: string, index: number) => ReactNode
}) {
  const viewport = 24 * rowHeight
  const [top, setTop] = useState(0)
  const ref = useRef<HTMLDivElement>(null)
  const onScroll = useCallback(() => setTop(ref.current?.scrollTop ?? 0), [])
  const overscan = 20
  const first = Math.max(0, Math.floor(top / rowHeight) - overscan)
  const last = Math.min(lines.length, Math.ceil((top + viewport) / rowHeight) + overscan)
  const rows: ReactNode[] = []
  for (let i = first; i < last; i++) {
    rows.push(
      <div
        key={i}
        className="dsh-line"
        style={{ position: 'absolute', top: i * rowHeight, height: rowHeight, left: 0, right: 0 }}
      >
        {render(lines[i], i) || '\u200b'}
      </div>,
    )
  }
  return (
    <div
      ref={ref}
      className="dsh-long-pre dsh-virtual"
      style={{ height: viewport, overflow: 'auto', position: 'relative' }}
      onScroll={onScroll}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling viewport of a long output; keyboard users must be able to focus it to scroll it
      tabIndex={0}
      data-virtual="true"
    >
      <div style={{ height: lines.length * rowHeight, position: 'relative' }}>{rows}</div>
    </div>
  )
}
