// SpawnServer: the harness side of native/spawn_server.main.c. The server is started once (behind
// a prefix such as `bwrap <flags> --`) and then starts each command on request, so a confined
// command costs a fork of a small process inside the confinement instead of setting the
// confinement up again. Each command's pipes are made here and handed over with the request; its
// start, failure and exit come back as text lines.
import { existsSync } from 'node:fs'
import { Socket } from 'node:net'
import { constants, endianness } from 'node:os'
import { fileURLToPath } from 'node:url'
import { ChildBase } from './child.ts'
import { addonLoadError, errnoName, loadAddon, nativeSpawn, signalName, type SpawnedChild } from './addon.ts'

/** The server executable scripts/build.mjs compiles (Linux). */
export const SPAWN_SERVER_PATH = fileURLToPath(new URL('../native/build/spawn-server', import.meta.url))

/** Why no spawn server can be started here, or undefined when one can. */
export function spawnServerUnavailable(): string | undefined {
  const addon = addonLoadError()
  if (addon !== undefined) return addon
  if (!existsSync(SPAWN_SERVER_PATH)) return `not built (${SPAWN_SERVER_PATH})`
  return undefined
}

export interface SpawnServerOptions {
  /** Run in front of the server, e.g. `[bwrap, ...flags, '--']`; empty: the server itself. */
  prefix: string[]
  /** Environment of the prefix and the server (not of the commands: each request carries its own). */
  env: Record<string, string>
  /**
   * Pass `--sweep`: the prefix gives the server a PID namespace of its own, and whatever is left
   * once no command runs is killed (see spawn_server.main.c). Refused by the server otherwise.
   */
  sweep?: boolean
}

export interface ServerSpawnOptions {
  cwd: string
  env: Record<string, string>
  stdinPipe: boolean
  /** stderr is a second descriptor of stdout's pipe. */
  mergeStderr?: boolean
}

/** How the caller reaches a command's process group (it lives in the server's PID namespace). */
export interface GroupReach {
  alive(): boolean
  signal(signal: NodeJS.Signals): void
}

class ServerChild extends ChildBase {
  readonly reach: GroupReach

  constructor(
    readonly id: number,
    private readonly server: SpawnServer,
  ) {
    super()
    // After the leader's exit the server has already killed the rest of its group.
    this.reach = { alive: () => !this.exited, signal: (signal) => void this.kill(signal) }
  }

  kill(signal: NodeJS.Signals | number = 'SIGTERM'): boolean {
    if (this.exited) return false
    const sent = this.server.signal(this.id, signal)
    // A KILL the server does not answer within the grace means the server itself is stopped or
    // stuck (a confined command can signal it): the whole sandbox is ended from outside, which
    // ends this command too, so a timeout always finishes.
    if (signal === 'SIGKILL' || signal === 9) {
      const timer = setTimeout(() => {
        if (!this.exited) this.server.abandon()
      }, KILL_ANSWER_MS)
      timer.unref()
      this.once('exit', () => clearTimeout(timer))
    }
    return sent
  }
}

/** How long a KILL request may go unanswered before the server counts as stuck. */
export const KILL_ANSWER_MS = 2000

const signalNumbers = constants.signals as Record<string, number>

/**
 * One running spawn server. `spawn()` answers at once with the command's pipes; the command's pid
 * arrives with its start, and a command that could not start emits 'error' (with `code`, an errno
 * name) before any pid. When the server dies (or could not start: its prefix failed), `closed`
 * turns true, waiting commands end as killed and `closeReason` says what the server printed.
 */
export class SpawnServer {
  private readonly control: Socket
  private readonly controlFd: number
  private readonly jobs = new Map<number, ServerChild>()
  private readonly process: SpawnedChild
  private nextId = 1
  private buffered = ''
  private processClosed = false
  /** close() was called: replies still in flight are dropped, so no command counts as "not started". */
  private closedHere = false
  private stderrText = ''
  closed = false
  closeReason: string | undefined
  /** True once the server said it runs (whatever ran in front of it did its setup). */
  started = false
  /** Settles once the server runs (true) or ended before that (false); never rejects. */
  readonly ready: Promise<boolean>
  private markReady!: (ok: boolean) => void

