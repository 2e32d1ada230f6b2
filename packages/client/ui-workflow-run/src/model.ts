// The workflow runs of a session feed, folded from the four `tool-workflow/*` events (their wire
// shapes are @dsh/tool-workflow's; this fold is browser-safe and imports nothing).

export type RunStatus = 'running' | 'completed' | 'failed' | 'cancelled'
export type ChildStatus = 'running' | 'completed' | 'failed' | 'cancelled'

export interface RunChildView {
  index: number
  id: string
  description: string
  status: ChildStatus
  text?: string
  error?: { code: string; message: string }
}

export interface RunView {
  runId: string
  callId?: string
  tool: string
  description: string
  status: RunStatus
  children: RunChildView[]
  error?: { code: string; message: string }
  logs: Array<{ level: string; text: string }>
  durationMs?: number
}

interface FeedEvent {
  type: string
  data: unknown
}

type Obj = Record<string, unknown>
const obj = (value: unknown): Obj => (value && typeof value === 'object' ? (value as Obj) : {})
const str = (value: unknown, fallback = '') => (typeof value === 'string' ? value : fallback)
const STATUSES = ['completed', 'failed', 'cancelled'] as const
const ended = (value: unknown): (typeof STATUSES)[number] =>
  STATUSES.includes(value as never) ? (value as (typeof STATUSES)[number]) : 'failed'
const errorOf = (value: unknown) => {
  const e = obj(value)
  return typeof e.code === 'string' ? { code: e.code, message: str(e.message) } : undefined
}

/** Every run in the events, by run id, in start order. Malformed events are skipped. */
export function foldRuns(events: readonly FeedEvent[]): Map<string, RunView> {
  const runs = new Map<string, RunView>()
  for (const event of events) {
    if (!event.type.startsWith('tool-workflow/')) continue
    const data = obj(event.data)
    const runId = str(data.runId)
    if (!runId) continue
    if (event.type === 'tool-workflow/started') {
      runs.set(runId, {
        runId,
        ...(typeof data.callId === 'string' ? { callId: data.callId } : {}),
        tool: str(data.tool, 'workflow'),
        description: str(data.description),
        status: 'running',
        children: [],
        logs: [],
      })
      continue
    }
    const run = runs.get(runId)
    if (!run) continue
    if (event.type === 'tool-workflow/child-started') {
      run.children.push({
        index: Number(data.index) || 0,
        id: str(data.id),
        description: str(data.description),
        status: 'running',
      })
    } else if (event.type === 'tool-workflow/child-finished') {
      const child = obj(data.child)
      const id = str(child.id)
      let view = run.children.find((c) => c.id === id)
      if (!view)
        run.children.push(
          (view = { index: Number(child.index) || 0, id, description: str(child.description), status: 'running' }),
        )
      view.status = ended(child.status)
      view.text = str(child.text)
      const error = errorOf(child.error)
      if (error) view.error = error
    } else if (event.type === 'tool-workflow/finished') {
      run.status = ended(data.status)
      const error = errorOf(data.error)
      if (error) run.error = error
      if (Array.isArray(data.logs))
        run.logs = data.logs.map((l) => ({ level: str(obj(l).level, 'log'), text: str(obj(l).text) }))
      if (typeof data.durationMs === 'number') run.durationMs = data.durationMs
    }
  }
  for (const run of runs.values()) run.children.sort((a, b) => a.index - b.index)
  return runs
}

/** The run a tool call started (the `workflow` or `ralph` call with this id), if any. */
export function runOfCall(events: readonly FeedEvent[], callId: string): RunView | undefined {
  for (const run of foldRuns(events).values()) if (run.callId === callId) return run
  return undefined
}
