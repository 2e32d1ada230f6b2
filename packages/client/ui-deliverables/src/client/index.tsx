// @dsh/ui-deliverables/client: a "Files changed" section in the side panel listing the files the
// latest turn wrote or edited (successful calls only), with +/- line counts; each file opens its
// diff (every change of the turn, in order).
import type { Context } from 'cordis'
import { useMemo, useState } from 'react'
import { installStyles, useT, type SessionSlotProps } from '@dsh/client-runtime'
import { diffLines, lastTurnDeliverables } from '../deliverables.ts'

export const NAMESPACE = 'deliverables'
export const name = '@dsh/ui-deliverables'
export const inject = ['slots', 'locale']

const en = { title: 'Files changed in turn {turn}', diff: 'Diff', hide: 'Hide', created: 'written', edited: 'edited' }
const zh: Record<keyof typeof en, string> = {
  title: '第 {turn} 轮修改的文件',
  diff: '差异',
  hide: '隐藏',
  created: '写入',
  edited: '编辑',
}

const CSS = `
.dsh-deliverable { display: flex; gap: 8px; align-items: baseline; font-size: 12px; }
.dsh-deliverable code { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; flex: 1; }
.dsh-deliverable .add { color: var(--dsh-color-success); } .dsh-deliverable .del { color: var(--dsh-color-danger); }
.dsh-deliverable-diff { font-size: 11px; max-height: 240px; overflow: auto; background: var(--code-bg, #f2f3f5); padding: 4px 6px; border-radius: 4px; margin: 2px 0 6px; }
.dsh-deliverable-diff .add { color: var(--dsh-color-success); } .dsh-deliverable-diff .del { color: var(--dsh-color-danger); }
`

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-deliverables: stylesheet')

  function Deliverables({ feed }: SessionSlotProps) {
    const t = useT(NAMESPACE)
    // biome-ignore lint/correctness/useExhaustiveDependencies: feed.withoutDeltas grows in place (same array); feed.version is what changes when it does
    const { turn, files } = useMemo(() => lastTurnDeliverables(feed.withoutDeltas), [feed.version, feed.withoutDeltas])
    const [open, setOpen] = useState<string | undefined>(undefined)
    if (!files.length) return null
    return (
      <section className="panel-section" data-deliverables={turn}>
        <h3>{t('title', { turn: turn ?? '?' })}</h3>
        {files.map((file) => (
          <div key={file.path} data-deliverable={file.path}>
            <div className="dsh-deliverable">
              <code title={file.path}>{file.path}</code>
              <span className="add">+{file.added}</span>
              <span className="del">−{file.removed}</span>
              <button
                type="button"
                className="link"
                aria-expanded={open === file.path}
                onClick={() => setOpen(open === file.path ? undefined : file.path)}
              >
                {open === file.path ? t('hide') : t('diff')}
              </button>
            </div>
            {open === file.path ? (
              <pre className="dsh-deliverable-diff" data-deliverable-diff={file.path}>
                {file.changes.flatMap((change) => [
                  <div key={`h${change.seq}`} className="muted">
                    {change.tool} · {change.kind === 'create' ? t('created') : t('edited')}
                  </div>,
                  ...diffLines(change).map((line, i) => (
                    // biome-ignore lint/suspicious/noArrayIndexKey: the lines of one change's diff are positional and may repeat; seq and index are their identity
                    <div key={`${change.seq}-${i}`} className={line.startsWith('-') ? 'del' : 'add'}>
                      {line}
                    </div>
                  )),
                ])}
              </pre>
            ) : null}
          </div>
        ))}
      </section>
    )
  }
  ctx.slots.register('panel.side', { id: 'ui-deliverables', order: 40, component: Deliverables })
}

export default { name, inject, apply }
