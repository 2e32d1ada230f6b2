// ctx.jobs on its own: ids, output cursors, the retention bound and its spill file, kill, owner
// scoping, reaping, limits, a throwing body, and app stop.
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
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
    expect(
      c.jobs.start({ kind: 'watch', description: 'w', owner, run: async () => ({ status: 'exited', exitCode: 0 }) }).id,
    ).toBe('watch-1')
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

  // Issue #35: the old default spill dir was the predictable `<tmp>/dsh-jobs-<pid>`, opened with
  // 'w' through whatever a confined command planted there (a link to $DSH_HOME/cordis.patch.yml
  // turned the job's output into the next run's config). The files were also world-readable.
  it('never writes through links planted at the old predictable spill path; files are private', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-jobs-home-'))
    const victim = join(home, 'cordis.patch.yml')
    writeFileSync(victim, "# the user's layer\n")
    const planted = mkdtempSync(join(tmpdir(), 'dsh-jobs-planted-'))
    symlinkSync(victim, join(planted, 'bash-1.log'))
    const predictable = join(tmpdir(), `dsh-jobs-${process.pid}`)
    rmSync(predictable, { recursive: true, force: true })
    symlinkSync(planted, predictable)
    try {
      const c = await boot({ retainBytes: 1024 })
      const job = manual()
      c.jobs.start({ kind: 'bash', description: 'flood', owner, run: job.run })
      await job.ready
      const payload = 'x: !!js/function "function () { return 1 }"\n'.repeat(100)
      job.write(payload)
      job.finish({ status: 'exited', exitCode: 0 })
      const record = await c.jobs.wait('bash-1')
      expect(readFileSync(victim, 'utf8')).toBe("# the user's layer\n")
      expect(record.spillError).toBeUndefined()
      const spillPath = record.spillPath!
      expect(spillPath.startsWith(predictable)).toBe(false)
      expect(readFileSync(spillPath, 'utf8')).toBe(payload)
      expect(statSync(spillPath).mode & 0o777).toBe(0o600)
      const dir = join(spillPath, '..')
      expect(lstatSync(dir).isSymbolicLink()).toBe(false)
      expect(statSync(dir).mode & 0o777).toBe(0o700)
      expect(statSync(join(dir, '..')).mode & 0o777).toBe(0o700)
    } finally {
      rmSync(predictable, { force: true })
      rmSync(planted, { recursive: true, force: true })
      rmSync(home, { recursive: true, force: true })
    }
  })

  it('refuses a configured spill dir that is a symlink, with a clear error on the record', async () => {
    const target = mkdtempSync(join(tmpdir(), 'dsh-jobs-target-'))
    const spillDir = join(mkdtempSync(join(tmpdir(), 'dsh-jobs-cfg-')), 'spill')
    symlinkSync(target, spillDir)
    const c = await boot({ retainBytes: 1024, spillDir })
    const job = manual()
    c.jobs.start({ kind: 'bash', description: 'flood', owner, run: job.run })
    await job.ready
    job.write('y'.repeat(4096))
    const out = c.jobs.output('bash-1')
    expect(out.spillPath).toBeUndefined()
    expect(out.spillError).toBe(
      `cannot spill the output of bash-1: refusing to write into ${spillDir}: it is a symbolic link`,
    )
    expect(out.text).toBe('y'.repeat(1024))
    job.finish({ status: 'exited', exitCode: 0 })
    expect((await c.jobs.wait('bash-1')).spillError).toBe(out.spillError)
    expect(readdirSync(target)).toEqual([])
  })

  it('never reuses a spill file an earlier process left in a configured dir', async () => {
    const spillDir = mkdtempSync(join(tmpdir(), 'dsh-jobs-'))
    writeFileSync(join(spillDir, 'bash-1.log'), 'earlier run\n')
    const c = await boot({ retainBytes: 1024, spillDir })
    const job = manual()
    c.jobs.start({ kind: 'bash', description: 'flood', owner, run: job.run })
    await job.ready
    job.write('z'.repeat(2048))
    job.finish({ status: 'exited', exitCode: 0 })
    const record = await c.jobs.wait('bash-1')
    expect(record.spillPath).toBe(join(spillDir, 'bash-1-2.log'))
    expect(readFileSync(join(spillDir, 'bash-1.log'), 'utf8')).toBe('earlier run\n')
    expect(readFileSync(record.spillPath!, 'utf8')).toBe('z'.repeat(2048))
  })

  it('stops spilling at the per-session cap, says so, and keeps the newest output readable', async () => {
    const spillDir = mkdtempSync(join(tmpdir(), 'dsh-jobs-'))
    const c = await boot({ retainBytes: 1024, spillDir, spillMaxBytes: 3000 })
    const capped = { sessionId: `cap-${Date.now()}` }
    const first = manual()
    c.jobs.start({ kind: 'bash', description: 'one', owner: capped, run: first.run })
    await first.ready
    first.write('a'.repeat(2000))
    first.finish({ status: 'exited', exitCode: 0 })
    expect((await c.jobs.wait('bash-1')).spillError).toBeUndefined()
    const second = manual()
    c.jobs.start({ kind: 'bash', description: 'two', owner: capped, run: second.run })
    await second.ready
    second.write('b'.repeat(1500))
    second.write('c'.repeat(600))
    second.finish({ status: 'exited', exitCode: 0 })
    const record = await c.jobs.wait('bash-2')
    expect(record.spillError).toBe(
      `the session's spill cap (3000 bytes) was reached: the spill file ends after 1000 bytes`,
    )
    expect(readFileSync(record.spillPath!, 'utf8')).toMatch(
      /^b{1000}\n\[dsh: the spill cap of 3000 bytes for this session was reached/,
    )
    expect(c.jobs.output('bash-2').text.endsWith('c'.repeat(600))).toBe(true)
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
    expect(await c.jobs.wait('bash-1')).toMatchObject({
      status: 'failed',
      error: { code: 'JOB_ERROR', message: 'cannot start' },
    })
    const job = manual()
    c.jobs.start({ kind: 'bash', description: 'long', owner, run: job.run })
    await job.ready
    expect(error(() => c.jobs.start({ kind: 'bash', description: 'x', owner, run: job.run })).code).toBe(
      'TOO_MANY_JOBS',
    )
    expect(error(() => c.jobs.start({ kind: 'Bad Kind', description: 'x', owner, run: job.run })).code).toBe(
      'INVALID_REQUEST',
    )
    await c.parallel('app/stopping' as never, {} as never)
    expect(c.jobs.get('bash-2')).toMatchObject({ status: 'killed' })
    expect(existsSync(join(tmpdir(), 'never'))).toBe(false)
  })
})
