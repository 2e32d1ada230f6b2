// Tool cards: one per kind of call, all sharing the same frame (a header with the tool, what it
// acted on and its status; a body that may collapse). `cardFor(name)` picks the built-in card;
// unknown tools get GenericCard.
import { lazy, memo, Suspense, useState, type ComponentType, type ReactNode } from 'react'
import type { ToolNode } from '@dsh/conversation-model'
import {
  bashView,
  fileChangeView,
  formatDuration,
  progressView,
  summaryView,
  todoView,
  type DiffLine,
} from '../present.ts'
import { LongText } from './long-text.tsx'
import type { Translate } from './strings.ts'

// The thumbnails and viewer of a result's images: a chunk of their own, fetched the first time a
// result carries an image, so the half's entry stays small.
const ResultImages = lazy(() => import('./result-images.tsx'))

/** A finished call's result images, drawn under the header whether or not the body is open. */
function ImagesLine({ node, t }: ToolCardProps) {
  const images = node.result?.images
  if (!images?.length) return null
  return (
    <Suspense fallback={<div className="dsh-muted">{t('images', { count: images.length })}</div>}>
      <ResultImages callKey={node.key} images={images} t={t} />
    </Suspense>
  )
}

export interface ToolCardProps {
  node: ToolNode
  t: Translate
}

function StatusBadge({ node, t }: ToolCardProps) {
  return (
    <span className={`dsh-tool-status dsh-tool-status-${node.status}`} data-status={node.status}>
      {t(`status.${node.status}`)}
    </span>
  )
}

/** A running call's latest progress: a bar when the total is known, the count and the tool's message. */
function ProgressLine({ node, t }: ToolCardProps) {
  const view = progressView(node)
  if (!view) return null
  return (
    <div className="dsh-tool-progress" data-progress={view.count}>
      {view.fraction !== undefined ? (
        <progress className="dsh-tool-progress-bar" max={1} value={view.fraction} aria-label={t('progress')} />
      ) : null}
      <span className="dsh-tool-progress-count">{view.count}</span>
      {view.message ? <span className="dsh-tool-progress-message">{view.message}</span> : null}
    </div>
  )
}

function Frame({
  node,
  t,
  icon,
  title,
  badges,
  children,
  open: initiallyOpen = true,
}: ToolCardProps & { icon: string; title: ReactNode; badges?: ReactNode; children?: ReactNode; open?: boolean }) {
  // Follows `open` (e.g. a failure arriving opens the card) until the user toggles it.
  const [toggled, setOpen] = useState<boolean | undefined>(undefined)
  const open = toggled ?? initiallyOpen
  const duration =
    node.startedAt !== undefined && node.endedAt !== undefined
      ? formatDuration(node.endedAt - node.startedAt)
      : undefined
  return (
    <section className={`dsh-tool dsh-tool-${node.status}`} data-tool={node.name} data-call={node.callId}>
      <header className="dsh-tool-head">
        <button
          type="button"
          className="dsh-tool-toggle"
          aria-expanded={open}
          onClick={() => setOpen(!open)}
          disabled={!children}
        >
          <span className="dsh-tool-icon" aria-hidden="true">
            {icon}
          </span>
          <span className="dsh-tool-name">{node.name}</span>
          <span className="dsh-tool-title">{title}</span>
        </button>
        <span className="dsh-tool-badges">
          {badges}
          {duration && !badges ? <span className="dsh-muted">{duration}</span> : null}
          <StatusBadge node={node} t={t} />
        </span>
      </header>
      <ProgressLine node={node} t={t} />
      <ImagesLine node={node} t={t} />
      {open && children ? <div className="dsh-tool-body">{children}</div> : null}
    </section>
  )
}

function ErrorLine({ node, t }: ToolCardProps) {
  const error = node.result?.error
  if (!node.result?.isError) return null
  return (
    <div className="dsh-tool-error" role="note">
      <strong>{t('error')}: </strong>
      {error?.message ?? node.result.text}
      {error?.code ? <span className="dsh-muted"> ({t('errorCode', { code: error.code })})</span> : null}
    </div>
  )
}

export const BashCard = memo(function BashCard({ node, t }: ToolCardProps) {
  const view = bashView(node)
  const badges: ReactNode[] = []
  if (view.status === 'timeout')
    badges.push(
      <span key="to" className="dsh-badge dsh-badge-bad">
        {t('timedOut')}
      </span>,
    )
  else if (view.signal)
    badges.push(
      <span key="sig" className="dsh-badge dsh-badge-bad">
        {t('signal', { signal: view.signal })}
      </span>,
    )
  else if (view.exitCode !== undefined && view.exitCode !== null) {
    badges.push(
      <span
        key="exit"
        className={`dsh-badge ${view.exitCode === 0 ? 'dsh-badge-ok' : 'dsh-badge-bad'}`}
        data-exit-code={view.exitCode}
      >
        {t('exit', { code: view.exitCode })}
      </span>,
    )
  }
  const duration = formatDuration(view.durationMs)
  if (duration)
    badges.push(
      <span key="dur" className="dsh-muted" data-duration-ms={view.durationMs}>
        {duration}
      </span>,
    )
  return (
    <Frame
      node={node}
      t={t}
      icon="$"
      title={view.description ?? view.command}
      badges={badges.length ? badges : undefined}
    >
      <div className="dsh-terminal">
        <div className="dsh-terminal-command">
          <span aria-hidden="true">$ </span>
          {view.command}
        </div>
        {node.result ? (
          view.output.trim() === '' ? (
            <div className="dsh-muted">{t('noOutput')}</div>
          ) : (
            <LongText text={view.output} t={t} className="dsh-terminal-output" />
          )
        ) : null}
      </div>
      {view.truncated ? (
        <div className="dsh-muted">
          {view.spillPath
            ? t('spilled', { bytes: view.totalBytes ?? '?', path: view.spillPath })
            : t('truncatedOutput')}
        </div>
      ) : null}
      {node.result?.isError && node.result.error?.code !== 'TIMEOUT' && node.result.error?.code !== 'CANCELLED' ? (
        <ErrorLine node={node} t={t} />
      ) : null}
    </Frame>
  )
})

