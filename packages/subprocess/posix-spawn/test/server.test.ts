// The spawn server through its JS side: a real server process (alone, and inside bwrap where it
// works), real commands, real pipes and signals.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { SpawnServer, spawnServerUnavailable, type SpawnedChild } from '../src/index.ts'

const linux = process.platform === 'linux'
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-spawn-server-')))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' }
const servers: SpawnServer[] = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

function server(options: Partial<ConstructorParameters<typeof SpawnServer>[0]> = {}): SpawnServer {
  const s = new SpawnServer({ prefix: [], env, ...options })
  servers.push(s)
  return s
}

interface Finished {
  stdout: string
  stderr: string
  code: number | null
  signal: string | null
  error?: string
}

function finished(child: SpawnedChild): Promise<Finished> {
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (t: string) => (stdout += t))
  child.stderr?.setEncoding('utf8').on('data', (t: string) => (stderr += t))
  return new Promise((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) =>
      resolve({ stdout, stderr, code: null, signal: null, error: error.code }),
    )
    child.once('close', (code: number | null, signal: string | null) => resolve({ stdout, stderr, code, signal }))
  })
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z')
  } catch {
    return false
  }
}

async function until(check: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (check()) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return check()
}

/** bwrap with a PID namespace works here (not in every container). */
const bwrapWorks =
  linux &&
  spawnSync('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-pid', '--', 'true'])
    .status === 0

