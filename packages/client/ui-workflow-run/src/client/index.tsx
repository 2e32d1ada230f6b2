// @dsh/ui-workflow-run/client: a card for `workflow` and `ralph` calls in the tool view slot. It
// folds the session feed's `tool-workflow/*` events into the run the call started and shows its
// children as they start and finish, then the run's outcome. Registered below the built-in
// cards' order, so it wins for these two tools; unloading the plugin restores the generic card.
import type { Context } from 'cordis'
import { memo, useMemo } from 'react'
import { installStyles, useSessionFeed, useT } from '@dsh/client-runtime'
import { runOfCall, type ChildStatus, type RunStatus } from '../model.ts'

export const NAMESPACE = 'workflowRun'
export const name = '@dsh/ui-workflow-run'
export const inject = ['slots', 'locale', 'connection']
export const TOOLS = ['workflow', 'ralph'] as const

/** What the tool view slot passes (structurally the same as @dsh/ui-tool's ToolViewProps). */
export interface WorkflowCardProps {
  sessionId: string
  node: {
    callId: string
    name: string
    status: string
    input?: Record<string, unknown>
    result?: { text: string; isError: boolean; error?: { code: string; message: string } }
  }
}

const en = {
  workflow: 'Workflow',
  ralph: 'Relay',
  'status.running': 'running',
  'status.completed': 'completed',
  'status.failed': 'failed',
  'status.cancelled': 'cancelled',
  'status.pending': 'starting',
  children: '{n} children',
  noRun: 'The run did not start.',
}
const zh: typeof en = {
  workflow: '工作流',
  ralph: '接力',
  'status.running': '运行中',
  'status.completed': '已完成',
  'status.failed': '失败',
  'status.cancelled': '已取消',
  'status.pending': '启动中',
  children: '{n} 个子代理',
  noRun: '运行未开始。',
}

const ICON: Record<ChildStatus | RunStatus, string> = { running: '◐', completed: '✔', failed: '✖', cancelled: '⊘' }

const CSS = `
.dsh-wf { border: 1px solid var(--dsh-border, #8884); border-radius: 6px; padding: 6px 10px; margin: 4px 0; font-size: 13px; }
.dsh-wf-head { display: flex; gap: 8px; align-items: baseline; }
.dsh-wf-title { font-weight: 600; }
.dsh-wf-status { margin-left: auto; opacity: .8; }
.dsh-wf-children { list-style: none; margin: 4px 0 0; padding: 0; }
.dsh-wf-children li { display: flex; gap: 6px; padding: 1px 0; }
.dsh-wf-id { opacity: .6; font-family: var(--dsh-mono, monospace); }
.dsh-wf [data-status="failed"] .dsh-wf-icon, .dsh-wf-error { color: var(--dsh-danger, #c33); }
.dsh-wf [data-status="completed"] .dsh-wf-icon { color: var(--dsh-ok, #393); }
`

export const WorkflowCard = memo(
  function WorkflowCard({ sessionId, node }: WorkflowCardProps) {
    const t = useT(NAMESPACE)
    const feed = useSessionFeed(sessionId, { deltas: false })
    const version = feed?.version
    // biome-ignore lint/correctness/useExhaustiveDependencies: feed.withoutDeltas grows in place (same array); version is what changes when it does
    const run = useMemo(
      () => (feed ? runOfCall(feed.withoutDeltas, node.callId) : undefined),
      [feed, version, node.callId],
    )
    const described =
      typeof node.input?.description === 'string'
        ? node.input.description
        : typeof node.input?.objective === 'string'
          ? node.input.objective
          : ''
    const title = `${t(node.name === 'ralph' ? 'ralph' : 'workflow')}${run?.description || described ? `: ${run?.description || described}` : ''}`
    if (!run) {
      const failed = node.result?.isError
      return (
        <div className="dsh-wf" data-workflow-card={node.callId} data-status={failed ? 'failed' : 'pending'}>
          <div className="dsh-wf-head">
            <span className="dsh-wf-title">{title}</span>
            <span className="dsh-wf-status">{t(failed ? 'status.failed' : 'status.pending')}</span>
          </div>
          {failed ? (
            <div className="dsh-wf-error" role="alert">
              {node.result?.error?.message ?? t('noRun')}
            </div>
          ) : null}
        </div>
      )
    }
    return (
      <div className="dsh-wf" data-workflow-card={node.callId} data-workflow-run={run.runId} data-status={run.status}>
        <div className="dsh-wf-head">
          <span aria-hidden="true">{ICON[run.status]}</span>
          <span className="dsh-wf-title">{title}</span>
          <span className="dsh-wf-count">{t('children', { n: run.children.length })}</span>
          <span className="dsh-wf-status" data-wf-status={run.status}>
            {t(`status.${run.status}`)}
          </span>
        </div>
        <ol className="dsh-wf-children">
          {run.children.map((child) => (
            <li key={child.id} data-child={child.id} data-status={child.status}>
              <span className="dsh-wf-icon" aria-hidden="true">
                {ICON[child.status]}
              </span>
              <span className="dsh-wf-desc">{child.description}</span>
              <span className="dsh-wf-id">{child.id}</span>
              <span className="dsh-sr-only"> ({t(`status.${child.status}`)})</span>
              {child.error ? <span className="dsh-wf-error">{child.error.message}</span> : null}
            </li>
          ))}
        </ol>
        {run.error ? (
          <div className="dsh-wf-error" role="alert">
            {run.error.code}: {run.error.message}
          </div>
        ) : null}
      </div>
    )
  },
  (a, b) => a.node === b.node && a.sessionId === b.sessionId,
)

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-workflow-run: stylesheet')
  for (const tool of TOOLS)
    ctx.slots.register('tool.call.toolview', {
      id: 'ui-workflow-run',
      key: tool,
      order: 50,
      component: WorkflowCard as never,
    })
}

export default { name, inject, apply }
