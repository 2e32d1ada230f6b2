// The harness side of native/watchdog.main.c: one small process per harness that ends the
// process groups the harness runs once the harness is gone, even after a SIGKILL (which runs no
// handler here). It starts on the first `guard()`, so a run that spawns nothing never pays for it,
// and it never keeps the event loop alive. See .agents/notes/subprocess-watchdog.md.
import { spawn as spawnChild, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { Socket } from 'node:net'
import type { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { nativeSpawn, type SpawnedChild } from './addon.ts'

/** The watchdog executable scripts/build.mjs compiles (Linux). */
export const WATCHDOG_PATH = fileURLToPath(new URL('../native/build/watchdog', import.meta.url))

let unavailable: string | undefined | null = null

/** Why no watchdog can run here, or undefined when one can (looked up once). */
export function watchdogUnavailable(): string | undefined {
  if (unavailable === null) {
    if (process.platform !== 'linux') unavailable = 'the watchdog is built for Linux only'
    else if (!existsSync(WATCHDOG_PATH)) unavailable = `not built (${WATCHDOG_PATH})`
    else unavailable = undefined
  }
  return unavailable
}

interface Entry {
  graceMs: number
}

interface Running {
  child: SpawnedChild | ChildProcess
  stdin: Writable
  startedAt: number
  broken: boolean
}

/** Ids guarded now (a pgid that is also a sid), each with the grace it gets at the end. */
const guarded = new Map<number, Entry>()
let running: Running | undefined
let startError: string | undefined
let starts = 0

/**
 * Guards process group (and session) `id` until the returned release is called: if this process
 * dies first, the watchdog sends the group and its session SIGTERM, then SIGKILL after `graceMs`
 * (capped at 10 s). Guarding an id again (a reused pid) replaces the earlier entry; a release of
 * the earlier one is then a no-op. Returns a no-op release where no watchdog can run.
 */
export function guard(id: number, graceMs: number): () => void {
  if (!Number.isSafeInteger(id) || id <= 1) return () => {}
  const entry: Entry = { graceMs: Math.max(0, Math.min(Math.floor(graceMs) || 0, 10_000)) }
  guarded.set(id, entry)
  const state = ensureRunning()
  if (!state) return () => void (guarded.get(id) === entry && guarded.delete(id))
  // A new watchdog (the first, or one after the last was ended) learns every guarded id.
  if (state === 'started') sendAll()
  else send(`+${id} ${entry.graceMs}\n`)
  return () => {
    if (guarded.get(id) !== entry) return
    guarded.delete(id)
    send(`-${id}\n`)
  }
}

/** The watchdog's state, for diagnostics and tests. */
export function watchdogStatus(): {
  pid: number | undefined
  guarded: number
  starts: number
  error: string | undefined
} {
  return {
    pid: running && !running.broken ? running.child.pid : undefined,
    guarded: guarded.size,
    starts,
    error: startError,
  }
}

function send(text: string): void {
  const current = running
  if (!current || current.broken) return
  try {
    current.stdin.write(text)
  } catch {
    current.broken = true
  }
}

function sendAll(): void {
  for (const [id, entry] of guarded) send(`+${id} ${entry.graceMs}\n`)
}

/** 'running' when a watchdog already runs, 'started' when one was started now, false when none can. */
function ensureRunning(): 'running' | 'started' | false {
  if (running && !running.broken) return 'running'
  const why = watchdogUnavailable()
  if (why !== undefined) {
    startError = why
    return false
  }
  let child: SpawnedChild | ChildProcess | undefined
  try {
    // posix_spawn where the add-on loads (a new session, nothing inherited but the pipes); the
    // helper never keeps the event loop alive.
    child = nativeSpawn(WATCHDOG_PATH, [], { cwd: '/', env: {}, stdinPipe: true, keepAlive: false })
  } catch (error) {
    startError = (error as Error).message
  }
  if (!child) {
    try {
      const spawned = spawnChild(WATCHDOG_PATH, [], {
        cwd: '/',
        env: {},
        stdio: ['pipe', 'ignore', 'ignore'],
        detached: true,
      })
      spawned.unref()
      child = spawned
    } catch (error) {
      startError = (error as Error).message
      return false
    }
  }
  const stdin = child.stdin
  if (!stdin) {
    child.kill('SIGKILL')
    return false
  }
  ;(stdin as Socket).unref?.()
  for (const stream of [child.stdout, child.stderr]) {
    // Nothing is expected there; read and drop so a message never blocks the watchdog.
    stream?.resume()
    ;(stream as Socket | null)?.unref?.()
  }
  const current: Running = { child, stdin, startedAt: Date.now(), broken: false }
  running = current
  starts++
  startError = undefined
  stdin.on('error', () => (current.broken = true))
  child.once('error', (error: Error) => {
    current.broken = true
    startError = error.message
  })
  child.once('exit', () => {
    current.broken = true
    if (running !== current) return
    running = undefined
    // Someone ended the watchdog while groups run: a new one takes them over. At most one start
    // a second, so a watchdog that cannot run does not become a spawn loop.
    if (guarded.size === 0) return
    const restart = (): void => {
      if (!running && guarded.size > 0 && ensureRunning() === 'started') sendAll()
    }
    const wait = current.startedAt + 1000 - Date.now()
    if (wait <= 0) restart()
    else setTimeout(restart, wait).unref()
  })
  return 'started'
}
