// ctx.jobs on its own: ids, output cursors, the retention bound and its spill file, kill, owner
// scoping, reaping, limits, a throwing body, and app stop.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import JobRegistry, { JobError, type JobEnd, type JobIo, type JobRegistryConfig } from '../src/index.ts'

let ctx: Context | undefined
afterEach(async () => {
  ctx = undefined
})

async function boot(config: Partial<JobRegistryConfig> = {}) {
  ctx = new Context()
  await ctx.plugin(JobRegistry, config)
  return ctx
}

/** A job body the test drives by hand. */
function manual() {
  let io!: JobIo
  let finish!: (end: JobEnd) => void
  let started!: () => void
  const ready = new Promise<void>((resolve) => (started = resolve))
  const run = (given: JobIo) => {
    io = given
    started()
    return new Promise<JobEnd>((r) => {
      finish = r
      given.signal.addEventListener('abort', () => r({ status: 'killed' }))
    })
  }
  return { run, ready, write: (t: string) => io.write(t), finish: (end: JobEnd) => finish(end) }
}

const owner = { sessionId: 's1', agentId: 'a1' }

function error(fn: () => unknown): JobError {
  try {
    fn()
  } catch (e) {
    expect(JobError.is(e)).toBe(true)
    return e as JobError
  }
  throw new Error('expected a JobError')
}

describe('ctx.jobs', () => {
  it('numbers jobs per kind, reads output from a byte cursor, and reports the end', async () => {
    const c = await boot()
    const job = manual()
    const record = c.jobs.start({ kind: 'bash', description: 'count', command: 'seq 3', owner, run: job.run })
    expect(record).toMatchObject({ id: 'bash-1', status: 'running', outputBytes: 0, owner })
    expect(c.jobs.start({ kind: 'watch', description: 'w', owner, run: async () => ({ status: 'exited', exitCode: 0 }) }).id).toBe('watch-1')
    await job.ready
    job.write('one\n')
    job.write('twö\n')
    const first = c.jobs.output('bash-1')
    expect(first).toMatchObject({ text: 'one\ntwö\n', from: 0, to: 9, skipped: 0, status: 'running' })
    job.write('three\n')
    expect(c.jobs.output('bash-1', { since: first.to }).text).toBe('three\n')
    expect(c.jobs.output('bash-1', { since: 999 }).text).toBe('')
    const finished = new Promise((resolve) => c.on('job/finished', (r) => void (r.id === 'bash-1' && resolve(r))))
    job.finish({ status: 'exited', exitCode: 0 })
    expect(await c.jobs.wait('bash-1')).toMatchObject({ status: 'exited', exitCode: 0, outputBytes: 15 })
    expect(await finished).toMatchObject({ id: 'bash-1', status: 'exited' })
    expect(c.jobs.output('bash-1', { since: 4 }).text).toBe('twö\nthree\n')
    expect(error(() => c.jobs.output('bash-1', { since: -1 })).code).toBe('INVALID_REQUEST')
  })

  it('keeps the newest retainBytes in memory and the whole output in a spill file', async () => {
    const spillDir = mkdtempSync(join(tmpdir(), 'dsh-jobs-'))
    const c = await boot({ retainBytes: 1024, spillDir })
    const job = manual()
    c.jobs.start({ kind: 'bash', description: 'flood', owner, run: job.run })
    await job.ready
    const line = (i: number) => `line ${String(i).padStart(4, '0')}\n`
    let all = ''
    for (let i = 0; i < 500; i++) {
      all += line(i)
      job.write(line(i))
    }
    const out = c.jobs.output('bash-1')
    expect(out.to).toBe(all.length)
    expect(out.text.length).toBeLessThanOrEqual(1024)
    expect(out.skipped).toBe(out.from)
    expect(all.endsWith(out.text)).toBe(true)
    expect(out.spillPath).toBe(join(spillDir, 'bash-1.log'))
    job.finish({ status: 'exited', exitCode: 0 })
    await c.jobs.wait('bash-1')
    expect(readFileSync(out.spillPath!, 'utf8')).toBe(all)
  })

  it('kill aborts a running job; owner scoping, unknown and reaped ids are refused', async () => {
    const c = await boot({ keepFinished: 1 })
    const job = manual()
    c.jobs.start({ kind: 'bash', description: 'long', owner, run: job.run })
    await job.ready
    expect(error(() => c.jobs.get('bash-1', { sessionId: 'other' })).code).toBe('UNKNOWN_JOB')
    await expect(c.jobs.kill('bash-1', { sessionId: 'other' })).rejects.toMatchObject({ code: 'UNKNOWN_JOB' })
    expect(c.jobs.list({ sessionId: 'other' })).toEqual([])
    expect(await c.jobs.kill('bash-1', owner)).toMatchObject({ status: 'killed' })
    // Killing again resolves with the same end.
    expect(await c.jobs.kill('bash-1', owner)).toMatchObject({ status: 'killed' })
    expect(error(() => c.jobs.output('nope-3', { owner })).message).toBe('no background job "nope-3" (known: bash-1)')
    // keepFinished 1: the next finished job reaps bash-1.
    c.jobs.start({ kind: 'bash', description: 'quick', owner, run: async () => ({ status: 'exited', exitCode: 0 }) })
    await c.jobs.wait('bash-2')
    const reaped = error(() => c.jobs.output('bash-1', { owner }))
    expect(reaped.code).toBe('JOB_REAPED')
  })

  it('a throwing body fails the job; maxRunning refuses more; app/stopping kills what runs', async () => {
    const c = await boot({ maxRunning: 1 })
    c.jobs.start({
      kind: 'bash',
      description: 'broken',
      owner,
      run: () => {
        throw new Error('cannot start')
      },
    })
    expect(await c.jobs.wait('bash-1')).toMatchObject({ status: 'failed', error: { code: 'JOB_ERROR', message: 'cannot start' } })
    const job = manual()
    c.jobs.start({ kind: 'bash', description: 'long', owner, run: job.run })
    await job.ready
    expect(error(() => c.jobs.start({ kind: 'bash', description: 'x', owner, run: job.run })).code).toBe('TOO_MANY_JOBS')
    expect(error(() => c.jobs.start({ kind: 'Bad Kind', description: 'x', owner, run: job.run })).code).toBe('INVALID_REQUEST')
    await c.parallel('app/stopping' as never, {} as never)
    expect(c.jobs.get('bash-2')).toMatchObject({ status: 'killed' })
    expect(existsSync(join(tmpdir(), 'never'))).toBe(false)
  })
})
