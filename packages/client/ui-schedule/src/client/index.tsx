// @dsh/ui-schedule/client: a "Scheduled tasks" icon action in the sidebar header opens a dialog over
// the schedule-tasks row's methods: the tasks (name, prompt, folder, interval or once, next run,
// paused or done, last run with a link to its session), Pause / Resume, Run now and Delete for
// each, and a form that adds one (prompt, every N minutes or once in N minutes, folder: a
// workspace or the open session's).
// The list is fetched when the dialog opens and again on each `scheduleTasks/changed` host event
// and after a reconnect.
import type { Context } from 'cordis'
import { useEffect, useState } from 'react'
import { installStyles, Store, useStore, useT } from '@dsh/client-runtime'
import { History, IconButton } from '@dsh/client-design'
import {
  scheduleTasksCreate,
  scheduleTasksList,
  scheduleTasksPause,
  scheduleTasksRemove,
  scheduleTasksRun,
  TASKS_CHANGED,
  type WireTask,
} from '@dsh/schedule/contract'

export const NAMESPACE = 'schedule'
export const name = '@dsh/ui-schedule'
export const inject = ['slots', 'locale', 'remote', 'connection', 'router', 'catalog']

const en = {
  open: 'Scheduled tasks',
  title: 'Scheduled tasks',
  close: 'Close',
  empty: 'No scheduled tasks yet.',
  every: 'every {n} min',
  once: 'once',
  done: 'done',
  repeat: 'Runs',
  repeatEvery: 'every N minutes',
  repeatOnce: 'once, in N minutes',
  next: 'next run {when}',
  paused: 'paused',
  runs: '{n} runs',
  last: 'last run',
  pause: 'Pause',
  resume: 'Resume',
  run: 'Run now',
  remove: 'Delete',
  add: 'Add a task',
  name: 'Name',
  prompt: 'Prompt',
  minutes: 'Minutes (N)',
  folder: 'Folder',
  create: 'Add task',
}
const zh: Record<keyof typeof en, string> = {
  open: '定时任务',
  title: '定时任务',
  close: '关闭',
  empty: '还没有定时任务。',
  every: '每 {n} 分钟',
  once: '一次',
  done: '已完成',
  repeat: '运行',
  repeatEvery: '每 N 分钟',
  repeatOnce: '一次，N 分钟后',
  next: '下次运行 {when}',
  paused: '已暂停',
  runs: '已运行 {n} 次',
  last: '上次运行',
  pause: '暂停',
  resume: '继续',
  run: '立即运行',
  remove: '删除',
  add: '添加任务',
  name: '名称',
  prompt: '提示词',
  minutes: '分钟数（N）',
  folder: '文件夹',
  create: '添加任务',
}

