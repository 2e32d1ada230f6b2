// @dsh/subprocess-e2b against the local E2B stand-in (real SDK, real envd wire format): spec
// validation, exit codes and signals, kill with grace, cwd and environment, retention bounds,
// the BASH_ENV mirror, and the exit record when the sandbox or its stream goes away mid-command.
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'
import E2bService, { REMOTE_STATE_DIR } from '@dsh/e2b'
import {
  SubprocessError,
  type OutputChunk,
  type ProcessExit,
  type ProcessHandle,
  type SpawnSpec,
} from '@dsh/subprocess'
import E2bSubprocessService, { type E2bSubprocessConfig } from '../src/index.ts'

let standin: E2bStandin
let local: string
const cwd = '/work/subprocess-e2b-project'

beforeAll(async () => {
  standin = await startE2bStandin()
  process.env.E2B_API_KEY = standin.apiKey
  local = mkdtempSync(join(tmpdir(), 'dsh-subprocess-e2b-'))
})
afterAll(async () => {
  await standin?.close()
  if (local) rmSync(local, { recursive: true, force: true })
})

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

/** The owner and the provider under test, in a fresh Cordis tree; disposed after the test. */
async function world(config: Partial<E2bSubprocessConfig> = {}) {
  const ctx = new Context()
  const owner = await ctx.plugin(E2bService, {
    apiUrl: standin.url,
    sandboxUrl: standin.url,
    cwd,
    retryDelayMs: 10,
    retries: 0,
    upload: { enabled: false, maxBytes: 1 << 20, exclude: [] },
    patch: { enabled: false },
  })
  const provider = await ctx.plugin(E2bSubprocessService, config)
  await new Promise<void>((resolve) => ctx.inject(['e2b', 'subprocess'], () => resolve()))
  let disposed = false
  const dispose = async () => {
    if (disposed) return
    disposed = true
    await provider.dispose()
    await owner.dispose()
  }
  closers.push(dispose)
  return { ctx, sub: ctx.subprocess, provider }
}

const decode = (bytes: Uint8Array | undefined) => new TextDecoder().decode(bytes ?? new Uint8Array(0))
const merged = (exit: ProcessExit) => decode(exit.output.merged?.head)
const spec = (extra: Partial<SpawnSpec> = {}): SpawnSpec => ({ file: 'true', cwd, kill: { graceMs: 5000 }, ...extra })
const bash = (command: string, extra: Partial<SpawnSpec> = {}) =>
  spec({ file: 'bash', args: ['-c', command], ...extra })

/** Resolves with the output seen so far once it contains `text`. */
function outputContaining(handle: ProcessHandle, text: string): Promise<string> {
  let seen = ''
  return new Promise((resolve) => {
    const off = handle.onOutput((chunk) => {
      seen += decode(chunk.data)
      if (seen.includes(text)) {
        off()
        resolve(seen)
      }
    })
  })
}

const since = (mark: number) => standin.requests.slice(mark)

/**
 * The signal numbers the provider sends to envd from now on (15 TERM, 9 KILL), read off the SDK's
 * own envd client on their way out: the stand-in's processes may die of the TERM that reached
 * bubblewrap before their trap's output is out, so the output alone cannot tell TERM from KILL.
 */
async function signalsSent(ctx: Context): Promise<number[]> {
  const sandbox = await ctx.e2b.sandbox()
  type Rpc = { sendSignal(request: { signal: number }): Promise<unknown> }
  const rpc = (sandbox.commands as unknown as { rpc: Rpc }).rpc
  const original = rpc.sendSignal.bind(rpc)
  const sent: number[] = []
  rpc.sendSignal = (request) => {
    sent.push(request.signal)
    return original(request)
  }
  return sent
}

