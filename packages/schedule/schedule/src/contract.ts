// The scheduled-task methods of the web host (browser-safe: no node imports). A task runs its
// prompt in a fresh session of its folder every `everySeconds`, fixed rate, or once (`once`); the
// host keeps tasks in the storage domain `schedule-task` and tells the pages
// `scheduleTasks/changed` on each change.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export interface WireTask {
  id: string
  name: string
  prompt: string
  /** The folder each run's session starts in. */
  cwd: string
  /** The interval; for a one-shot task, the delay it was created with. */
  everySeconds: number
  /** A one-shot task: it runs once on its timer, then is `done`. */
  once?: boolean
  /** A one-shot task that has run on its timer (it stays listed until deleted). */
  done?: boolean
  paused: boolean
  createdAt: number
  /** When the next run is due (epoch ms); kept while paused, moved forward on resume. */
  nextAt: number
  runs: number
  lastRunAt?: number
  /** The session the last run started. */
  lastSessionId?: string
  /** Why the last run could not start (the folder is gone, ...). */
  lastError?: string
}

/** Host stream event: the task list changed (the page refetches it). */
export const TASKS_CHANGED = 'scheduleTasks/changed'

const Task = Schema.any() as unknown as Schema<WireTask>
const IdField = { id: Schema.string().min(1).max(64).required() }
const Id = Schema.object(IdField)

export const scheduleTasksList = defineMethod('scheduleTasks.list', {
  description: 'The recurring tasks, oldest first.',
  params: Schema.object({}),
  result: Schema.object({ tasks: Schema.array(Task).required() }) as Schema<{ tasks: WireTask[] }>,
})
export const scheduleTasksCreate = defineMethod('scheduleTasks.create', {
  description:
    'Adds a task: `prompt` runs in a fresh session of `cwd` every `everySeconds` (the first run one interval from now), or once, `afterSeconds` from now. Exactly one of the two.',
  params: Schema.object({
    name: Schema.string().max(80).description('A short label; default: the start of the prompt.'),
    prompt: Schema.string().min(1).required(),
    cwd: Schema.string().min(1).required().description('An existing absolute directory on the host.'),
    everySeconds: Schema.natural().min(1),
    afterSeconds: Schema.natural().min(1),
  }) as Schema<{ name?: string; prompt: string; cwd: string; everySeconds?: number; afterSeconds?: number }>,
  result: Schema.object({ task: Task }) as Schema<{ task: WireTask }>,
})
export const scheduleTasksPause = defineMethod('scheduleTasks.pause', {
  description:
    'Pauses (`paused: true`) or resumes a task; a resumed task next runs one interval from now at the latest.',
  params: Schema.object({ ...IdField, paused: Schema.boolean().required() }) as Schema<{ id: string; paused: boolean }>,
  result: Schema.object({ task: Task }) as Schema<{ task: WireTask }>,
})
export const scheduleTasksRemove = defineMethod('scheduleTasks.remove', {
  description: 'Deletes a task (the sessions it started stay).',
  params: Id as Schema<{ id: string }>,
  result: Schema.object({}),
})
export const scheduleTasksRun = defineMethod('scheduleTasks.run', {
  description: 'Runs a task now, in a fresh session, without moving its schedule; answers the session id.',
  params: Id as Schema<{ id: string }>,
  result: Schema.object({ sessionId: Schema.string().required() }) as Schema<{ sessionId: string }>,
})