describe.runIf(linux)('spawn server', () => {
  it('is built here (scripts/build.mjs compiled native/spawn_server.main.c)', () => {
    expect(spawnServerUnavailable()).toBeUndefined()
  })

  it('runs a command with its own pipes, exact environment, working directory and exit code', async () => {
    const s = server()
    const child = s.spawn('/bin/sh', ['-c', 'echo "out $FOO $(pwd)"; echo err >&2; exit 7'], {
      cwd: dir,
      env: { FOO: 'bar' },
      stdinPipe: false,
    })
    const result = await finished(child)
    expect(result).toEqual({ stdout: `out bar ${dir}\n`, stderr: 'err\n', code: 7, signal: null })
    expect(child.pid).toBeGreaterThan(0)
    // The server's own environment does not leak into a command.
    const printed = await finished(s.spawn('/usr/bin/env', [], { cwd: dir, env: { ONLY: '1' }, stdinPipe: false }))
    expect(printed.stdout).toBe('ONLY=1\n')
  })

  it('merges stderr into stdout in write order, and feeds stdin', async () => {
    const s = server()
    const merged = await finished(
      s.spawn('/bin/sh', ['-c', 'echo 1; echo 2 >&2; echo 3'], { cwd: dir, env, stdinPipe: false, mergeStderr: true }),
    )
    expect(merged).toEqual({ stdout: '1\n2\n3\n', stderr: '', code: 0, signal: null })
    const cat = s.spawn('/bin/cat', [], { cwd: dir, env, stdinPipe: true })
    const done = finished(cat)
    cat.stdin!.end('piped text')
    expect((await done).stdout).toBe('piped text')
  })

  it('looks a bare name up on the command PATH, and reports what cannot start as an errno-named error', async () => {
    const s = server()
    expect((await finished(s.spawn('echo', ['found'], { cwd: dir, env, stdinPipe: false }))).stdout).toBe('found\n')
    expect(
      (await finished(s.spawn('echo', ['x'], { cwd: dir, env: { PATH: '/nonexistent' }, stdinPipe: false }))).error,
    ).toBe('ENOENT')
    expect((await finished(s.spawn('/no/such/program', [], { cwd: dir, env, stdinPipe: false }))).error).toBe('ENOENT')
    expect((await finished(s.spawn('/bin/true', [], { cwd: join(dir, 'missing'), env, stdinPipe: false }))).error).toBe(
      'ENOENT',
    )
    expect(() => s.spawn('/bin/echo', ['a\0b'], { cwd: dir, env, stdinPipe: false })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
    )
    // The server is still fine after all that.
    expect((await finished(s.spawn('/bin/echo', ['still'], { cwd: dir, env, stdinPipe: false }))).stdout).toBe(
      'still\n',
    )
  })

  it('signals the whole group on kill(), and ends what is left of the group when the leader exits', async () => {
    const s = server()
    const child = s.spawn('/bin/sh', ['-c', 'sleep 30 & echo $!; wait'], { cwd: dir, env, stdinPipe: false })
    let sleeper = 0
    child.stdout!.setEncoding('utf8').once('data', (t: string) => (sleeper = Number(t.trim())))
    const done = finished(child)
    await until(() => sleeper > 0)
    expect(alive(sleeper)).toBe(true)
    expect(child.kill('SIGTERM')).toBe(true)
    expect((await done).signal).toBe('SIGTERM')
    expect(await until(() => !alive(sleeper))).toBe(true)

    // A background child that outlives its leader is killed with the rest of the group.
    const leader = await finished(
      s.spawn('/bin/sh', ['-c', 'sleep 30 >/dev/null 2>&1 & echo $!'], { cwd: dir, env, stdinPipe: false }),
    )
    const orphan = Number(leader.stdout.trim())
    expect(leader.code).toBe(0)
    expect(await until(() => !alive(orphan))).toBe(true)
  })

  /** A server running `sleep 30`, with the server's own pid (the newest child of ours named spawn-server). */
  async function sleeperOnItsOwnServer() {
    const s = server()
    const child = s.spawn('/bin/sleep', ['30'], { cwd: dir, env, stdinPipe: false })
    const done = finished(child)
    await until(() => child.pid !== undefined)
    const serverPid = Number(
      spawnSync('pgrep', ['-P', String(process.pid), '-x', 'spawn-server'], { encoding: 'utf8' })
        .stdout.trim()
        .split('\n')
        .at(-1),
    )
    expect(serverPid).toBeGreaterThan(0)
    return { s, child, done, serverPid }
  }

  it('ends running commands as killed when the server dies, and refuses new ones', async () => {
    const { s, child, done, serverPid } = await sleeperOnItsOwnServer()
    process.kill(serverPid, 'SIGKILL')
    expect(await done).toMatchObject({ code: null, signal: 'SIGKILL' })
    expect(s.closed).toBe(true)
    // Without a sandbox around it, nothing ended the command with the server: its pid is a host pid.
    process.kill(child.pid!, 'SIGKILL')
    expect(() => s.spawn('/bin/true', [], { cwd: dir, env, stdinPipe: false })).toThrow(
      expect.objectContaining({ code: 'ECONNRESET' }),
    )
  })

  it('a KILL the server does not answer (it was stopped) ends the server from outside, and the command as killed', async () => {
    const { s, child, done, serverPid } = await sleeperOnItsOwnServer()
    process.kill(serverPid, 'SIGSTOP')
    expect(child.kill('SIGKILL')).toBe(true)
    expect(await done).toMatchObject({ code: null, signal: 'SIGKILL' })
    expect(s.closed).toBe(true)
    expect(await until(() => !alive(serverPid))).toBe(true)
    // Without a sandbox around it the command is a host process that outlived its server.
    process.kill(child.pid!, 'SIGKILL')
  })

  it('close() right after a spawn ends the command as killed, never as "not started"', async () => {
    // The start reply may still be in flight when this side closes: the command may be running.
    for (let i = 0; i < 20; i++) {
      const s = server()
      await s.ready
      const done = finished(s.spawn('/bin/sh', ['-c', 'exec sleep 30'], { cwd: dir, env, stdinPipe: false }))
      s.close()
      expect(await done).toMatchObject({ code: null, signal: 'SIGKILL' })
    }
  })

  it('close() kills what runs (the server sees the end of its input)', async () => {
    const s = server()
    const child = s.spawn('/bin/sh', ['-c', 'echo $$; exec sleep 30'], { cwd: dir, env, stdinPipe: false })
    let pid = 0
    child.stdout!.setEncoding('utf8').once('data', (t: string) => (pid = Number(t.trim())))
    const done = finished(child)
    await until(() => pid > 0)
    s.close()
    expect((await done).signal).toBe('SIGKILL')
    expect(await until(() => !alive(pid))).toBe(true)
  })

  it('refuses --sweep outside a PID namespace of its own, and says why', async () => {
    const s = server({ sweep: true })
    expect(await s.ready).toBe(false)
    expect(s.closed).toBe(true)
    expect(s.closeReason).toMatch(/--sweep needs a PID namespace of its own/)
    expect(() => s.spawn('/bin/true', [], { cwd: dir, env, stdinPipe: false })).toThrow(
      expect.objectContaining({ code: 'ECONNRESET' }),
    )
    // A command sent before the refusal arrived ends with the reason.
    const early = server({ sweep: true })
    let result: Finished | undefined
    try {
      result = await finished(early.spawn('/bin/true', [], { cwd: dir, env, stdinPipe: false }))
    } catch (error) {
      // The server was already gone when the request was sent.
      expect((error as NodeJS.ErrnoException).code).toMatch(/^(EPIPE|ECONNRESET)$/)
    }
    if (result) expect(result.error).toBe('ECONNRESET')
  })

  it('does not keep the event loop alive while idle', () => {
    // A node process that starts a server and runs one command must end on its own.
    const script = `
      import { SpawnServer } from ${JSON.stringify(new URL('../src/index.ts', import.meta.url).href)}
      const s = new SpawnServer({ prefix: [], env: {} })
      const child = s.spawn('/bin/echo', ['ran'], { cwd: '/', env: {}, stdinPipe: false })
      child.stdout.on('data', (d) => process.stdout.write(d))
    `
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    })
    expect(run.error).toBeUndefined()
    expect(run.stdout).toBe('ran\n')
    expect(run.status).toBe(0)
  })

  it('keeps the event loop alive while someone waits for it to come up, and only then lets go', () => {
    const script = `
      import { SpawnServer } from ${JSON.stringify(new URL('../src/index.ts', import.meta.url).href)}
      const s = new SpawnServer({ prefix: ['/bin/sh', '-c', 'sleep 0.3; exec "$0" "$@"'], env: {} })
      console.log('ready', await s.ready)
    `
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    })
    expect(run.error).toBeUndefined()
    expect(run.stdout).toBe('ready true\n')
    expect(run.status).toBe(0)
  })

  describe.runIf(bwrapWorks)('inside bwrap', () => {
    const prefix = [
      'bwrap',
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--unshare-pid',
      '--die-with-parent',
      '--unshare-net',
      '--bind',
      dir,
      dir,
      '--',
    ]

    it('confines every command, and ends what a finished command left behind, even in its own session', async () => {
      const s = server({ prefix, sweep: true })
      const outside = join(tmpdir(), `dsh-spawn-server-outside-${process.pid}`)
      const write = await finished(
        s.spawn('/bin/sh', ['-c', `touch ${outside}; touch ${dir}/inside && echo wrote`], {
          cwd: dir,
          env,
          stdinPipe: false,
          mergeStderr: true,
        }),
      )
      expect(write.stdout).toMatch(/Read-only file system/)
      expect(write.stdout).toMatch(/wrote/)
      expect(existsSync(outside)).toBe(false)
      expect(existsSync(join(dir, 'inside'))).toBe(true)
      // setsid escapes the process group, not the sweep.
      const left = await finished(
        s.spawn('/bin/sh', ['-c', '(setsid sleep 30 &); sleep 0.2; echo started'], { cwd: dir, env, stdinPipe: false }),
      )
      expect(left.stdout).toBe('started\n')
      // Reaping by the sandbox's init is asynchronous: look a few times for the sleep to be gone.
      const ps = async () =>
        (await finished(s.spawn('/bin/ps', ['-e', '-o', 'stat=,comm='], { cwd: dir, env, stdinPipe: false }))).stdout
      let names = await ps()
      for (let i = 0; i < 20 && /^\s*[^Z\s]\S*\s+sleep$/m.test(names); i++) names = await ps()
      expect(names).not.toMatch(/^\s*[^Z\s]\S*\s+sleep$/m)
      expect(names).toMatch(/spawn-server/)
    })
  })
})