describe('subprocess-e2b: spec validation', () => {
  it('refuses a bad spec with INVALID_SPEC before any request', async () => {
    const { sub } = await world()
    const mark = standin.requests.length
    const bad: Array<[Partial<SpawnSpec> | null, RegExp]> = [
      [{ file: '' }, /file must be a non-empty string/],
      [{ file: 'a\0b' }, /file must be a non-empty string/],
      [{ args: 'x' as never }, /args must be an array/],
      [{ args: ['ok', 'n\0ul'] }, /args must be an array/],
      [{ cwd: 'relative/dir' }, /cwd must be an absolute path/],
      [{ kill: undefined as never }, /kill.graceMs/],
      [{ kill: { graceMs: -1 } }, /kill.graceMs/],
      [{ kill: { graceMs: 1.5 } }, /kill.graceMs/],
      [{ retention: { maxBytes: 10, headBytes: 6, tailBytes: 6 } }, /must not exceed retention.maxBytes/],
      [{ env: { set: { 'A=B': 'x' } } }, /invalid environment variable name/],
      [{ env: { set: { '': 'x' } } }, /invalid environment variable name/],
      [{ env: { set: { OK: 'a\0b' } } }, /environment variable OK must be a string without NUL/],
      [{ stderr: 'stdout', retentionMode: 'separate' }, /retentionMode "separate" needs stderr: "pipe"/],
    ]
    for (const [extra, message] of bad) {
      let thrown: unknown
      try {
        sub.spawn({ ...spec(), ...extra } as SpawnSpec)
      } catch (error) {
        thrown = error
      }
      expect(thrown, JSON.stringify(extra)).toBeInstanceOf(SubprocessError)
      expect(thrown, JSON.stringify(extra)).toMatchObject({
        code: 'INVALID_SPEC',
        message: expect.stringMatching(message),
      })
    }
    expect(() => sub.spawn(null as never)).toThrow(/expected a spawn spec object/)
    const terminal = { ...spec(), cols: 80, rows: 24 }
    expect(() => sub.spawnTerminal({ ...terminal, cols: 0 })).toThrow(/cols must be an integer/)
    expect(() => sub.spawnTerminal({ ...terminal, rows: 10_001 })).toThrow(/rows must be an integer/)
    // Nothing reached E2B: no sandbox was created for a refused spec.
    expect(since(mark)).toEqual([])
  })

  it('refuses stdin calls on a process without a stdin pipe', async () => {
    const { sub } = await world()
    const handle = sub.spawn(spec())
    expect(() => handle.write('x')).toThrow(expect.objectContaining({ code: 'INVALID_SPEC' }))
    expect(() => handle.closeStdin()).toThrow(expect.objectContaining({ code: 'INVALID_SPEC' }))
    expect((await handle.exited).code).toBe(0)
  })
})

