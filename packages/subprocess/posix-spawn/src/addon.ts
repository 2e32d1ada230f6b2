// The native path of @dsh/posix-spawn: loading the add-on (native/posix_spawn.c) and starting
// children with it. index.ts re-exports it; server.ts and watchdog.ts import it from here, so no
// module imports index.ts back.
import type { EventEmitter } from 'node:events'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Socket } from 'node:net'
import { constants } from 'node:os'
import type { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { ChildBase } from './child.ts'
import { isMainThread } from 'node:worker_threads'

export interface Addon {
  spawn(
    file: string,
    argv: string[],
    envp: string[],
    cwd: string,
    stdinPipe: boolean,
    mergeStderr: boolean,
    searchPath: boolean,
    controlFd?: number,
  ): [number, number, number, number] | number
  reap(pid: number): number
  socketPair(): [number, number] | number
  closeFd(fd: number): number
  request(fd: number, bytes: Buffer, stdinPipe: boolean, mergeStderr: boolean): [number, number, number] | number
  send(fd: number, bytes: Buffer): number
}

/** The part of ChildProcess both a posix_spawn child and a child_process one give. */
export interface SpawnedChild extends EventEmitter {
  readonly pid?: number | undefined
  readonly stdin: Writable | null
  readonly stdout: Readable | null
  readonly stderr: Readable | null
  readonly exitCode: number | null
  readonly signalCode: NodeJS.Signals | string | null
  kill(signal?: NodeJS.Signals | number): boolean
}

export interface NativeSpawnOptions {
  cwd: string
  env: Record<string, string>
  stdinPipe: boolean
  /** stderr is a second descriptor of stdout's pipe (the streams interleave in write order). */
  mergeStderr?: boolean
  /** `file` may be a bare name, looked up on this process's PATH (not `env.PATH`). */
  searchPath?: boolean
  /** A descriptor of this process that becomes the child's fd 3 (a spawn server's control socket). */
  controlFd?: number
  /**
   * False: this child does not keep the event loop alive (a helper that lives as long as its
   * owner needs it, such as a spawn server). Default true, as with a ChildProcess.
   */
  keepAlive?: boolean
}

/** Where the build writes the addon (the same path from src/ and from the dist bundle). */
export const ADDON_PATH = fileURLToPath(new URL('../native/build/posix_spawn.node', import.meta.url))

let addon: Addon | null | undefined
let loadError: string | undefined

/** The addon, or null where it is not built or cannot load (then child_process is used). */
export function loadAddon(): Addon | null {
  if (addon !== undefined) return addon
  addon = null
  if (process.platform !== 'linux') loadError = 'posix_spawn path is built for Linux only'
  // Exits are seen through SIGCHLD, which only the main thread's `process` receives.
  else if (!isMainThread) loadError = 'not on the main thread'
  else if (!existsSync(ADDON_PATH)) loadError = `not built (${ADDON_PATH})`
  else {
    try {
      addon = createRequire(import.meta.url)(ADDON_PATH) as Addon
    } catch (error) {
      loadError = (error as Error).message
    }
  }
  return addon
}

/** Why the addon is not in use, when it is not. */
export function addonLoadError(): string | undefined {
  loadAddon()
  return loadError
}

/** The name of an errno value (`ENOENT`), or undefined. */
export function errnoName(errno: number): string | undefined {
  return errnoNames.get(Math.abs(errno))
}

/** The name of a signal number (`SIGTERM`), or `SIG<n>`. */
export function signalName(signal: number): string {
  return signalNames.get(signal) ?? `SIG${signal}`
}

const errnoNames = new Map<number, string>(Object.entries(constants.errno).map(([name, value]) => [value, name]))
const signalNames = new Map<number, string>(Object.entries(constants.signals).map(([name, value]) => [value, name]))

class NativeChild extends ChildBase {
  keepAlive = true

  kill(signal: NodeJS.Signals | number = 'SIGTERM'): boolean {
    if (this.exited || this.pid === undefined) return false
    try {
      process.kill(this.pid, signal)
      return true
    } catch {
      return false
    }
  }
}

// Children spawned here and not yet reaped.
const running = new Map<number, NativeChild>()
let poll: NodeJS.Timeout | undefined
let listening = false

function reapAll(): void {
  const native = addon
  if (!native) return
  for (const [pid, child] of running) {
    const status = native.reap(pid)
    if (status === -1) continue
    running.delete(pid)
    if (status === -2) child.settle(null, null)
    else if (status >= 256) child.settle(null, signalName(status - 256))
    else child.settle(status, null)
  }
  stopPoll()
}

/**
 * The poll runs only while a child that keeps the event loop alive runs: long-lived helpers (the
 * watchdog, spawn servers) would otherwise wake an idle harness five times a second for good.
 * Their exits still arrive through SIGCHLD.
 */
function stopPoll(): void {
  if (!poll) return
  for (const child of running.values()) if (child.keepAlive) return
  clearInterval(poll)
  poll = undefined
}

/**
 * Starts `file` (an absolute path) as the leader of a new session, stdout and stderr as pipes
 * (or stderr onto stdout's pipe), stdin a pipe or /dev/null. Returns undefined when the addon is
 * not available; throws an Error with `code` (an errno name) when posix_spawn fails, and with
 * `code: 'ERR_INVALID_ARG_VALUE'` for a NUL byte in the file, an argument, the working directory
 * or the environment (C strings would silently end there).
 */
export function nativeSpawn(
  file: string,
  args: readonly string[],
  options: NativeSpawnOptions,
): SpawnedChild | undefined {
  const native = loadAddon()
  if (!native) return undefined
  if (!listening) {
    listening = true
    process.on('SIGCHLD', reapAll)
  }
  const envp: string[] = []
  for (const name in options.env) envp.push(`${name}=${options.env[name]}`)
  for (const [what, values] of [
    ['file', [file]],
    ['an argument', args],
    ['cwd', [options.cwd]],
    ['the environment', envp],
  ] as const) {
    if (values.some((value) => value.includes('\0'))) {
      throw Object.assign(new Error(`posix_spawn ${file.replaceAll('\0', '\\0')}: ${what} contains a NUL byte`), {
        code: 'ERR_INVALID_ARG_VALUE',
      })
    }
  }
  const result = native.spawn(
    file,
    [file, ...args],
    envp,
    options.cwd,
    options.stdinPipe,
    options.mergeStderr === true,
    options.searchPath === true,
    options.controlFd ?? -1,
  )
  if (typeof result === 'number') {
    const code = errnoNames.get(-result) ?? 'SPAWN_FAILED'
    throw Object.assign(new Error(`posix_spawn ${file}: ${code}`), { code, errno: result })
  }
  const [pid, stdinFd, stdoutFd, stderrFd] = result
  const child = new NativeChild()
  child.pid = pid
  if (stdinFd >= 0) child.stdin = new Socket({ fd: stdinFd, readable: false, writable: true })
  child.stdout = new Socket({ fd: stdoutFd, readable: true, writable: false })
  if (stderrFd >= 0) child.stderr = new Socket({ fd: stderrFd, readable: true, writable: false })
  running.set(pid, child)
  if (options.keepAlive === false) {
    child.keepAlive = false
    for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as Socket | null)?.unref()
  } else {
    // Keeps the loop alive while the child runs (as a ChildProcess handle does), and reaps even if
    // a SIGCHLD went unseen.
    poll ??= setInterval(reapAll, 200)
  }
  // Once both pipes closed the child has usually exited: look now rather than at the next signal.
  const pipes = child.stderr ? [child.stdout, child.stderr] : [child.stdout]
  child.openPipes = pipes.length
  const closed = (): void => {
    if (--child.openPipes > 0) return
    if (child.exited) child.maybeClose()
    else setImmediate(reapAll)
  }
  for (const pipe of pipes) pipe.once('close', closed)
  return child
}
