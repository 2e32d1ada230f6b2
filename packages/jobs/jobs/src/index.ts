// @dsh/jobs: `ctx.jobs`, the process-local registry of background work. A job is anything with a
// `run(io)` body (a shell command, a watcher, ...): the registry gives it an id (`<kind>-N`), an
// abort signal, bounded output retention (the whole output spilled to a file beyond the bound),
// owner scoping, and its end as an event. Jobs outlive the turn that started them and are killed
// when the app stops or the registry unloads.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { DEFAULT_SPILL_CAP_BYTES, PrivateDir, SpillWriter, processTempDir, spillBudget } from '@dsh/spill-files'
import { CodedError } from '@dsh/brand' // also declares the app/ready and app/stopping events

export type JobStatus = 'running' | 'exited' | 'failed' | 'killed'

export interface JobOwner {
  sessionId?: string
  agentId?: string
}

/** A snapshot of one job (never live state). */
export interface JobRecord {
  id: string
  kind: string
  description: string
  /** What the job runs, for listings (e.g. the shell command). */
  command?: string
  owner: JobOwner
  status: JobStatus
  exitCode?: number | null
  error?: { code: string; message: string }
  startedAt: number
  finishedAt?: number
  /** Bytes of output produced so far. */
  outputBytes: number
  /** File with the whole output, once it outgrew the in-memory bound. */
  spillPath?: string
  /** Why the spill file is missing or incomplete (unsafe directory, full disk, the session's spill cap). */
  spillError?: string
}

export interface JobIo {
  /** Aborted by `kill()`, app stop, or registry unload. */
  signal: AbortSignal
  /** Appends output (UTF-8 text). */
  write(text: string): void
}

export interface JobEnd {
  status: 'exited' | 'failed' | 'killed'
  exitCode?: number | null
  error?: { code: string; message: string }
}

export interface StartJobOptions {
  kind: string
  description: string
  command?: string
  owner: JobOwner
  run(io: JobIo): Promise<JobEnd>
}

export interface JobOutput {
  id: string
  status: JobStatus
  /** Output from `from` (a byte offset) to `to`; `from` may be later than asked when older bytes left memory. */
  text: string
  from: number
  to: number
  /** Bytes between the requested offset and `from` that are only in `spillPath`. */
  skipped: number
  spillPath?: string
  spillError?: string
}

export type JobErrorCode = 'UNKNOWN_JOB' | 'JOB_REAPED' | 'TOO_MANY_JOBS' | 'INVALID_REQUEST'

export class JobError extends CodedError<JobErrorCode> {
  override name = 'JobError'
  static is(value: unknown): value is JobError {
    return value instanceof JobError
  }
}

declare module 'cordis' {
  interface Context {
    jobs: JobRegistry
  }
  interface Events {
    'job/started'(record: JobRecord): void
    'job/finished'(record: JobRecord): void
    /** A running job wrote output; `outputBytes` is its new total. */
    'job/output'(id: string, owner: Readonly<JobOwner>, outputBytes: number): void
  }
}

export interface JobRegistryConfig {
  retainBytes: number
  maxRunning: number
  keepFinished: number
  spillDir?: string
  spillMaxBytes: number
  killGraceMs: number
}

interface Live {
  record: JobRecord
  controller: AbortController
  /** Retained output: the newest `retainBytes` at most, starting at byte offset `base`. */
  chunks: Buffer[]
  retained: number
  base: number
  spill?: SpillWriter
  done: Promise<JobRecord>
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

export class JobRegistry extends Service {
  static Config: Schema<Partial<JobRegistryConfig>, JobRegistryConfig> = Schema.object({
    retainBytes: Schema.natural()
      .min(1024)
      .default(256 * 1024)
      .description('Output bytes kept in memory per job; beyond this the whole output goes to a spill file.'),
    maxRunning: Schema.natural().min(1).default(16).description('Most jobs running at once.'),
    keepFinished: Schema.natural().default(50).description('Finished jobs kept for job_output; older ones are reaped.'),
    spillDir: Schema.string().description(
      'Directory for spill files: a private directory (0700, owned by this user, not a symlink). Default: a private directory of this process under the system temp directory.',
    ),
    spillMaxBytes: Schema.natural()
      .default(DEFAULT_SPILL_CAP_BYTES)
      .description(
        'Most bytes spilled per session across its jobs; past it the rest of the output is dropped (the newest retainBytes stay readable).',
      ),
    killGraceMs: Schema.natural().default(5000).description('How long app stop waits for killed jobs to end.'),
  })

  // Mutated in place only: methods may run on a per-caller shadow of `this`.
  private readonly config: JobRegistryConfig
  private readonly home: Context
  private readonly live = new Map<string, Live>()
  private readonly reaped = new Set<string>()
  private readonly counters = new Map<string, number>()
  private readonly finishedOrder: string[] = []
  private spillRoot: PrivateDir | undefined