  /** Throws (with `code`) when the addon, the server binary or the prefix's spawn is unavailable. */
  constructor(options: SpawnServerOptions) {
    this.ready = new Promise((resolve) => (this.markReady = resolve))
    const why = spawnServerUnavailable()
    if (why !== undefined) throw Object.assign(new Error(`spawn server unavailable: ${why}`), { code: 'ENOTSUP' })
    const addon = loadAddon()!
    const pair = addon.socketPair()
    if (typeof pair === 'number')
      throw Object.assign(new Error(`spawn server: socketpair: ${errnoName(pair)}`), { code: errnoName(pair) })
    const [mine, theirs] = pair
    const [file, ...args] = [...options.prefix, SPAWN_SERVER_PATH, ...(options.sweep ? ['--sweep'] : [])]
    let child: SpawnedChild | undefined
    try {
      child = nativeSpawn(file!, args, {
        cwd: '/',
        env: options.env,
        stdinPipe: false,
        controlFd: theirs,
        keepAlive: false,
        searchPath: !file!.includes('/'),
      })
    } catch (error) {
      addon.closeFd(mine)
      throw error
    } finally {
      addon.closeFd(theirs)
    }
    if (!child) {
      addon.closeFd(mine)
      throw Object.assign(new Error('spawn server: posix_spawn unavailable'), { code: 'ENOTSUP' })
    }
    this.process = child
    child.once('close', () => (this.processClosed = true))
    this.controlFd = mine
    this.control = new Socket({ fd: mine, readable: true, writable: false })
    this.control.setEncoding('utf8')
    this.control.on('data', (text: string) => this.receive(text))
    this.control.on('error', () => {})
    this.control.on('close', () => this.shutDown())
    // The control socket stays referenced until the server says it runs: someone is waiting for
    // `ready` (an otherwise idle loop would end the process right there); after that, only while
    // commands run.
    for (const stream of [child.stdout, child.stderr]) {
      stream?.on('data', (data: Buffer) => {
        if (this.stderrText.length < 4096) this.stderrText += data.toString('utf8')
      })
    }
  }

  /** The command's `argv[0]` is `file` (an absolute path); throws when the request cannot be sent. */
  spawn(file: string, args: readonly string[], options: ServerSpawnOptions): SpawnedChild & { reach: GroupReach } {
    if (this.closed)
      throw Object.assign(new Error(`spawn server closed${this.closeReason ? `: ${this.closeReason}` : ''}`), {
        code: 'ECONNRESET',
      })
    const envp: string[] = []
    for (const name in options.env) envp.push(`${name}=${options.env[name]}`)
    const strings = [options.cwd, file, file, ...args, ...envp]
    if (strings.some((value) => value.includes('\0'))) {
      throw Object.assign(
        new Error(
          `spawn server ${file.replaceAll('\0', '\\0')}: an argument, the working directory or the environment contains a NUL byte`,
        ),
        { code: 'ERR_INVALID_ARG_VALUE' },
      )
    }
    const id = this.nextId++
    const body = Buffer.from(strings.join('\0') + '\0', 'utf8')
    const message = Buffer.allocUnsafe(20 + body.length)
    writeFields(message, [12 + body.length, 0x53 /* 'S' */, id, args.length + 1, envp.length])
    body.copy(message, 20)
    const result = loadAddon()!.request(this.controlFd, message, options.stdinPipe, options.mergeStderr === true)
    if (typeof result === 'number') {
      // A server that does not take requests (stopped, or its socket is gone) is of no more use,
      // and a half-sent request would garble the stream: it is ended, the next caller starts anew.
      this.abandon()
      const code = errnoName(result) ?? 'SPAWN_FAILED'
      throw Object.assign(new Error(`spawn server ${file}: ${code}`), { code })
    }
    const [stdinFd, stdoutFd, stderrFd] = result
    const child = new ServerChild(id, this)
    if (stdinFd >= 0) child.stdin = new Socket({ fd: stdinFd, readable: false, writable: true })
    child.stdout = new Socket({ fd: stdoutFd, readable: true, writable: false })
    if (stderrFd >= 0) child.stderr = new Socket({ fd: stderrFd, readable: true, writable: false })
    const pipes = child.stderr ? [child.stdout, child.stderr] : [child.stdout]
    child.openPipes = pipes.length
    for (const pipe of pipes) {
      pipe.once('close', () => {
        child.openPipes--
        child.maybeClose()
      })
    }
    this.jobs.set(id, child)
    this.control.ref()
    return child
  }