describe('subprocess-e2b: running commands', () => {
  it('reports exit codes and keeps stdout and stderr per the retention mode', async () => {
    const { sub } = await world()
    const script = 'echo out; echo err >&2; exit 3'
    const both = await sub.spawn(bash(script)).exited
    expect(both).toMatchObject({ code: 3, signal: null })
    expect(both.spawnError).toBeUndefined()
    expect(merged(both).split('\n').sort()).toEqual(['', 'err', 'out'])
    const separate = await sub.spawn(bash(script, { retentionMode: 'separate' })).exited
    expect(decode(separate.output.stdout?.head)).toBe('out\n')
    expect(decode(separate.output.stderr?.head)).toBe('err\n')
    expect(separate.output.merged).toBeUndefined()
    // `none` keeps nothing, yet listeners see every chunk.
    const quiet = sub.spawn(bash(script, { retentionMode: 'none' }))
    const chunks: OutputChunk[] = []
    quiet.onOutput((chunk) => chunks.push(chunk))
    const none = await quiet.exited
    expect(none.output).toEqual({})
    expect(chunks.map((c) => `${c.stream}:${decode(c.data)}`).sort()).toEqual(['stderr:err\n', 'stdout:out\n'])
  })

  it('merges stderr into stdout with stderr: "stdout", in write order', async () => {
    const { sub } = await world()
    const handle = sub.spawn(bash('echo one; echo two >&2; echo three', { stderr: 'stdout' }))
    const streams = new Set<string>()
    handle.onOutput((chunk) => streams.add(chunk.stream))
    const exit = await handle.exited
    expect(merged(exit)).toBe('one\ntwo\nthree\n')
    expect([...streams]).toEqual(['stdout'])
  })

  it('runs in spec.cwd, and a missing cwd is CWD_NOT_FOUND', async () => {
    const { sub } = await world()
    expect(merged(await sub.spawn(bash('mkdir -p deep/er')).exited)).toBe('')
    expect(merged(await sub.spawn(bash('pwd', { cwd: `${cwd}/deep/er` })).exited)).toBe(`${cwd}/deep/er\n`)
    const missing = await sub.spawn(bash('pwd', { cwd: `${cwd}/nowhere` })).exited
    expect(missing).toMatchObject({ code: null, signal: null, spawnError: { code: 'CWD_NOT_FOUND' } })
    expect(missing.spawnError?.message).toMatch(/^working directory does not exist in the E2B sandbox: /)
    expect(missing.spawnError?.started).toBeUndefined()
  })

  it("passes env.set over the sandbox's environment, never this process's, and exact runs under env -i", async () => {
    const { sub } = await world()
    process.env.DSH_SUBPROCESS_E2B_HOST_ONLY = 'host-secret'
    try {
      const env = merged(
        await sub.spawn(spec({ file: 'env', env: { set: { GREETING: 'hi there', DROPPED: undefined } } })).exited,
      )
      const lines = env.split('\n')
      expect(lines).toContain('GREETING=hi there')
      expect(lines).toContain('E2B_SANDBOX=true')
      expect(env).not.toContain('DSH_SUBPROCESS_E2B_HOST_ONLY')
      expect(env).not.toContain('DROPPED')
    } finally {
      delete process.env.DSH_SUBPROCESS_E2B_HOST_ONLY
    }
    const exact = await sub.spawn(spec({ file: 'env', env: { base: 'exact', set: { ONLY: "it's 1" } } })).exited
    expect(merged(exact)).toBe("ONLY=it's 1\n")
    // Arguments reach the program as they are (quoted for the remote shell).
    const args = await sub.spawn(spec({ file: 'printf', args: ['%s|', 'a b', "c'd", '$HOME', ''] })).exited
    expect(merged(args)).toBe("a b|c'd|$HOME||")
  })

  it('feeds stdin written as bytes and strings, then closes it', async () => {
    const { sub } = await world()
    const cat = sub.spawn(spec({ file: 'cat', stdin: 'pipe' }))
    cat.write(new TextEncoder().encode('bytes '))
    cat.write('and text\n')
    cat.closeStdin()
    const exit = await cat.exited
    expect(exit.code).toBe(0)
    expect(merged(exit)).toBe('bytes and text\n')
  })
})

describe('subprocess-e2b: retention', () => {
  it('keeps everything up to maxBytes, then only the head and the tail', async () => {
    const { sub } = await world()
    const retention = { maxBytes: 100, headBytes: 30, tailBytes: 50 }
    const cat = sub.spawn(spec({ file: 'cat', stdin: 'pipe', retention }))
    let all = ''
    // One 40-byte chunk at a time, each echoed back before the next: five separate output chunks.
    for (const letter of 'abcde') {
      const chunk = `${letter.repeat(39)}\n`
      all += chunk
      const echoed = outputContaining(cat, chunk)
      cat.write(chunk)
      await echoed
      const now = cat.retained().merged
      if (all.length <= 100) {
        expect(now).toMatchObject({ totalBytes: all.length, truncated: false, retainedBytes: all.length })
        expect(decode(now?.head)).toBe(all)
      } else {
        // From the chunk that crossed maxBytes on: the first 30 bytes and the last 50.
        expect(now).toMatchObject({ totalBytes: all.length, truncated: true, retainedBytes: 80 })
        expect(decode(now?.head)).toBe(all.slice(0, 30))
        expect(decode(now?.tail)).toBe(all.slice(-50))
      }
    }
    cat.closeStdin()
    const exit = await cat.exited
    const kept = exit.output.merged
    expect(kept).toMatchObject({ totalBytes: 200, truncated: true, retainedBytes: 80 })
    expect(decode(kept?.head)).toBe(all.slice(0, 30))
    expect(decode(kept?.tail)).toBe(all.slice(-50))
    expect(kept?.spillPath).toBeUndefined()
  })

  it('bounds each stream on its own with separate retention', async () => {
    const { sub } = await world()
    const retention = { maxBytes: 10, headBytes: 2, tailBytes: 3 }
    const exit = await sub.spawn(
      bash('printf 0123456789ABCDEF; printf short >&2', { retention, retentionMode: 'separate' }),
    ).exited
    expect(exit.output.stdout).toMatchObject({ totalBytes: 16, truncated: true, retainedBytes: 5 })
    expect(decode(exit.output.stdout?.head)).toBe('01')
    expect(decode(exit.output.stdout?.tail)).toBe('DEF')
    expect(exit.output.stderr).toMatchObject({ totalBytes: 5, truncated: false })
    expect(decode(exit.output.stderr?.head)).toBe('short')
  })
})

