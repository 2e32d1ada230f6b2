// @dsh/schedule/tasks: scheduled tasks for `dsh web`. A task is a prompt, a folder and an
// interval (or one delay, for a one-shot task); each run starts a fresh session in the folder and sends the prompt, through the same
// `sessions.create` / `sessions.prompt` methods a page uses (so the run shows in the sidebar like
// any session). Tasks live in the storage domain `schedule-task` (they survive a restart; a run
// that fell due while the host was down runs once at start, late). One timer is armed for the
// earliest due task. The pages list, pause, resume, run and delete tasks with the
// `scheduleTasks.*` methods (browser half: @dsh/ui-schedule).
import { statSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ApiError } from '@dsh/web-protocol'
import type {} from '@dsh/api-gateway'
import type {} from '@dsh/storage'
import {
  scheduleTasksCreate,
  scheduleTasksList,
  scheduleTasksPause,
  scheduleTasksRemove,
  scheduleTasksRun,
  TASKS_CHANGED,
  type WireTask,
} from './contract.ts'

export * from './contract.ts'

export const name = 'schedule-tasks'
export const inject = ['storage', 'api']

export interface TasksConfig {
  minEverySeconds: number
  maxTasks: number
  maxPromptChars: number
}

export const Config: Schema<Partial<TasksConfig>, TasksConfig> = Schema.object({
  minEverySeconds: Schema.natural().min(1).default(60).description('Shortest interval a task may have.'),
  maxTasks: Schema.natural().min(1).default(50).description('Most tasks the host keeps.'),
  maxPromptChars: Schema.natural().min(10).default(4000).description('Longest task prompt.'),
}) as Schema<Partial<TasksConfig>, TasksConfig>

type StoredTask = Omit<WireTask, 'id'>
const StoredTaskSchema = Schema.object({
  name: Schema.string().required(),
  prompt: Schema.string().required(),
  cwd: Schema.string().required(),
  everySeconds: Schema.natural().min(1).required(),
  once: Schema.boolean(),
  done: Schema.boolean(),
  paused: Schema.boolean().default(false),
  createdAt: Schema.number().required(),
  nextAt: Schema.number().required(),
  runs: Schema.natural().default(0),
  lastRunAt: Schema.number(),
  lastSessionId: Schema.string(),
  lastError: Schema.string(),
}) as unknown as Schema<StoredTask>

const MAX_TIMER_MS = 2 ** 31 - 1

/** The first slot of the task's fixed-rate grid that is later than `now`. */
export function nextSlot(nextAt: number, everyMs: number, now: number): number {
  if (nextAt > now) return nextAt
  return nextAt + (Math.floor((now - nextAt) / everyMs) + 1) * everyMs
}