const CSS = `
.dsh-schedule-list { list-style: none; margin: 0 0 12px; padding: 0; max-height: 50vh; overflow: auto; }
.dsh-schedule-list li { border-top: 1px solid var(--dsh-color-border, #ddd); padding: 8px 0; }
.dsh-schedule-list .meta { color: var(--dsh-color-fg-muted, #666); font-size: 12px; }
.dsh-schedule-list .actions { display: flex; gap: 6px; margin-top: 4px; }
.dsh-schedule-list pre { white-space: pre-wrap; margin: 4px 0; font-size: 12px; }
.dsh-schedule-form { display: grid; grid-template-columns: max-content 1fr; gap: 6px 10px; align-items: center; }
.dsh-schedule-form textarea { min-height: 60px; }
.dsh-schedule-error { color: var(--dsh-color-danger, #c0362c); }
`

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-schedule: stylesheet')

  const open = new Store(false)
  const state = new Store<{ tasks: WireTask[]; loaded: boolean; error?: string }>({ tasks: [], loaded: false })
  let fetching = false
  let again = false
  const refresh = (): void => {
    if (fetching) {
      again = true
      return
    }
    fetching = true
    void (async () => {
      do {
        again = false
        try {
          const { tasks } = await ctx.remote.call(scheduleTasksList, {})
          state.set({ tasks, loaded: true })
        } catch (e) {
          state.set({ ...state.get(), error: (e as Error).message })
        }
      } while (again)
    })().finally(() => {
      fetching = false
    })
  }
  ctx.effect(
    () =>
      ctx.connection.onHost((event) => {
        if (!open.get()) return
        if (event.type === TASKS_CHANGED || event.type === 'connection/reset') refresh()
      }),
    'ui-schedule: host events',
  )

  function Action() {
    const t = useT(NAMESPACE)
    return (
      <IconButton
        label={t('open')}
        icon={History}
        data-schedule-open="true"
        onClick={() => {
          open.set(true)
          refresh()
        }}
      />
    )
  }

  function Task({ task, onError }: { task: WireTask; onError: (message?: string) => void }) {
    const t = useT(NAMESPACE)
    const lang = useStore(ctx.locale.current)
    const [busy, setBusy] = useState(false)
    const act = (fn: () => Promise<unknown>) => {
      setBusy(true)
      onError(undefined)
      fn().then(
        () => setBusy(false),
        (e: Error) => {
          setBusy(false)
          onError(e.message)
        },
      )
    }
    const when = (ms: number) => new Date(ms).toLocaleString(lang === 'zh' ? 'zh-CN' : 'en-US')
    return (
      <li data-task={task.id} data-task-paused={task.paused} data-task-runs={task.runs} data-task-done={!!task.done}>
        <strong>{task.name}</strong>
        <div className="meta">
          {task.once ? t('once') : t('every', { n: String(Math.round((task.everySeconds / 60) * 100) / 100) })} ·{' '}
          {task.done ? t('done') : task.paused ? t('paused') : t('next', { when: when(task.nextAt) })} ·{' '}
          {t('runs', { n: task.runs })} · <code>{task.cwd}</code>
        </div>
        <pre>{task.prompt}</pre>
        {task.lastSessionId ? (
          <div className="meta">
            {t('last')}:{' '}
            <a
              href={`/s/${encodeURIComponent(task.lastSessionId)}`}
              data-task-session={task.lastSessionId}
              onClick={(e) => {
                if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return
                e.preventDefault()
                open.set(false)
                ctx.router.openSession(task.lastSessionId!)
              }}
            >
              {task.lastRunAt ? when(task.lastRunAt) : task.lastSessionId}
            </a>
          </div>
        ) : null}
        {task.lastError ? <div className="dsh-schedule-error">{task.lastError}</div> : null}
        <div className="actions">
          {task.done ? null : (
            <button
              type="button"
              disabled={busy}
              data-task-pause={task.paused ? 'resume' : 'pause'}
              onClick={() => act(() => ctx.remote.call(scheduleTasksPause, { id: task.id, paused: !task.paused }))}
            >
              {task.paused ? t('resume') : t('pause')}
            </button>
          )}
          <button
            type="button"
            disabled={busy}
            data-task-run={task.id}
            onClick={() => act(() => ctx.remote.call(scheduleTasksRun, { id: task.id }))}
          >
            {t('run')}
          </button>
          <button
            type="button"
            className="danger"
            disabled={busy}
            data-task-remove={task.id}
            onClick={() => act(() => ctx.remote.call(scheduleTasksRemove, { id: task.id }))}
          >
            {t('remove')}
          </button>
        </div>
      </li>
    )
  }

  function Form({ onError }: { onError: (message?: string) => void }) {
    const t = useT(NAMESPACE)
    const catalog = useStore(ctx.catalog.state)
    const route = useStore(ctx.router.route)
    const current = route.sessionId ? ctx.catalog.get(route.sessionId)?.cwd : undefined
    const folders = [...new Set([...(current ? [current] : []), ...catalog.workspaces.map((w) => w.path)])]
    const [label, setLabel] = useState('')
    const [prompt, setPrompt] = useState('')
    const [minutes, setMinutes] = useState('60')
    const [once, setOnce] = useState(false)
    const [folder, setFolder] = useState<string | undefined>(undefined)
    const [busy, setBusy] = useState(false)
    const cwd = folder ?? folders[0]
    const submit = async () => {
      if (!cwd) return
      setBusy(true)
      onError(undefined)
      try {
        await ctx.remote.call(scheduleTasksCreate, {
          ...(label.trim() ? { name: label.trim() } : {}),
          prompt,
          cwd,
          ...(once
            ? { afterSeconds: Math.max(1, Math.round(Number(minutes) * 60)) }
            : { everySeconds: Math.round(Number(minutes) * 60) }),
        })
        setLabel('')
        setPrompt('')
      } catch (e) {
        onError((e as Error).message)
      } finally {
        setBusy(false)
      }
    }
    return (
      <form
        className="dsh-schedule-form"
        data-schedule-form="true"
        onSubmit={(e) => {
          e.preventDefault()
          void submit()
        }}
      >
        <label htmlFor="dsh-schedule-name">{t('name')}</label>
        <input id="dsh-schedule-name" value={label} onChange={(e) => setLabel(e.target.value)} />
        <label htmlFor="dsh-schedule-prompt">{t('prompt')}</label>
        <textarea id="dsh-schedule-prompt" required value={prompt} onChange={(e) => setPrompt(e.target.value)} />
        <label htmlFor="dsh-schedule-repeat">{t('repeat')}</label>
        <select
          id="dsh-schedule-repeat"
          value={once ? 'once' : 'every'}
          onChange={(e) => setOnce(e.target.value === 'once')}
        >
          <option value="every">{t('repeatEvery')}</option>
          <option value="once">{t('repeatOnce')}</option>
        </select>
        <label htmlFor="dsh-schedule-minutes">{t('minutes')}</label>
        <input
          id="dsh-schedule-minutes"
          type="number"
          min="0.01"
          step="any"
          required
          value={minutes}
          onChange={(e) => setMinutes(e.target.value)}
        />
        <label htmlFor="dsh-schedule-folder">{t('folder')}</label>
        <select id="dsh-schedule-folder" value={cwd ?? ''} onChange={(e) => setFolder(e.target.value)}>
          {folders.map((f) => (
            <option key={f} value={f}>
              {f}
            </option>
          ))}
        </select>
        <span />
        <button type="submit" className="primary" disabled={busy || !prompt.trim() || !cwd}>
          {t('create')}
        </button>
      </form>
    )
  }

  function Dialog() {
    const t = useT(NAMESPACE)
    const isOpen = useStore(open)
    const { tasks, loaded, error } = useStore(state)
    const [actionError, setActionError] = useState<string | undefined>(undefined)
    useEffect(() => {
      if (!isOpen) setActionError(undefined)
    }, [isOpen])
    if (!isOpen) return null
    const close = () => open.set(false)
    return (
      // biome-ignore lint/a11y/noStaticElementInteractions lint/a11y/useKeyWithClickEvents: a click on the backdrop is the pointer's way out; from the keyboard, the Close button closes the dialog
      <div className="dialog-backdrop" onClick={(e) => e.target === e.currentTarget && close()}>
        <div
          className="dialog"
          role="dialog"
          aria-modal="true"
          aria-label={t('title')}
          data-schedule="true"
          style={{ width: 'min(640px, 94vw)' }}
        >
          <header style={{ display: 'flex', justifyContent: 'space-between', alignItems: 'center' }}>
            <h2>{t('title')}</h2>
            <button type="button" onClick={close}>
              {t('close')}
            </button>
          </header>
          {error ? <p className="dsh-schedule-error">{error}</p> : null}
          {actionError ? (
            <p className="dsh-schedule-error" role="alert">
              {actionError}
            </p>
          ) : null}
          {loaded && tasks.length === 0 ? <p className="muted">{t('empty')}</p> : null}
          <ul className="dsh-schedule-list">
            {tasks.map((task) => (
              <Task key={task.id} task={task} onError={setActionError} />
            ))}
          </ul>
          <h3>{t('add')}</h3>
          <Form onError={setActionError} />
        </div>
      </div>
    )
  }

  ctx.slots.register('sidebar.header', { id: 'ui-schedule', order: 30, component: Action })
  ctx.slots.register('app.overlay', { id: 'ui-schedule', order: 45, component: Dialog })
}

export default { name, inject, apply }
