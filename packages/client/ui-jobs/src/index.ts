// @dsh/ui-jobs (host half): `jobs.list`, `jobs.output` and `jobs.kill` on ctx.api over `ctx.jobs`,
// each scoped to the session it names, and a `jobs/changed {sessionId}` host stream event when one
// of a session's jobs starts or ends. The row also makes the host serve the browser half
// (`./client`): the Jobs button and panel of the conversation header.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ApiError } from '@dsh/web-protocol'
import { JobError, type JobRecord } from '@dsh/jobs'
import type {} from '@dsh/api-gateway'
import {
  JOBS_CHANGED,
  JOBS_OUTPUT,
  JOBS_OUTPUT_INTERVAL_MS,
  jobsKill,
  jobsList,
  jobsOutput,
  type WireJob,
} from './contract.ts'

export * from './contract.ts'

export const name = '@dsh/ui-jobs'
export const inject = ['jobs']
export type Config = Record<string, never>
export const Config: Schema<Config> = Schema.object({}) as Schema<Config>

const STATUS: Record<string, number> = { UNKNOWN_JOB: 404, JOB_REAPED: 410, INVALID_REQUEST: 400 }

/** The record without its owner (the page already knows the session). */
export function wireJob(record: JobRecord): WireJob {
  const { owner: _owner, spillPath: _spill, spillError: _spillError, ...rest } = record
  return rest
}

export function apply(ctx: Context): void {
  const guard = <T>(run: () => T): T => {
    try {
      return run()
    } catch (error) {
      if (JobError.is(error)) throw new ApiError(error.code, error.message, { status: STATUS[error.code] ?? 400 })
      throw error
    }
  }
  ctx.inject(['api'], (inner) => {
    inner.api.register(jobsList, (p) => ({
      jobs: ctx.jobs
        .list({ sessionId: p.sessionId })
        .map(wireJob)
        .sort((a, b) => b.startedAt - a.startedAt),
    }))
    inner.api.register(jobsOutput, (p) =>
      guard(() => {
        const out = ctx.jobs.output(p.jobId, {
          owner: { sessionId: p.sessionId },
          ...(p.since !== undefined ? { since: p.since } : {}),
        })
        return { id: out.id, status: out.status, text: out.text, from: out.from, to: out.to, skipped: out.skipped }
      }),
    )
    inner.api.register(jobsKill, async (p) => {
      const owner = { sessionId: p.sessionId }
      guard(() => ctx.jobs.get(p.jobId, owner))
      try {
        return { job: wireJob(await ctx.jobs.kill(p.jobId, owner)) }
      } catch (error) {
        if (JobError.is(error)) throw new ApiError(error.code, error.message, { status: STATUS[error.code] ?? 400 })
        throw error
      }
    })
    const changed = (record: JobRecord) => {
      if (record.owner.sessionId) inner.api.publishHost({ type: JOBS_CHANGED, sessionId: record.owner.sessionId })
    }
    inner.on('job/started', changed)
    inner.on('job/finished', changed)
    // Output: the first write is sent at once, later ones at most once per interval (the newest
    // total wins), so a chatty job cannot flood the stream.
    const windows = new Map<string, { sessionId: string; to: number; dirty: boolean; stop: () => void }>()
    const publishOutput = (jobId: string, sessionId: string, to: number) =>
      inner.api.publishHost({ type: JOBS_OUTPUT, sessionId, jobId, to })
    inner.on('job/output', (jobId, owner, to) => {
      const sessionId = owner.sessionId
      if (!sessionId) return
      const open = windows.get(jobId)
      if (open) {
        open.to = to
        open.dirty = true
        return
      }
      publishOutput(jobId, sessionId, to)
      const slot = { sessionId, to, dirty: false, stop: () => {} }
      const tick = () => {
        if (!slot.dirty) {
          windows.delete(jobId)
          return
        }
        slot.dirty = false
        publishOutput(jobId, slot.sessionId, slot.to)
        arm()
      }
      const arm = () => {
        const timer = setTimeout(tick, JOBS_OUTPUT_INTERVAL_MS)
        slot.stop = () => clearTimeout(timer)
      }
      arm()
      windows.set(jobId, slot)
    })
    inner.effect(
      () => () => {
        for (const slot of windows.values()) slot.stop()
        windows.clear()
      },
      'ui-jobs: output windows',
    )
  })
}

export default { name, inject, Config, apply }
