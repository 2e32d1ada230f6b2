// The four `tool-workflow/*` session events and the fold that rebuilds workflow runs from a log,
// so a reloaded session (or a UI) sees every run, its children and how it ended.
import type { Session, SessionEvent } from '@dsh/session'
import type { JsonValue, WorkflowChildResult, WorkflowLimits, WorkflowRunResult } from '@dsh/workflow'

export const WORKFLOW_EVENT_TYPES = [
  'tool-workflow/started',
  'tool-workflow/child-started',
  'tool-workflow/child-finished',
  'tool-workflow/finished',
] as const

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A workflow run began (from the `workflow` tool, or another tool running a fixed workflow such as `ralph`). */
    'tool-workflow/started': {
      runId: string
      callId?: string
      tool: string
      description: string
      script: string
      input?: JsonValue
      limits: WorkflowLimits
    }
    /** The run started a child (its subagent id in this session). */
    'tool-workflow/child-started': {
      runId: string
      index: number
      id: string
      description: string
      provider: string
      sessionId?: string
    }
    /** One of the run's children ended. */
    'tool-workflow/child-finished': { runId: string; child: WorkflowChildResult }
    /** The run ended. */
    'tool-workflow/finished': {
      runId: string
      status: WorkflowRunResult['status']
      value?: JsonValue
      error?: { code: string; message: string; stack?: string }
      logs: Array<{ level: string; text: string }>
      durationMs: number
    }
  }
}

export type WorkflowRunStatus = 'running' | 'completed' | 'failed' | 'cancelled' | 'interrupted'

export interface WorkflowChildRecord {
  index: number
  id: string
  description: string
  provider: string
  status: 'running' | WorkflowChildResult['status'] | 'interrupted'
  sessionId?: string
  text?: string
  error?: { code: string; message: string }
}

/** A run as its events tell it. */
export interface WorkflowRunRecord {
  runId: string
  callId?: string
  tool: string
  description: string
  script: string
  input?: JsonValue
  limits: WorkflowLimits
  status: WorkflowRunStatus
  children: WorkflowChildRecord[]
  value?: JsonValue
  error?: { code: string; message: string; stack?: string }
  logs: Array<{ level: string; text: string }>
  startedAt: number
  finishedAt?: number
  durationMs?: number
}

/**
 * Every workflow run in `events`, in start order. A run (or child) that has no end in the log and is
 * not in `live` reads `interrupted`: the process that ran it stopped before it finished.
 */
export function workflowRuns(
  events: readonly SessionEvent[],
  live: ReadonlySet<string> = new Set(),
): WorkflowRunRecord[] {
  const runs = new Map<string, WorkflowRunRecord>()
  for (const event of events) {
    switch (event.type) {
      case 'tool-workflow/started': {
        const data = event.data as import('@dsh/session').SessionEventMap['tool-workflow/started']
        runs.set(data.runId, {
          ...structuredClone(data),
          status: 'running',
          children: [],
          logs: [],
          startedAt: event.time,
        })
        break
      }
      case 'tool-workflow/child-started': {
        const data = event.data as import('@dsh/session').SessionEventMap['tool-workflow/child-started']
        const run = runs.get(data.runId)
        if (!run) break
        const { runId: _, ...child } = data
        run.children.push({ ...child, status: 'running' })
        break
      }
      case 'tool-workflow/child-finished': {
        const data = event.data as import('@dsh/session').SessionEventMap['tool-workflow/child-finished']
        const run = runs.get(data.runId)
        if (!run) break
        let child = run.children.find((c) => c.id === data.child.id)
        if (!child)
          run.children.push(
            (child = {
              index: data.child.index,
              id: data.child.id,
              description: data.child.description,
              provider: '',
              status: 'running',
            }),
          )
        child.status = data.child.status
        child.text = data.child.text
        if (data.child.error) child.error = data.child.error
        if (data.child.sessionId !== undefined) child.sessionId = data.child.sessionId
        break
      }
      case 'tool-workflow/finished': {
        const data = event.data as import('@dsh/session').SessionEventMap['tool-workflow/finished']
        const run = runs.get(data.runId)
        if (!run) break
        run.status = data.status
        run.logs = data.logs
        run.durationMs = data.durationMs
        run.finishedAt = event.time
        if (data.value !== undefined) run.value = data.value
        if (data.error) run.error = data.error
        break
      }
    }
  }
  const out = [...runs.values()]
  for (const run of out) {
    if (run.status !== 'running' || live.has(run.runId)) continue
    run.status = 'interrupted'
    for (const child of run.children) if (child.status === 'running') child.status = 'interrupted'
  }
  return out
}

/** The next run id of a session: `wf-<n>`, continuing after the ids already in its log. */
export function nextRunId(session: Pick<Session, 'events'>): string {
  let max = 0
  for (const event of session.events) {
    if (event.type !== 'tool-workflow/started') continue
    const match = /^wf-(\d+)$/.exec((event.data as { runId: string }).runId)
    if (match) max = Math.max(max, Number(match[1]))
  }
  return `wf-${max + 1}`
}
