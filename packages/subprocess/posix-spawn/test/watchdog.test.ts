// The watchdog through real processes: a harness (test/fixtures/guarding-harness.mjs, on the
// built package) starts process groups and guards them; the test SIGKILLs the harness and waits
// until what it guarded is gone.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { WATCHDOG_PATH, watchdogUnavailable } from '../src/index.ts'

const HARNESS = fileURLToPath(new URL('./fixtures/guarding-harness.mjs', import.meta.url))
const WORKER_HARNESS = fileURLToPath(new URL('./fixtures/guarding-worker.mjs', import.meta.url))
const linux = process.platform === 'linux'
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-watchdog-')))
const started: number[] = []
const harnesses: ChildProcess[] = []
afterEach(() => {
  // A failed test must not leave its sleepers behind.
  for (const pid of started.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {
      // gone
    }
  }
  for (const harness of harnesses.splice(0)) harness.kill('SIGKILL')
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** True once `pid` is gone (a zombie counts as gone: it holds nothing and runs nothing). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    return state === 'Z' || state === 'X'
  } catch {
    return true
  }
}

/** Polls `check` until it answers something truthy; fails after `ms` naming `what`. */
async function until<T>(what: string, check: () => T | undefined | false, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** A child of `parent` running the watchdog, other than `except`. */
function watchdogOf(parent: number, except?: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === except) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== parent) continue
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')[0] === WATCHDOG_PATH) return Number(entry)
    } catch {
      // gone meanwhile
    }
  }
  return undefined
}

function readPid(file: string): number {
  return Number(readFileSync(file, 'utf8').trim())
}

interface Group {
  script: string
  graceMs: number
  release?: boolean
}

/** Starts the harness with `groups`; resolves with its process and what it printed. */
async function harness(
  groups: Group[],
  mode: 'stay' | 'idle' | 'rearm' = 'stay',
): Promise<{ child: ChildProcess; pids: number[]; watchdog: number }> {
  const child = spawn(process.execPath, [HARNESS, JSON.stringify(groups), mode], { stdio: ['ignore', 'pipe', 'pipe'] })
  harnesses.push(child)
  const { pids, watchdog } = JSON.parse(await firstLine(child)) as { pids: number[]; watchdog: number }
  started.push(...pids)
  return { child, pids, watchdog }
}

/** The first line the harness prints (fails when it ends first). */
function firstLine(child: ChildProcess): Promise<string> {
  return nextLine(child)
}

/** The first line the harness prints from now on (its earlier lines ended before this call). */
function nextLine(child: ChildProcess): Promise<string> {
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      if (out.includes('\n')) resolve(out.split('\n')[0])
    })
    child.once('exit', () => reject(new Error(`the harness ended early: ${stderr}`)))
  })
}

