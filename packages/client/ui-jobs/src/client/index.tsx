// @dsh/ui-jobs/client: the Jobs button of the conversation header (shown while the session has
// background jobs, with the number still running) and its panel: each job's command, status and
// exit code, its output on demand, and Stop for a running one. The list is fetched with
// `jobs.list` when the button first renders and again on each `jobs/changed` host event for the
// session (a job started or ended) and after a reconnect. An opened job's output is read with
// `jobs.output` and then follows the job live: each `jobs/output` host event for it reads the new
// bytes (`since` the last offset) until the output is hidden, the panel closes or the job ends (its
// last bytes are read then). Refresh reads it whole again.
import type { Context } from 'cordis'
import { useEffect, useRef, useState } from 'react'
import { installStyles, Store, useStore, useT, type SessionSlotProps } from '@dsh/client-runtime'
import { JOBS_CHANGED, JOBS_OUTPUT, jobsKill, jobsList, jobsOutput, type WireJob } from '../contract.ts'

export const NAMESPACE = 'jobs'
export const name = '@dsh/ui-jobs'
export const inject = ['slots', 'locale', 'remote', 'connection', 'router']

const en = {
  button: 'Jobs',
  running: '{n} running',
  title: 'Background jobs',
  close: 'Close',
  output: 'Output',
  hide: 'Hide output',
  refresh: 'Refresh',
  stop: 'Stop',
  empty: '(no output yet)',
  skipped: '… {n} earlier bytes are not kept in memory',
  'status.running': 'running',
  'status.exited': 'exited {code}',
  'status.failed': 'failed',
  'status.killed': 'stopped',
}
const zh: Record<keyof typeof en, string> = {
  button: '后台任务',
  running: '{n} 个运行中',
  title: '后台任务',
  close: '关闭',
  output: '输出',
  hide: '隐藏输出',
  refresh: '刷新',
  stop: '停止',
  empty: '（尚无输出）',
  skipped: '… 更早的 {n} 字节未保留在内存中',
  'status.running': '运行中',
  'status.exited': '已退出 {code}',
  'status.failed': '失败',
  'status.killed': '已停止',
}

const CSS = `
.dsh-jobs-panel { position: fixed; top: 56px; right: 24px; z-index: 30; width: min(640px, 90vw); max-height: 70vh; overflow: auto;
  background: var(--bg, #fff); color: var(--fg, #111); border: 1px solid var(--border, #ddd); border-radius: 8px; box-shadow: 0 6px 24px rgb(0 0 0 / .18); padding: 8px 12px; font-size: 13px; }
.dsh-jobs-panel header { display: flex; justify-content: space-between; align-items: center; }
.dsh-jobs-panel ul { list-style: none; margin: 0; padding: 0; }
.dsh-jobs-panel li { border-top: 1px solid var(--border, #eee); padding: 6px 0; }
.dsh-jobs-panel code { font-size: 12px; word-break: break-all; }
.dsh-jobs-panel .meta { color: var(--fg-muted, #666); font-size: 12px; margin-left: 8px; }
.dsh-jobs-panel .actions { display: flex; gap: 6px; margin-top: 4px; }
.dsh-jobs-panel pre { white-space: pre-wrap; max-height: 30vh; overflow: auto; margin: 6px 0 0; font-size: 12px; background: var(--bg-muted, #f6f6f6); padding: 6px; }
.dsh-jobs-error { color: var(--danger, #c0362c); }
`

interface SessionJobs {
  jobs: WireJob[]
  error?: string
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-jobs: stylesheet')

  const bySession = new Map<string, Store<SessionJobs>>()
  const storeOf = (sessionId: string) => {
    let store = bySession.get(sessionId)
    if (!store) {
      bySession.set(sessionId, (store = new Store<SessionJobs>({ jobs: [] })))
      void refresh(sessionId)
    }
    return store
  }
  // One fetch per session at a time; a change during it asks for one more.
  const inFlight = new Map<string, { again: boolean }>()
  async function refresh(sessionId: string): Promise<void> {
    const running = inFlight.get(sessionId)
    if (running) {
      running.again = true
      return
    }
    const state = { again: false }
    inFlight.set(sessionId, state)
    try {
      do {
        state.again = false
        try {
          const { jobs } = await ctx.remote.call(jobsList, { sessionId })
          bySession.get(sessionId)?.set({ jobs })
        } catch (error) {
          const store = bySession.get(sessionId)
          store?.set({ jobs: store.get().jobs, error: (error as Error).message })
        }
      } while (state.again)
    } finally {
      inFlight.delete(sessionId)
    }
  }
  ctx.effect(
    () =>
      ctx.connection.onHost((event) => {
        if (event.type === 'connection/reset') for (const id of bySession.keys()) void refresh(id)
        else if (event.type === JOBS_CHANGED && typeof event.sessionId === 'string' && bySession.has(event.sessionId))
          void refresh(event.sessionId)
      }),
    'ui-jobs: host events',
  )
  /** The session whose panel is open. */
  const open = new Store<string | undefined>(undefined)

  function Button({ sessionId }: SessionSlotProps) {
    const t = useT(NAMESPACE)
    const { jobs } = useStore(storeOf(sessionId))
    const expanded = useStore(open) === sessionId
    if (jobs.length === 0) return null
    const running = jobs.filter((job) => job.status === 'running').length
    return (
      <button
        type="button"
        className="dsh-button"
        data-jobs-open={running}
        aria-expanded={expanded}
        onClick={() => open.set(open.get() === sessionId ? undefined : sessionId)}
      >
        {t('button')}
        {running > 0 ? ` · ${t('running', { n: running })}` : ''}
      </button>
    )
  }