  constructor(ctx: Context, config: Partial<JobRegistryConfig> = {}) {
    super(ctx, 'jobs')
    this.home = ctx
    this.config = {
      retainBytes: 256 * 1024,
      maxRunning: 16,
      keepFinished: 50,
      killGraceMs: 5000,
      spillMaxBytes: DEFAULT_SPILL_CAP_BYTES,
      ...config,
    }
    // Jobs end with the app: killed while every row is still active, so their ends are reported.
    ctx.on('app/stopping', () => this.killAll())
    ctx.effect(() => () => void this.killAll(), 'jobs: kill all')
  }

  start(options: StartJobOptions): JobRecord {
    if (!options || typeof options.run !== 'function') throw new JobError('INVALID_REQUEST', 'a job needs a run() body')
    if (!/^[a-z][a-z0-9-]{0,15}$/.test(options.kind))
      throw new JobError('INVALID_REQUEST', `invalid job kind ${JSON.stringify(options.kind)}`)
    const running = [...this.live.values()].filter((l) => l.record.status === 'running').length
    if (running >= this.config.maxRunning) {
      throw new JobError(
        'TOO_MANY_JOBS',
        `${running} background jobs are already running (the limit is ${this.config.maxRunning}); kill or wait for one first`,
      )
    }
    const n = (this.counters.get(options.kind) ?? 0) + 1
    this.counters.set(options.kind, n)
    const record: JobRecord = {
      id: `${options.kind}-${n}`,
      kind: options.kind,
      description: options.description,
      ...(options.command !== undefined ? { command: options.command } : {}),
      owner: { ...options.owner },
      status: 'running',
      startedAt: Date.now(),
      outputBytes: 0,
    }
    const controller = new AbortController()
    let settle!: (record: JobRecord) => void
    const live: Live = {
      record,
      controller,
      chunks: [],
      retained: 0,
      base: 0,
      done: new Promise((resolve) => (settle = resolve)),
    }
    this.live.set(record.id, live)
    const io: JobIo = { signal: controller.signal, write: (text) => this.write(live, text) }
    let body: Promise<JobEnd>
    try {
      body = Promise.resolve(options.run(io))
    } catch (error) {
      body = Promise.reject(error)
    }
    void body
      .catch((error): JobEnd => ({ status: 'failed', error: { code: 'JOB_ERROR', message: describe(error) } }))
      .then((end) => {
        record.status = controller.signal.aborted ? 'killed' : end.status
        if (end.exitCode !== undefined) record.exitCode = end.exitCode
        if (end.error && record.status !== 'killed') record.error = end.error
        record.finishedAt = Date.now()
        if (live.spill) {
          live.spill.close()
          this.noteSpill(live)
        }
        this.finishedOrder.push(record.id)
        while (this.finishedOrder.length > this.config.keepFinished) {
          const old = this.finishedOrder.shift()!
          this.live.delete(old)
          this.reaped.add(old)
        }
        const final = structuredClone(record)
        try {
          this.home.emit('job/finished', final)
        } finally {
          settle(final)
        }
      })
    this.home.emit('job/started', structuredClone(record))
    return structuredClone(record)
  }

  /** Jobs visible to `owner` (same session; no owner: all), oldest first. */
  list(owner?: JobOwner): JobRecord[] {
    return [...this.live.values()].filter((l) => visible(l.record, owner)).map((l) => structuredClone(l.record))
  }

  get(id: string, owner?: JobOwner): JobRecord {
    return structuredClone(this.find(id, owner).record)
  }

  /** Output from byte offset `since` (default 0) to now. */
  output(id: string, options: { since?: number; owner?: JobOwner } = {}): JobOutput {
    const live = this.find(id, options.owner)
    const since = options.since ?? 0
    if (!Number.isInteger(since) || since < 0)
      throw new JobError('INVALID_REQUEST', 'since must be a non-negative integer byte offset')
    const total = live.record.outputBytes
    const start = Math.min(Math.max(since, live.base), total)
    const all = Buffer.concat(live.chunks)
    let slice = all.subarray(start - live.base)
    // Do not start in the middle of a UTF-8 sequence.
    let from = start
    while (slice.length > 0 && (slice[0] & 0xc0) === 0x80) {
      slice = slice.subarray(1)
      from++
    }
    return {
      id,
      status: live.record.status,
      text: slice.toString('utf8'),
      from,
      to: total,
      skipped: Math.max(0, Math.min(from, total) - Math.min(since, total)),
      ...(live.record.spillPath ? { spillPath: live.record.spillPath } : {}),
      ...(live.record.spillError ? { spillError: live.record.spillError } : {}),
    }
  }

