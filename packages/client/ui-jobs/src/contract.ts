// The background-job methods of the web host (browser-safe: no node imports). Every call names
// the session; a job of another session is UNKNOWN_JOB, as in `ctx.jobs` with an owner.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

/** A job as the wire carries it (the `JobRecord` of @dsh/jobs, without the owner). */
export interface WireJob {
  id: string
  kind: string
  description: string
  command?: string
  status: 'running' | 'exited' | 'failed' | 'killed'
  exitCode?: number | null
  error?: { code: string; message: string }
  startedAt: number
  finishedAt?: number
  outputBytes: number
}

export interface WireJobOutput {
  id: string
  status: WireJob['status']
  text: string
  from: number
  to: number
  skipped: number
}

/** Host stream event: the jobs of `sessionId` changed (one started or finished). */
export const JOBS_CHANGED = 'jobs/changed'
/**
 * Host stream event: job `jobId` of `sessionId` has output up to byte `to`. Sent on the first write
 * and then at most once per `JOBS_OUTPUT_INTERVAL_MS` while the job writes (the last write is
 * always sent); an open panel reads the new bytes with `jobs.output {since}`.
 */
export const JOBS_OUTPUT = 'jobs/output'
export const JOBS_OUTPUT_INTERVAL_MS = 100

const Ref = { sessionId: Schema.string().min(1).required(), jobId: Schema.string().min(1).required() }
const Job = Schema.any() as unknown as Schema<WireJob>

export const jobsList = defineMethod('jobs.list', {
  description: "The session's background jobs, newest first.",
  params: Schema.object({ sessionId: Schema.string().min(1).required() }),
  result: Schema.object({ jobs: Schema.array(Job).required() }) as Schema<{ jobs: WireJob[] }>,
})
export const jobsOutput = defineMethod('jobs.output', {
  description: "A job's output from byte `since` (default 0) to now.",
  params: Schema.object({ ...Ref, since: Schema.natural() }) as Schema<{
    sessionId: string
    jobId: string
    since?: number
  }>,
  result: Schema.any() as unknown as Schema<WireJobOutput>,
})
export const jobsKill = defineMethod('jobs.kill', {
  description: 'Stops a running job of the session and answers its final record.',
  params: Schema.object(Ref) as Schema<{ sessionId: string; jobId: string }>,
  result: Schema.object({ job: Job }) as Schema<{ job: WireJob }>,
})