  function Job({ sessionId, job }: { sessionId: string; job: WireJob }) {
    const t = useT(NAMESPACE)
    const [shown, setShown] = useState(false)
    const [output, setOutput] = useState<{ text: string; skipped: number; to: number } | undefined>(undefined)
    const [error, setError] = useState<string | undefined>(undefined)
    const [stopping, setStopping] = useState(false)
    // Reads are serialised: `whole` reads from byte 0, otherwise from the last offset read; a read
    // asked for while one runs is done once after it.
    const reader = useRef({ to: 0, busy: false, again: false, whole: false, live: true })
    const read = (whole: boolean) => {
      const r = reader.current
      if (whole) r.whole = true
      if (r.busy) {
        r.again = true
        return
      }
      r.busy = true
      void (async () => {
        do {
          r.again = false
          const fresh = r.whole
          r.whole = false
          try {
            const out = await ctx.remote.call(jobsOutput, { sessionId, jobId: job.id, since: fresh ? 0 : r.to })
            if (!r.live) return
            r.to = out.to
            setOutput((prev) =>
              fresh || !prev
                ? { text: out.text, skipped: out.skipped, to: out.to }
                : { text: prev.text + out.text, skipped: prev.skipped + out.skipped, to: out.to },
            )
            setError(undefined)
          } catch (e) {
            if (r.live) setError((e as Error).message)
          }
        } while (r.again && r.live)
        r.busy = false
      })()
    }
    useEffect(
      () => () => {
        reader.current.live = false
      },
      [],
    )
    // Read on open, and again when the job ends (its last bytes).
    // biome-ignore lint/correctness/useExhaustiveDependencies: the status change is the trigger; read is rebuilt each render
    useEffect(() => {
      if (shown) read(output === undefined)
    }, [shown, job.status])
    // While shown and running: follow the host's output events for this job.
    // biome-ignore lint/correctness/useExhaustiveDependencies: read is rebuilt each render; the reader ref is stable
    useEffect(() => {
      if (!shown || job.status !== 'running') return
      return ctx.connection.onHost((event) => {
        if (event.type === JOBS_OUTPUT && event.jobId === job.id && event.sessionId === sessionId) {
          if (typeof event.to !== 'number' || event.to > reader.current.to) read(false)
        }
      })
    }, [shown, job.status, job.id, sessionId])
    const status =
      job.status === 'exited' ? t('status.exited', { code: String(job.exitCode ?? '') }) : t(`status.${job.status}`)
    return (
      <li data-job={job.id} data-job-status={job.status}>
        <code>{job.command ?? job.description}</code>
        <span className="meta">
          {job.id} · {status}
        </span>
        <div className="actions">
          <button type="button" data-job-output="toggle" onClick={() => setShown(!shown)}>
            {shown ? t('hide') : t('output')}
          </button>
          {shown ? (
            <button type="button" data-job-output="refresh" onClick={() => read(true)}>
              {t('refresh')}
            </button>
          ) : null}
          {job.status === 'running' ? (
            <button
              type="button"
              data-job-stop={job.id}
              disabled={stopping}
              onClick={() => {
                setStopping(true)
                ctx.remote.call(jobsKill, { sessionId, jobId: job.id }).then(
                  () => void refresh(sessionId),
                  (e: Error) => {
                    setStopping(false)
                    setError(e.message)
                  },
                )
              }}
            >
              {t('stop')}
            </button>
          ) : null}
        </div>
        {error ? (
          <p className="dsh-jobs-error" role="alert">
            {error}
          </p>
        ) : null}
        {shown && output ? (
          <pre data-job-text={job.id}>
            {output.skipped > 0 ? `${t('skipped', { n: output.skipped })}\n` : ''}
            {output.text || t('empty')}
          </pre>
        ) : null}
      </li>
    )
  }

  function Panel() {
    const sessionId = useStore(open)
    const route = useStore(ctx.router.route)
    useEffect(() => {
      if (sessionId && route.sessionId !== sessionId) open.set(undefined)
    }, [route.sessionId, sessionId])
    if (!sessionId) return null
    return <PanelOf sessionId={sessionId} />
  }
  function PanelOf({ sessionId }: { sessionId: string }) {
    const t = useT(NAMESPACE)
    const { jobs, error } = useStore(storeOf(sessionId))
    return (
      <section className="dsh-jobs-panel" aria-label={t('title')} data-jobs-panel={sessionId}>
        <header>
          <strong>{t('title')}</strong>
          <button type="button" onClick={() => open.set(undefined)}>
            {t('close')}
          </button>
        </header>
        {error ? <p className="dsh-jobs-error">{error}</p> : null}
        <ul>
          {jobs.map((job) => (
            <Job key={job.id} sessionId={sessionId} job={job} />
          ))}
        </ul>
      </section>
    )
  }
  ctx.slots.register('conversation.header.pickers', { id: 'ui-jobs', order: 40, component: Button })
  ctx.slots.register('app.overlay', { id: 'ui-jobs', order: 22, component: Panel })
}

export default { name, inject, apply }