  /** Kills a running job and resolves with its final record (a finished job resolves at once). */
  async kill(id: string, owner?: JobOwner): Promise<JobRecord> {
    const live = this.find(id, owner)
    if (live.record.status === 'running') live.controller.abort()
    return live.done
  }

  /** Resolves with the final record. */
  wait(id: string, owner?: JobOwner): Promise<JobRecord> {
    return this.find(id, owner).done
  }

  private find(id: string, owner?: JobOwner): Live {
    const live = typeof id === 'string' ? this.live.get(id) : undefined
    if (live && visible(live.record, owner)) return live
    if (typeof id === 'string' && this.reaped.has(id))
      throw new JobError('JOB_REAPED', `job ${id} finished long ago and its output was discarded`)
    const known = [...this.live.values()].filter((l) => visible(l.record, owner)).map((l) => l.record.id)
    throw new JobError(
      'UNKNOWN_JOB',
      `no background job "${String(id)}"${known.length ? ` (known: ${known.join(', ')})` : ' (there are none)'}`,
    )
  }

  private write(live: Live, text: string): void {
    if (typeof text !== 'string' || text === '') return
    const bytes = Buffer.from(text, 'utf8')
    live.record.outputBytes += bytes.length
    live.chunks.push(bytes)
    live.retained += bytes.length
    if (live.spill) {
      live.spill.write(bytes)
      this.noteSpill(live)
    }
    if (live.retained > this.config.retainBytes) this.trim(live)
    this.home.emit('job/output', live.record.id, live.record.owner, live.record.outputBytes)
  }

  private trim(live: Live): void {
    // Over the bound: from now on the whole output also goes to a file; memory keeps the tail.
    if (!live.spill && live.record.spillPath === undefined && live.record.spillError === undefined) this.openSpill(live)
    const all = Buffer.concat(live.chunks)
    const keep = all.subarray(all.length - this.config.retainBytes)
    live.base += all.length - keep.length
    live.chunks.length = 0
    live.chunks.push(Buffer.from(keep))
    live.retained = keep.length
  }

  /**
   * Opens the job's spill file in the private spill directory (never following a link, never
   * reusing a file) and writes what memory still holds. A refusal is kept on the record.
   */
  private openSpill(live: Live): void {
    const session = live.record.owner.sessionId
    try {
      // Default: a fresh private directory per registry, so job ids (which restart with the
      // registry) never meet an earlier file.
      this.spillRoot ??= this.config.spillDir
        ? PrivateDir.ensure(this.config.spillDir)
        : processTempDir().tempSubdir('jobs-')
      const budget = spillBudget(`jobs:${session ?? ''}`, this.config.spillMaxBytes)
      let spill: SpillWriter | undefined
      for (let n = 1; !spill; n++) {
        try {
          spill = new SpillWriter(
            this.spillRoot,
            n === 1 ? `${live.record.id}.log` : `${live.record.id}-${n}.log`,
            budget,
          )
        } catch (error) {
          // A configured directory shared with an earlier process: never reuse its files.
          if ((error as { code?: string }).code !== 'EEXIST' || n >= 100) throw error
        }
      }
      live.spill = spill
      live.record.spillPath = spill.path
      for (const chunk of live.chunks) spill.write(chunk)
      this.noteSpill(live)
    } catch (error) {
      live.record.spillError = `cannot spill the output of ${live.record.id}: ${describe(error)}`
      this.home.logger('jobs').warn('%s', live.record.spillError)
    }
  }

  /** Copies a spill writer's cap or error onto the record, once. */
  private noteSpill(live: Live): void {
    const spill = live.spill
    if (!spill || live.record.spillError !== undefined) return
    if (spill.error) live.record.spillError = spill.error
    else if (spill.capped)
      live.record.spillError = `the session's spill cap (${this.config.spillMaxBytes} bytes) was reached: the spill file ends after ${spill.written} bytes`
    if (live.record.spillError) this.home.logger('jobs').warn('%s: %s', live.record.id, live.record.spillError)
  }

  private async killAll(): Promise<void> {
    const running = [...this.live.values()].filter((l) => l.record.status === 'running')
    for (const l of running) l.controller.abort()
    if (running.length === 0) return
    const grace = new Promise<void>((resolve) => setTimeout(resolve, this.config.killGraceMs).unref())
    await Promise.race([Promise.allSettled(running.map((l) => l.done)), grace])
  }
}

function visible(record: JobRecord, owner?: JobOwner): boolean {
  if (!owner || owner.sessionId === undefined) return true
  return record.owner.sessionId === owner.sessionId
}

export const name = '@dsh/jobs'
export default JobRegistry