async function killHarness(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

describe.runIf(linux)('watchdog', () => {
  it('is built on Linux (scripts/build.mjs compiled it)', () => {
    expect(watchdogUnavailable()).toBeUndefined()
    expect(existsSync(WATCHDOG_PATH)).toBe(true)
  })

  it("ends a SIGKILLed harness's groups, grandchildren included: SIGTERM first, SIGKILL after the grace", {
    timeout: 60_000,
  }, async () => {
    const stubborn = join(dir, 'stubborn.pid')
    const polite = join(dir, 'polite.pid')
    const politeTerm = join(dir, 'polite.term')
    const { child, pids, watchdog } = await harness([
      // Ignores SIGTERM, and so does its grandchild: only the SIGKILL after the grace ends them.
      { script: `trap '' TERM; sleep 600 & echo $! > ${stubborn}; wait`, graceMs: 200 },
      // Ends on SIGTERM (the grace is long: a KILL would not leave the mark).
      {
        script: `trap 'echo TERM > ${politeTerm}; kill $!; exit 0' TERM; sleep 600 & echo $! > ${polite}; wait`,
        graceMs: 5000,
      },
    ])
    expect(watchdog).toBeGreaterThan(1)
    await until(
      'the grandchildren to start',
      () =>
        existsSync(stubborn) &&
        existsSync(polite) &&
        readFileSync(stubborn, 'utf8').endsWith('\n') &&
        readFileSync(polite, 'utf8').endsWith('\n'),
    )
    const grandchildren = [readPid(stubborn), readPid(polite)]
    // The watchdog leads a session of its own: no guarded group contains it.
    const stat = readFileSync(`/proc/${watchdog}/stat`, 'latin1')
      .slice(readFileSync(`/proc/${watchdog}/stat`, 'latin1').lastIndexOf(')') + 2)
      .split(' ')
    expect(Number(stat[3])).toBe(watchdog)
    for (const pid of [...pids, ...grandchildren]) expect(gone(pid)).toBe(false)

    await killHarness(child)
    await until('the guarded processes to end', () => [...pids, ...grandchildren].every(gone))
    expect(readFileSync(politeTerm, 'utf8')).toBe('TERM\n')
    await until('the watchdog to exit', () => gone(watchdog))
  })

  it('leaves a released group alone', { timeout: 60_000 }, async () => {
    const { child, pids, watchdog } = await harness([
      { script: 'sleep 600', graceMs: 100, release: true },
      { script: 'sleep 600', graceMs: 100 },
    ])
    await killHarness(child)
    // The guarded one ending and the watchdog exiting are the watchdog's whole work.
    await until('the guarded group to end', () => gone(pids[1]))
    await until('the watchdog to exit', () => gone(watchdog))
    expect(gone(pids[0])).toBe(false)
  })

  it("does not keep the harness's event loop alive", { timeout: 60_000 }, async () => {
    const { child, watchdog } = await harness([{ script: 'true', graceMs: 100 }], 'idle')
    expect(watchdog).toBeGreaterThan(1)
    const code = await new Promise((resolve) =>
      child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', resolve),
    )
    expect(code).toBe(0)
    // Its input ended with the harness: it exits too, having nothing left to end.
    await until('the watchdog to exit', () => gone(watchdog))
  })

  it('replaces a watchdog that was killed while groups run, and the new one ends them', {
    timeout: 60_000,
  }, async () => {
    const { child, pids, watchdog } = await harness([{ script: `trap '' TERM; sleep 600`, graceMs: 100 }], 'rearm')
    // Listen before the kill: the harness reports the replacement once it has sent it the groups
    // (a replacement seen in /proc may not have them yet, and would then end nothing).
    const rearmed = nextLine(child)
    process.kill(watchdog, 'SIGKILL')
    await until('the watchdog to be killed', () => gone(watchdog))
    const replacement = (JSON.parse(await rearmed) as { rearmed: number }).rearmed
    expect(replacement).not.toBe(watchdog)
    expect(watchdogOf(child.pid!, watchdog)).toBe(replacement)
    await killHarness(child)
    await until('the guarded group to end', () => pids.every(gone))
    await until('the new watchdog to exit', () => gone(replacement))
  })

  it('guards from a worker thread too (the watchdog then starts through child_process)', {
    timeout: 60_000,
  }, async () => {
    const grandchild = join(dir, 'worker-grandchild.pid')
    const child = spawn(process.execPath, [WORKER_HARNESS, `trap '' TERM; sleep 600 & echo $! > ${grandchild}; wait`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    harnesses.push(child)
    const { pids, watchdog } = JSON.parse(await firstLine(child)) as { pids: number[]; watchdog: number }
    started.push(...pids)
    expect(watchdog).toBeGreaterThan(1)
    const sleeper = await until(
      'the grandchild to start',
      () => existsSync(grandchild) && readFileSync(grandchild, 'utf8').endsWith('\n') && readPid(grandchild),
    )
    await killHarness(child)
    await until('the guarded group to end', () => [...pids, sleeper].every(gone))
    await until('the watchdog to exit', () => gone(watchdog))
  })

  // Pid reuse made real: as root, /proc/sys/kernel/ns_last_pid hands a guarded, finished group's
  // number to an unrelated process, which the watchdog must then leave alone.
  const root = typeof process.getuid === 'function' && process.getuid() === 0
  it.runIf(root)(
    "leaves alone an unrelated process that got a guarded group's number",
    { timeout: 60_000 },
    async () => {
      for (let attempt = 0; attempt < 20; attempt++) {
        const { child, pids, watchdog } = await harness([
          // Ends at once: its number is free again while it is still guarded.
          { script: 'exit 0', graceMs: 100 },
          { script: 'sleep 600', graceMs: 100 },
        ])
        const [finished, running] = pids
        await until('the first group to end', () => gone(finished) && !existsSync(`/proc/${finished}`))
        // The next pid the kernel hands out is `finished` (unless another process forks first).
        writeFileSync('/proc/sys/kernel/ns_last_pid', String(finished - 1))
        // A new session and group, like a child of the seam: its pgid is its pid.
        const unrelated = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' })
        unrelated.unref()
        const other = unrelated.pid!
        started.push(other)
        if (other !== finished) {
          await killHarness(child)
          continue
        }
        await killHarness(child)
        await until('the guarded group to end', () => gone(running))
        await until('the watchdog to exit', () => gone(watchdog))
        expect(gone(other)).toBe(false)
        return
      }
      throw new Error('no attempt got the reused pid (a busy machine forked first every time)')
    },
  )
})
