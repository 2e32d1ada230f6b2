// The posix_spawn add-on through its JS side: real children, real pipes, real signals.
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { addonLoadError, nativeSpawn, type SpawnedChild } from '../src/index.ts'

const linux = process.platform === 'linux'
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-posix-spawn-')))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' }

function start(file: string, args: string[], options: Partial<Parameters<typeof nativeSpawn>[2]> = {}): SpawnedChild {
  const child = nativeSpawn(file, args, { cwd: dir, env, stdinPipe: false, ...options })
  if (!child) throw new Error(`the add-on is not available: ${addonLoadError()}`)
  return child
}

/** Output and the exit, once the child exited and its pipes closed ('close'). */
function finished(
  child: SpawnedChild,
): Promise<{ stdout: string; stderr: string; code: number | null; signal: string | null; events: string[] }> {
  const events: string[] = []
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (t: string) => (stdout += t))
  child.stderr?.setEncoding('utf8').on('data', (t: string) => (stderr += t))
  child.once('exit', () => events.push('exit'))
  return new Promise((resolve) =>
    child.once('close', (code: number | null, signal: string | null) => {
      events.push('close')
      resolve({ stdout, stderr, code, signal, events })
    }),
  )
}

describe.runIf(linux)('posix-spawn', () => {
  it('loads on Linux (scripts/build.mjs compiled it)', () => {
    expect(addonLoadError()).toBeUndefined()
  })

  it('runs a program with separate pipes, the exact environment and the working directory', async () => {
    const child = start('/bin/sh', ['-c', 'pwd; echo "$FOO"; echo "${HOME-unset}"; echo oops >&2; exit 3'], {
      env: { ...env, FOO: 'bar' },
    })
    expect(child.pid).toBeGreaterThan(0)
    const done = await finished(child)
    expect(done).toMatchObject({ stdout: `${dir}\nbar\nunset\n`, stderr: 'oops\n', code: 3, signal: null })
    expect(done.events).toEqual(['exit', 'close'])
    expect(child.exitCode).toBe(3)
  })

  it("shares stdout's pipe with stderr when asked, in write order", async () => {
    const child = start('/bin/sh', ['-c', 'echo a; echo b >&2; echo c'], { mergeStderr: true })
    expect(child.stderr).toBeNull()
    expect((await finished(child)).stdout).toBe('a\nb\nc\n')
  })

  it('pipes stdin when asked', async () => {
    const child = start('/bin/cat', [], { stdinPipe: true })
    const done = finished(child)
    child.stdin!.end('through the pipe')
    expect((await done).stdout).toBe('through the pipe')
  })

  it('reports a signal death and kills on request', async () => {
    const child = start('/bin/sleep', ['30'])
    const done = finished(child)
    expect(child.kill('SIGTERM')).toBe(true)
    expect(await done).toMatchObject({ code: null, signal: 'SIGTERM' })
    expect(child.signalCode).toBe('SIGTERM')
    expect(child.kill()).toBe(false)
  })

  it('sees the exit of a child that closed its pipes long before', async () => {
    const child = start('/bin/sh', ['-c', 'exec >&- 2>&-; sleep 0.3; exit 4'])
    expect((await finished(child)).code).toBe(4)
  })

  it('looks a bare name up on PATH only when asked, and throws errno codes', async () => {
    expect((await finished(start('sh', ['-c', 'exit 0'], { searchPath: true }))).code).toBe(0)
    expect(() => start('sh', ['-c', 'exit 0'])).toThrow(expect.objectContaining({ code: 'ENOENT' }))
    expect(() => start(join(dir, 'missing'), [])).toThrow(expect.objectContaining({ code: 'ENOENT' }))
    expect(() => start('/bin/true', [], { cwd: join(dir, 'no-such-dir') })).toThrow(
      expect.objectContaining({ code: 'ENOENT' }),
    )
    // A NUL would end the C string early: refused, not truncated.
    expect(() => start('/bin/echo', ['a\0b'])).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    expect(() => start('/bin/true', [], { env: { ...env, X: 'a\0b' } })).toThrow(/the environment contains a NUL byte/)
  })

  it('starts the child as a session leader with every signal at its default', async () => {
    const child = start('/bin/cat', ['/proc/self/stat', '/proc/self/status'])
    const { stdout } = await finished(child)
    const fields = stdout.slice(stdout.indexOf(')') + 2).split(' ')
    expect(Number(fields[2])).toBe(child.pid)
    expect(Number(fields[3])).toBe(child.pid)
    expect(stdout).toMatch(/^SigIgn:\s+0+$/m)
    expect(stdout).toMatch(/^SigBlk:\s+0+$/m)
  })
})