export function apply(ctx: Context, config: TasksConfig): void {
  const logger = ctx.logger('schedule-tasks')
  const domain = ctx.storage.domain('schedule-task', StoredTaskSchema)
  const wire = (id: string, task: StoredTask): WireTask => ({ id, ...task })
  const changed = () => ctx.api.publishHost({ type: TASKS_CHANGED })
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let serial = 0
  const running = new Set<string>()

  const list = async (): Promise<WireTask[]> =>
    ((await domain.entries()) as Array<[string, StoredTask]>)
      .map(([id, task]) => wire(id, task))
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))

  const find = async (id: string): Promise<StoredTask> => {
    const task = (await domain.get(id)) as StoredTask | undefined
    if (!task) throw new ApiError('UNKNOWN_TASK', `no task ${JSON.stringify(id)}`, { status: 404 })
    return task
  }

  /** Starts one run: a fresh session in the task's folder, then the prompt. Answers the session id. */
  const start = async (id: string, task: StoredTask): Promise<string> => {
    const call = { loopback: true, signal: new AbortController().signal }
    const title = `${task.name} · ${new Date().toISOString().slice(0, 16).replace('T', ' ')}`
    const created = (await ctx.api.call('sessions.create', { cwd: task.cwd, title }, call)) as {
      session: { sessionId: string }
    }
    const sessionId = created.session.sessionId
    await ctx.api.call('sessions.prompt', { sessionId, text: task.prompt }, call)
    logger.debug('task %s started session %s', id, sessionId)
    return sessionId
  }

  /** Runs the task and records the run; `scheduled` moves its next slot forward. */
  const run = async (id: string, scheduled: boolean): Promise<string | undefined> => {
    const task = await find(id)
    const now = Date.now()
    let sessionId: string | undefined
    let error: string | undefined
    try {
      sessionId = await start(id, task)
    } catch (e) {
      error = (e as Error).message
      logger.warn('task %s could not run: %s', id, error)
    }
    // The task may have been changed or deleted meanwhile: update what is stored now.
    const latest = (await domain.get(id)) as StoredTask | undefined
    if (latest && !stopped) {
      const { lastError: _old, ...rest } = latest
      await domain.set(id, {
        ...rest,
        runs: latest.runs + (sessionId ? 1 : 0),
        lastRunAt: now,
        ...(sessionId ? { lastSessionId: sessionId } : {}),
        ...(error ? { lastError: error } : {}),
        ...(scheduled && latest.once ? { done: true } : {}),
        ...(scheduled && !latest.once ? { nextAt: nextSlot(latest.nextAt, latest.everySeconds * 1000, now) } : {}),
      })
      changed()
    }
    if (error && !scheduled) throw new ApiError('TASK_FAILED', error, { status: 502 })
    return sessionId
  }

  /** Arms the one timer for the earliest due task (runs the overdue ones first). */
  const arm = async () => {
    const mine = ++serial
    clearTimeout(timer)
    timer = undefined
    if (stopped) return
    const tasks = (await list()).filter((t) => !t.paused && !t.done && !running.has(t.id))
    if (stopped || mine !== serial || tasks.length === 0) return
    const next = tasks.reduce((a, b) => (b.nextAt < a.nextAt ? b : a))
    const wait = Math.min(Math.max(0, next.nextAt - Date.now()), MAX_TIMER_MS)
    timer = setTimeout(() => {
      timer = undefined
      if (Date.now() < next.nextAt) return void arm()
      // Still booting (the session methods are not there yet): app/ready arms the timer again.
      if (!ctx.api.list().includes('sessions.create')) return
      running.add(next.id)
      void run(next.id, true)
        .catch((e: Error) => logger.warn('task %s: %s', next.id, e.message))
        .finally(() => {
          running.delete(next.id)
          void arm()
        })
    }, wait)
    timer.unref?.()
  }
  const rearm = () => void arm().catch((e: Error) => logger.warn('cannot arm the task timer: %s', e.message))

  ctx.api.register(scheduleTasksList, async () => ({ tasks: await list() }))
  ctx.api.register(scheduleTasksCreate, async (p) => {
    if ((p.everySeconds === undefined) === (p.afterSeconds === undefined))
      throw new ApiError('INVALID_PARAMS', 'give everySeconds (recurring) or afterSeconds (once), not both')
    const once = p.afterSeconds !== undefined
    const seconds = (p.everySeconds ?? p.afterSeconds)!
    if (!once && seconds < config.minEverySeconds)
      throw new ApiError('EVERY_TOO_SHORT', `everySeconds must be at least ${config.minEverySeconds}`, {
        field: 'everySeconds',
      })
    const prompt = p.prompt.trim()
    if (!prompt) throw new ApiError('INVALID_PARAMS', 'the prompt is empty', { field: 'prompt' })
    if (prompt.length > config.maxPromptChars)
      throw new ApiError('INVALID_PARAMS', `the prompt is longer than ${config.maxPromptChars} characters`, {
        field: 'prompt',
      })
    let isDir = false
    try {
      isDir = isAbsolute(p.cwd) && statSync(p.cwd).isDirectory()
    } catch {
      // not there
    }
    if (!isDir) throw new ApiError('NOT_A_DIRECTORY', `${p.cwd}: not an existing absolute directory`, { field: 'cwd' })
    const entries = await domain.entries()
    if (entries.length >= config.maxTasks)
      throw new ApiError('TOO_MANY_TASKS', `at most ${config.maxTasks} tasks`, { status: 409 })
    const now = Date.now()
    let n = entries.length + 1
    const taken = new Set(entries.map(([id]) => id))
    while (taken.has(`task-${n}`)) n++
    const id = `task-${n}`
    const label = (p.name ?? '').trim() || prompt.replace(/\s+/g, ' ').slice(0, 40)
    const task: StoredTask = {
      name: label,
      prompt,
      cwd: p.cwd,
      everySeconds: seconds,
      ...(once ? { once: true } : {}),
      paused: false,
      createdAt: now,
      nextAt: now + seconds * 1000,
      runs: 0,
    }
    await domain.set(id, task)
    changed()
    rearm()
    return { task: wire(id, task) }
  })
  ctx.api.register(scheduleTasksPause, async (p) => {
    const task = await find(p.id)
    if (task.done && !p.paused)
      throw new ApiError('TASK_DONE', `${p.id} is a one-shot task that already ran`, { status: 409 })
    const now = Date.now()
    const next: StoredTask = {
      ...task,
      paused: p.paused,
      // Resumed: the slots missed while paused are skipped (a one-shot due meanwhile runs now).
      ...(p.paused || task.once ? {} : { nextAt: nextSlot(task.nextAt, task.everySeconds * 1000, now) }),
    }
    await domain.set(p.id, next)
    changed()
    rearm()
    return { task: wire(p.id, next) }
  })
  ctx.api.register(scheduleTasksRemove, async (p) => {
    await find(p.id)
    await domain.delete(p.id)
    changed()
    rearm()
    return {}
  })
  ctx.api.register(scheduleTasksRun, async (p) => ({ sessionId: (await run(p.id, false))! }))

  rearm()
  // A task overdue at start runs once the app is up (its session methods answer then).
  ctx.on('app/ready' as never, rearm)
  ctx.effect(
    () => () => {
      stopped = true
      clearTimeout(timer)
    },
    'schedule-tasks: timer',
  )
}

export default { name, inject, Config, apply }