describe('subprocess-e2b: signals and termination', () => {
  const sleeper = 'echo ready; sleep 30'

  it('sends SIGTERM through envd as TERM, and other signals as TERM too', async () => {
    const { ctx, sub } = await world()
    const sent = await signalsSent(ctx)
    const term = sub.spawn(bash(sleeper))
    await outputContaining(term, 'ready')
    term.signal('SIGTERM')
    const exit = await term.exited
    expect(exit).toMatchObject({ code: null, signal: 'SIGTERM', escalation: 'SIGTERM' })
    expect(exit.terminated).toBeUndefined()
    expect(merged(exit)).toBe('ready\n')
    // envd knows only TERM and KILL: SIGINT goes out as TERM, not as a kill.
    const int = sub.spawn(bash(sleeper))
    await outputContaining(int, 'ready')
    int.signal('SIGINT')
    expect(await int.exited).toMatchObject({ code: null, signal: 'SIGTERM', escalation: 'SIGTERM' })
    expect(sent).toEqual([15, 15])
  })

  it('SIGKILL goes out as KILL', async () => {
    const { ctx, sub } = await world()
    const sent = await signalsSent(ctx)
    const handle = sub.spawn(bash(sleeper))
    await outputContaining(handle, 'ready')
    handle.signal('SIGKILL')
    const exit = await handle.exited
    expect(exit).toMatchObject({ code: null, signal: 'SIGKILL', escalation: 'SIGKILL' })
    expect(sent).toEqual([9])
  })

  it('terminate() sends TERM, and KILL only when the process outlives the grace', async () => {
    const { ctx, sub } = await world()
    const sent = await signalsSent(ctx)
    // Ends within the grace: TERM alone, and terminate() does not wait the grace out.
    const polite = sub.spawn(bash(sleeper, { kill: { graceMs: 600_000 } }))
    await outputContaining(polite, 'ready')
    const exit = await polite.terminate()
    expect(exit).toMatchObject({ code: null, terminated: 'requested', escalation: 'SIGTERM', signal: 'SIGTERM' })
    expect(sent).toEqual([15])
    // The TERM is lost on the way (envd answers 500), so the process still runs when the grace
    // ends: KILL follows.
    sent.length = 0
    const stubborn = sub.spawn(bash(sleeper, { kill: { graceMs: 50 } }))
    await outputContaining(stubborn, 'ready')
    standin.faults.push({ method: 'POST', path: '/process.Process/SendSignal', status: 500, times: 1 })
    const mark = standin.requests.length
    const killed = await stubborn.terminate()
    expect(killed).toMatchObject({ code: null, terminated: 'requested', escalation: 'SIGKILL', signal: 'SIGKILL' })
    expect(merged(killed)).toBe('ready\n')
    expect(sent).toEqual([15, 9])
    expect(
      since(mark)
        .filter((r) => r.path === '/process.Process/SendSignal')
        .map((r) => r.status),
    ).toEqual([500, 200])
  })

  it('reports an exit code the process chose as a code, not a signal', async () => {
    const { sub } = await world()
    expect(await sub.spawn(bash('exit 143')).exited).toMatchObject({ code: 143, signal: null })
    expect(await sub.spawn(bash('exit 137')).exited).toMatchObject({ code: 137, signal: null })
  })

  it('an aborted spec.signal terminates with "aborted"; one aborted before the start never starts', async () => {
    const { ctx, sub } = await world()
    const sent = await signalsSent(ctx)
    const abort = new AbortController()
    const running = sub.spawn(bash(sleeper, { signal: abort.signal }))
    await outputContaining(running, 'ready')
    abort.abort()
    const exit = await running.exited
    expect(exit).toMatchObject({ code: null, terminated: 'aborted', signal: 'SIGTERM' })
    expect(sent).toEqual([15])
    const mark = standin.requests.length
    const early = await sub.spawn(bash('echo never', { signal: AbortSignal.abort() })).exited
    expect(early).toMatchObject({ code: null, signal: null, terminated: 'aborted' })
    expect(merged(early)).toBe('')
    expect(since(mark).filter((r) => r.path === '/process.Process/Start')).toEqual([])
  })

  it('unloading the provider terminates live processes ("disposed") and refuses new spawns', async () => {
    const { ctx, sub, provider } = await world()
    const sent = await signalsSent(ctx)
    const handle = sub.spawn(bash(sleeper))
    await outputContaining(handle, 'ready')
    await provider.dispose()
    const exit = await handle.exited
    expect(exit).toMatchObject({ code: null, terminated: 'disposed', escalation: 'SIGTERM' })
    expect(sent).toEqual([15])
    expect(() => sub.spawn(spec())).toThrow(expect.objectContaining({ code: 'DISPOSED' }))
  })
})