const DIFF_PREFIX: Record<DiffLine['type'], string> = { add: '+', del: '-', ctx: ' ', hunk: '', meta: '' }

function DiffBody({ lines, t }: { lines: DiffLine[]; t: Translate }) {
  const text = lines.map((l) => l.text).join('\n')
  return (
    <LongText
      text={text}
      t={t}
      className="dsh-diff"
      previewLines={80}
      renderLine={(_line, i) => {
        const line = lines[i]
        return (
          <span className={`dsh-diff-${line.type}`} data-diff={line.type}>
            <span className="dsh-diff-no" aria-hidden="true">
              {line.oldNo ?? ''}
            </span>
            <span className="dsh-diff-no" aria-hidden="true">
              {line.newNo ?? ''}
            </span>
            <span className="dsh-diff-sign" aria-hidden="true">
              {DIFF_PREFIX[line.type]}
            </span>
            {line.text}
          </span>
        )
      }}
    />
  )
}

export const DiffCard = memo(function DiffCard({ node, t }: ToolCardProps) {
  const view = fileChangeView(node)
  const badges = (
    <>
      {view.created ? <span className="dsh-badge">{t('created')}</span> : null}
      {view.diff ? (
        <span className="dsh-diff-counts">
          <span className="dsh-add">{t('linesAdded', { count: view.diff.added })}</span>{' '}
          <span className="dsh-del">{t('linesRemoved', { count: view.diff.removed })}</span>
        </span>
      ) : null}
    </>
  )
  return (
    <Frame node={node} t={t} icon="±" title={<span title={view.absolutePath}>{view.path}</span>} badges={badges}>
      <ErrorLine node={node} t={t} />
      {view.diff && view.diff.lines.length > 0 ? <DiffBody lines={view.diff.lines} t={t} /> : null}
      {view.diffOmitted ? <div className="dsh-muted">{t('diffOmitted')}</div> : null}
    </Frame>
  )
})

/** read / grep / glob: one line that expands into the output. */
export const SummaryCard = memo(function SummaryCard({ node, t }: ToolCardProps) {
  const view = summaryView(node)
  const counts =
    view.countsKey && view.counts ? <span className="dsh-muted">{t(view.countsKey, view.counts)}</span> : undefined
  const icon = node.name === 'grep' ? '⌕' : node.name === 'glob' ? '*' : '▤'
  return (
    <Frame node={node} t={t} icon={icon} title={view.subject} badges={counts} open={node.result?.isError === true}>
      {node.result ? (
        node.result.isError ? (
          <ErrorLine node={node} t={t} />
        ) : (
          <LongText text={node.result.text} t={t} />
        )
      ) : undefined}
    </Frame>
  )
})

export const TodoCard = memo(function TodoCard({ node, t }: ToolCardProps) {
  const view = todoView(node)
  return (
    <Frame node={node} t={t} icon="☑" title={t('todo.title')}>
      <ul className="dsh-todo">
        {view.items.map((item, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: todo items carry no id (each call lists them whole) and may repeat; the index is their identity
          <li key={i} className={`dsh-todo-${item.status}`} data-status={item.status}>
            <span className="dsh-todo-box" aria-hidden="true">
              {item.status === 'completed' ? '✔' : item.status === 'in_progress' ? '◐' : '○'}
            </span>
            <span className="dsh-todo-text">{item.content}</span>
            <span className="dsh-sr-only"> ({t(`todo.${item.status}`)})</span>
          </li>
        ))}
      </ul>
      <ErrorLine node={node} t={t} />
    </Frame>
  )
})

export const GenericCard = memo(function GenericCard({ node, t }: ToolCardProps) {
  const args = node.input ? JSON.stringify(node.input, null, 2) : node.arguments
  const invalid = !node.input && node.arguments.trim() !== '' && node.status !== 'streaming'
  return (
    <Frame node={node} t={t} icon="⚙" title={summaryView(node).subject} open={node.result?.isError === true}>
      <div className="dsh-tool-section">{t('arguments')}</div>
      {invalid ? <div className="dsh-muted">{t('invalidArguments')}</div> : null}
      <LongText text={args} t={t} previewLines={20} />
      {node.result ? (
        <>
          <div className="dsh-tool-section">{t('output')}</div>
          {node.result.isError ? (
            <ErrorLine node={node} t={t} />
          ) : (
            <LongText text={node.result.text || t('noOutput')} t={t} />
          )}
        </>
      ) : null}
    </Frame>
  )
})

/** The built-in cards by tool name (what ui-tool registers into `tool.call.toolview`). */
export const BUILTIN_CARDS: Record<string, ComponentType<ToolCardProps>> = {
  bash: BashCard,
  edit: DiffCard,
  write: DiffCard,
  str_replace_editor: DiffCard,
  read: SummaryCard,
  read_image: SummaryCard,
  grep: SummaryCard,
  glob: SummaryCard,
  todo_write: TodoCard,
}

export function cardFor(name: string): ComponentType<ToolCardProps> {
  return BUILTIN_CARDS[name] ?? GenericCard
}