  /** Signals command `id`'s process group; false when it is not running or the server is gone. */
  signal(id: number, signal: NodeJS.Signals | number): boolean {
    const number = typeof signal === 'number' ? signal : signalNumbers[signal]
    if (this.closed || number === undefined || !this.jobs.has(id)) return false
    const message = Buffer.alloc(16)
    writeFields(message, [8, 0x4b /* 'K' */, id, number])
    return loadAddon()!.send(this.controlFd, message) === 0
  }

  /** Ends the server: running commands are killed by it, and end here as killed. */
  close(): void {
    if (this.closed) return
    this.closedHere = true
    this.control.destroy()
    this.shutDown()
  }

  /**
   * Ends a server that no longer answers: its outer process is killed at once (bwrap's
   * --die-with-parent then ends the sandbox and everything in it); commands end here as killed.
   */
  abandon(): void {
    this.close()
    this.process.kill('SIGKILL')
  }

  /** Commands started and not yet reported as exited. */
  get running(): number {
    return this.jobs.size
  }

  private receive(text: string): void {
    this.buffered += text
    let newline: number
    while ((newline = this.buffered.indexOf('\n')) >= 0) {
      const [kind, idText, a, b] = this.buffered.slice(0, newline).split(' ')
      this.buffered = this.buffered.slice(newline + 1)
      if (kind === 'R') {
        this.started = true
        this.markReady(true)
        if (this.jobs.size === 0) this.control.unref()
        continue
      }
      const child = this.jobs.get(Number(idText))
      if (!child) continue
      if (kind === 'S') {
        child.pid = Number(a)
      } else if (kind === 'X') {
        this.finish(child)
        const code = errnoName(Number(a)) ?? 'SPAWN_FAILED'
        child.emit('error', Object.assign(new Error(`spawn ${code}`), { code, errno: -Number(a) }))
        for (const pipe of [child.stdin, child.stdout, child.stderr]) pipe?.destroy()
      } else if (kind === 'E') {
        this.finish(child)
        const code = Number(a)
        child.settle(code >= 0 ? code : null, code >= 0 ? null : signalName(Number(b)))
      }
    }
  }

  private finish(child: ServerChild): void {
    this.jobs.delete(child.id)
    if (this.jobs.size === 0 && this.started && !this.closed) this.control.unref()
  }

  private shutDown(): void {
    if (this.closed) return
    this.closed = true
    const jobs = [...this.jobs.values()]
    this.jobs.clear()
    // A command whose start reply was still in flight when this side closed may well be running
    // (the server then kills it): it ends as killed, like the others, not as "never started".
    const waiting = this.closedHere ? [] : jobs.filter((child) => child.pid === undefined)
    // What the server (or the prefix: bwrap) printed arrives on its own pipes, maybe after the
    // control socket closed: wait for them (briefly) before saying why it ended.
    let explained = false
    const explain = () => {
      if (explained) return
      explained = true
      this.closeReason ??= this.stderrText.trim().split('\n')[0] || undefined
      this.markReady(false)
      const why = this.closeReason ? `: ${this.closeReason}` : ''
      for (const child of waiting) {
        child.emit(
          'error',
          Object.assign(new Error(`the spawn server ended before the command started${why}`), { code: 'ECONNRESET' }),
        )
        for (const pipe of [child.stdin, child.stdout, child.stderr]) pipe?.destroy()
      }
    }
    if (this.processClosed || this.started) explain()
    else {
      const timer = setTimeout(explain, 500)
      this.process.once('close', () => {
        clearTimeout(timer)
        explain()
      })
    }
    for (const child of jobs) {
      if (waiting.includes(child)) continue
      // The server ends its commands when it sees the end of its input, and its sandbox's
      // namespace ends with it; either way nothing more comes through these pipes.
      child.settle(null, 'SIGKILL')
      for (const pipe of [child.stdin, child.stdout, child.stderr]) pipe?.destroy()
    }
    // Time to read the end of its input and kill what runs; then it is killed itself.
    if (this.process.exitCode === null && this.process.signalCode === null) {
      const timer = setTimeout(() => this.process.kill('SIGKILL'), 1000)
      timer.unref()
      this.process.once('exit', () => clearTimeout(timer))
    }
  }
}

const hostOrder = endianness()

/** Writes `fields` as u32 in host byte order (the server reads them natively) from offset 0. */
function writeFields(message: Buffer, fields: number[]): void {
  fields.forEach((value, i) => {
    if (hostOrder === 'LE') message.writeUInt32LE(value, i * 4)
    else message.writeUInt32BE(value, i * 4)
  })
}