describe('subprocess-e2b: BASH_ENV', () => {
  it('mirrors a local BASH_ENV file once per sandbox and points the command at the copy', async () => {
    const { sub } = await world()
    const text = 'export FROM_BASH_ENV=mirrored\n'
    const file = join(local, 'bash-env.sh')
    writeFileSync(file, text)
    const hash = createHash('sha256').update(text).digest('hex').slice(0, 16)
    const remote = `${REMOTE_STATE_DIR}/bash-env-${hash}.sh`
    const mark = standin.requests.length
    const show = bash('echo "$BASH_ENV $FROM_BASH_ENV"', { env: { set: { BASH_ENV: file } } })
    expect(merged(await sub.spawn(show).exited)).toBe(`${remote} mirrored\n`)
    expect(merged(await sub.spawn(show).exited)).toBe(`${remote} mirrored\n`)
    expect(since(mark).filter((r) => r.path === '/files')).toHaveLength(1)
    // A path that is no local file may name one of the sandbox: it is passed on as it is.
    const remoteOnly = bash('echo "$BASH_ENV"', { env: { set: { BASH_ENV: '/etc/no-such-bash-env' } } })
    const separate = await sub.spawn({ ...remoteOnly, retentionMode: 'separate' }).exited
    expect(decode(separate.output.stdout?.head)).toBe('/etc/no-such-bash-env\n')
  })

  it('passes a BASH_ENV over maxBashEnvBytes on unmirrored', async () => {
    const { sub } = await world({ maxBashEnvBytes: 8 })
    const file = join(local, 'big-bash-env.sh')
    writeFileSync(file, 'export TOO_BIG=1\n')
    const mark = standin.requests.length
    const exit = await sub.spawn(
      bash('echo "$BASH_ENV"', { env: { set: { BASH_ENV: file } }, retentionMode: 'separate' }),
    ).exited
    expect(decode(exit.output.stdout?.head)).toBe(`${file}\n`)
    expect(since(mark).filter((r) => r.path === '/files')).toEqual([])
  })
})

describe('subprocess-e2b: a remote that fails', () => {
  it('keeps the output and says E2B_SANDBOX_LOST when the sandbox dies under a command', async () => {
    const { ctx, sub } = await world()
    const handle = sub.spawn(bash('echo begun; sleep 30'))
    await outputContaining(handle, 'begun')
    const id = ctx.e2b.sandboxId as string
    standin.kill(id)
    const exit = await handle.exited
    expect(exit).toMatchObject({ code: null, signal: null })
    expect(exit.spawnError).toMatchObject({ code: 'E2B_SANDBOX_LOST', started: true })
    expect(exit.spawnError?.message).toContain(`sandbox ${id} stopped`)
    expect(merged(exit)).toBe('begun\n')
  })

  it('says E2B_STREAM_DROPPED when the stream breaks under a running sandbox, stops the command, keeps the sandbox', async () => {
    const { ctx, sub } = await world()
    const drop = standin.dropStream('drop-marker-1')
    const handle = sub.spawn(bash('echo first; sleep 600; echo drop-marker-1'))
    const exit = await handle.exited
    const dropped = await drop.dropped
    const id = dropped.sandboxId as string
    expect(ctx.e2b.sandboxId).toBe(id)
    expect(merged(exit)).toBe('first\n')
    expect(exit).toMatchObject({ code: null, signal: null })
    expect(exit.spawnError).toMatchObject({ code: 'E2B_STREAM_DROPPED', started: true })
    expect(exit.spawnError?.message).toMatch(
      new RegExp(
        `^the connection to the E2B sandbox ${id} dropped while the command ran \\(.*\\), so its exit status is unknown; .*the command was stopped there, and the next command reconnects$`,
      ),
    )
    // The orphan was stopped in the sandbox, which is still the one the next command uses.
    await expect.poll(() => standin.get(id)?.processes.size).toBe(0)
    expect(merged(await sub.spawn(bash('echo again')).exited)).toBe('again\n')
    expect(ctx.e2b.sandboxId).toBe(id)
  })

  it('says the dropped command may still run when it could not be stopped', async () => {
    const { sub } = await world()
    // Start the sandbox first, so the fault hits the kill and nothing before it.
    expect((await sub.spawn(spec()).exited).code).toBe(0)
    const drop = standin.dropStream('drop-marker-2')
    // The kill after the drop is the only signal this command gets: envd refuses it.
    standin.faults.push({ method: 'POST', path: '/process.Process/SendSignal', status: 500, times: 1 })
    const handle = sub.spawn(bash('echo first; sleep 600; echo drop-marker-2'))
    await drop.dropped
    const exit = await handle.exited
    expect(exit.spawnError?.code).toBe('E2B_STREAM_DROPPED')
    expect(exit.spawnError?.message).toContain('the command may still be running there')
  })

  it('says SPAWN_FAILED when envd refuses to start the command', async () => {
    const { sub } = await world()
    expect((await sub.spawn(spec()).exited).code).toBe(0)
    standin.faults.push({ method: 'POST', path: '/process.Process/Start', status: 500, times: 1 })
    const exit = await sub.spawn(bash('echo never')).exited
    expect(exit).toMatchObject({ code: null, signal: null, spawnError: { code: 'SPAWN_FAILED' } })
    expect(exit.spawnError?.message).toMatch(/^the E2B sandbox could not start the command: /)
    expect(exit.spawnError?.started).toBeUndefined()
  })

  it("names the owner's failure when no sandbox can be had, without rejecting", async () => {
    const rateLimited = await world()
    standin.faults.push({ method: 'POST', path: '/sandboxes', status: 429, times: 1 })
    const limited = await rateLimited.sub.spawn(spec()).exited
    expect(limited).toMatchObject({ code: null, signal: null, spawnError: { code: 'E2B_RATE_LIMIT' } })
    expect(limited.spawnError?.message).toMatch(/^E2B is rate limiting/)
    const down = await world()
    standin.faults.push({ method: 'POST', path: '/sandboxes', status: 503, times: 1 })
    const unavailable = await down.sub.spawn(spec()).exited
    expect(unavailable.spawnError).toMatchObject({ code: 'E2B_UNAVAILABLE' })
    expect(unavailable.spawnError?.message).toMatch(/^could not create an E2B sandbox: 503/)
    const key = process.env.E2B_API_KEY
    delete process.env.E2B_API_KEY
    try {
      const keyless = await world()
      const missing = await keyless.sub.spawn(spec()).exited
      expect(missing.spawnError).toMatchObject({ code: 'E2B_MISSING_KEY' })
      expect(missing.spawnError?.message).toMatch(/needs E2B_API_KEY/)
    } finally {
      process.env.E2B_API_KEY = key
    }
  })
})
