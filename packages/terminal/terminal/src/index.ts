// @dsh/terminal: `ctx.terminals`, owner-scoped persistent PTY programs (a shell, a REPL) over
// `ctx.subprocess.spawnTerminal`. Every operation names the exact agent that opened the terminal;
// another agent's id is simply unknown. Output is kept bounded, cleaned of terminal control
// sequences for reading, and addressed by character cursors. Terminals are confined by the shared
// sandbox policy when `ctx.sandbox` and `ctx.sandboxPolicy` are mounted, and closed when their
// agent goes away, the service unloads, or the app stops.
import { StringDecoder } from 'node:string_decoder'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { TerminalHandle } from '@dsh/subprocess'
import type {} from '@dsh/agent'
import type {} from '@dsh/sandbox'
import type {} from '@dsh/sandbox-policy'
import { CodedError } from '@dsh/brand' // also declares the app/ready and app/stopping events

export interface TerminalOwner {
  agentId: string
  sessionId?: string
}

export type TerminalStatus = 'running' | 'exited'

export interface TerminalRecord {
  id: string
  owner: TerminalOwner
  command: string[]
  cwd: string
  status: TerminalStatus
  exitCode?: number | null
  signal?: string | null
  /** Characters of cleaned output produced so far (the cursor of the next new output). */
  outputChars: number
  startedAt: number
  /** How the program runs: the sandbox runner (`bwrap`, ...) or `none`. */
  confinement: string
}

export interface OpenTerminalOptions {
  owner: TerminalOwner
  cwd: string
  /** Program and arguments; default: the configured shell. */
  command?: string[]
  env?: Record<string, string>
}

export interface TerminalRead {
  id: string
  status: TerminalStatus
  text: string
  from: number
  to: number
  /** Characters between the requested cursor and `from` that were dropped by the retention bound. */
  dropped: number
}

export type TerminalErrorCode =
  | 'UNKNOWN_TERMINAL'
  | 'TERMINAL_EXITED'
  | 'TOO_MANY_TERMINALS'
  | 'INVALID_REQUEST'
  | 'OPEN_FAILED'

export class TerminalError extends CodedError<TerminalErrorCode> {
  override name = 'TerminalError'
  static is(value: unknown): value is TerminalError {
    return value instanceof TerminalError
  }
}

declare module 'cordis' {
  interface Context {
    terminals: TerminalService
  }
}

export interface TerminalConfig {
  shell: string[]
  cols: number
  rows: number
  retainChars: number
  maxPerAgent: number
  killGraceMs: number
}

interface Live {
  record: TerminalRecord
  handle: TerminalHandle
  /** Cleaned output: the newest `retainChars` at most, starting at cursor `base`. */
  text: string
  base: number
  /** Bytes of an escape sequence or UTF-8 character split across chunks. */
  pending: string
  decoder: StringDecoder
  waiters: Set<() => void>
}

// CSI, OSC (ended by BEL or ST), other two-character escapes, and stray control characters
// (tab and newline kept). Carriage returns are dropped, so `\r\n` reads as `\n`.
// eslint-disable-next-line no-control-regex
const CONTROL =
  /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[PX^_][^\x1b]*\x1b\\|\x1b[@-Z\\-_]|[\x00-\x08\x0b-\x1f\x7f]/g
/** An escape sequence that has not ended yet at the end of a chunk. */
// eslint-disable-next-line no-control-regex
const OPEN_ESCAPE = /\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*|[PX^_][^\x1b]*)?$/

/** Removes terminal control sequences; returns the clean text and an unfinished tail to keep. */
export function cleanTerminalText(raw: string): { text: string; rest: string } {
  const open = OPEN_ESCAPE.exec(raw)
  const body = open ? raw.slice(0, open.index) : raw
  return { text: body.replace(CONTROL, ''), rest: open ? open[0] : '' }
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

export class TerminalService extends Service {
  static inject = ['subprocess']
  static Config: Schema<Partial<TerminalConfig>, TerminalConfig> = Schema.object({
    shell: Schema.array(Schema.string())
      .default(['bash', '--noprofile', '--norc', '-i'])
      .description('Program of a terminal opened without a command.'),
    cols: Schema.natural().min(20).default(160),
    rows: Schema.natural().min(5).default(40),
    retainChars: Schema.natural()
      .min(1000)
      .default(200_000)
      .description('Cleaned output characters kept per terminal; older output is dropped.'),
    maxPerAgent: Schema.natural().min(1).default(8).description('Most open terminals per agent.'),
    killGraceMs: Schema.natural()
      .default(1000)
      .description('Grace between SIGTERM and SIGKILL when a terminal is closed.'),
  })

  // Mutated in place only: methods may run on a per-caller shadow of `this`.
  private readonly config: TerminalConfig
  private readonly home: Context
  private readonly live = new Map<string, Live>()
  private readonly counter = { n: 0 }

  constructor(ctx: Context, config: Partial<TerminalConfig> = {}) {
    super(ctx, 'terminals')
    this.home = ctx
    this.config = {
      shell: ['bash', '--noprofile', '--norc', '-i'],
      cols: 160,
      rows: 40,
      retainChars: 200_000,
      maxPerAgent: 8,
      killGraceMs: 1000,
      ...config,
    }
    ctx.on('agent/disposed', (agent) => {
      for (const live of [...this.live.values()]) if (live.record.owner.agentId === agent.id) void this.closeLive(live)
    })
    ctx.on('app/stopping', () => this.closeAll())
    ctx.effect(() => () => void this.closeAll(), 'terminals: close all')
  }

  async open(options: OpenTerminalOptions): Promise<TerminalRecord> {
    const owner = options?.owner
    if (!owner || typeof owner.agentId !== 'string' || owner.agentId === '')
      throw new TerminalError('INVALID_REQUEST', 'a terminal needs an owning agent')
    const command = options.command && options.command.length > 0 ? options.command : this.config.shell
    if (command.some((part) => typeof part !== 'string') || command[0] === '')
      throw new TerminalError('INVALID_REQUEST', 'command must be a non-empty list of strings')
    const mine = [...this.live.values()].filter(
      (l) => l.record.owner.agentId === owner.agentId && l.record.status === 'running',
    )
    if (mine.length >= this.config.maxPerAgent) {
      throw new TerminalError(
        'TOO_MANY_TERMINALS',
        `this agent already has ${mine.length} open terminals (the limit is ${this.config.maxPerAgent}); close one first`,
      )
    }
    let argv = command
    let confinement = 'none'
    const sandbox = this.home.get('sandbox')
    const policy = this.home.get('sandboxPolicy')
    if (sandbox && policy) {
      try {
        const invocation = await sandbox.wrap({
          argv: command,
          cwd: options.cwd,
          policy: policy.resolve({
            ...(owner.sessionId !== undefined ? { sessionId: owner.sessionId } : {}),
            cwd: options.cwd,
          }),
          launcher: false,
        })
        argv = invocation.argv
        confinement = invocation.runner
      } catch (error) {
        throw new TerminalError(
          'OPEN_FAILED',
          `the terminal cannot be confined by the sandbox policy: ${describe(error)}`,
        )
      }
    }
    const id = `term-${++this.counter.n}`
    const handle = this.home.subprocess.spawnTerminal({
      file: argv[0],
      args: argv.slice(1),
      cwd: options.cwd,
      cols: this.config.cols,
      rows: this.config.rows,
      termName: 'dumb',
      env: { set: { TERM: 'dumb', PS1: '$ ', PAGER: 'cat', GIT_PAGER: 'cat', NO_COLOR: '1', ...options.env } },
      kill: { graceMs: this.config.killGraceMs },
      retention: { maxBytes: 4096, headBytes: 2048, tailBytes: 2048 },
    })
    const record: TerminalRecord = {
      id,
      owner: { ...owner },
      command: [...command],
      cwd: options.cwd,
      status: 'running',
      outputChars: 0,
      startedAt: Date.now(),
      confinement,
    }
    const live: Live = {
      record,
      handle,
      text: '',
      base: 0,
      pending: '',
      decoder: new StringDecoder('utf8'),
      waiters: new Set(),
    }
    this.live.set(id, live)
    handle.onOutput((chunk) => this.ingest(live, chunk.data))
    void handle.exited.then((exit) => {
      this.ingest(live, new Uint8Array(), true)
      record.status = 'exited'
      record.exitCode = exit.code
      record.signal = exit.signal
      this.wake(live)
      if (exit.spawnError) this.append(live, `[the program could not be started: ${exit.spawnError.message}]\n`)
    })
    return structuredClone(record)
  }

  list(owner: TerminalOwner): TerminalRecord[] {
    return [...this.live.values()]
      .filter((l) => l.record.owner.agentId === owner.agentId)
      .map((l) => structuredClone(l.record))
  }

  get(id: string, owner: TerminalOwner): TerminalRecord {
    return structuredClone(this.find(id, owner).record)
  }

  /** Writes `input` to the terminal as typed (add `\n` to press Enter). */
  write(id: string, owner: TerminalOwner, input: string): void {
    const live = this.find(id, owner)
    if (typeof input !== 'string') throw new TerminalError('INVALID_REQUEST', 'input must be a string')
    if (live.record.status !== 'running')
      throw new TerminalError('TERMINAL_EXITED', `terminal ${id} has exited; open a new one`)
    live.handle.write(input)
  }

  /**
   * Output from cursor `since` (default: everything retained). With `waitMs`, waits for output past
   * `since` and then until it has been quiet for `quietMs` (or `waitMs` passed, or the program ended).
   */
  async read(
    id: string,
    owner: TerminalOwner,
    options: { since?: number; waitMs?: number; quietMs?: number } = {},
  ): Promise<TerminalRead> {
    const live = this.find(id, owner)
    const since = options.since ?? live.base
    if (!Number.isInteger(since) || since < 0)
      throw new TerminalError('INVALID_REQUEST', 'since must be a non-negative integer')
    const waitMs = Math.max(0, Math.min(options.waitMs ?? 0, 60_000))
    if (waitMs > 0) await this.settle(live, since, waitMs, options.quietMs ?? 150)
    const end = live.base + live.text.length
    const from = Math.min(Math.max(since, live.base), end)
    return {
      id,
      status: live.record.status,
      text: live.text.slice(from - live.base),
      from,
      to: end,
      dropped: Math.max(0, from - Math.min(since, end)),
    }
  }

  signal(id: string, owner: TerminalOwner, signal: NodeJS.Signals): void {
    const live = this.find(id, owner)
    if (live.record.status !== 'running') throw new TerminalError('TERMINAL_EXITED', `terminal ${id} has exited`)
    // Ctrl-C is what a user would press: it reaches the foreground job, not only the shell.
    if (signal === 'SIGINT') live.handle.write('\x03')
    else live.handle.signal(signal)
  }

  async close(id: string, owner: TerminalOwner): Promise<TerminalRecord> {
    const live = this.find(id, owner)
    await this.closeLive(live)
    return structuredClone(live.record)
  }

  private find(id: string, owner: TerminalOwner): Live {
    const live = typeof id === 'string' ? this.live.get(id) : undefined
    if (live && owner && live.record.owner.agentId === owner.agentId) return live
    const known = owner ? this.list(owner).map((r) => r.id) : []
    throw new TerminalError(
      'UNKNOWN_TERMINAL',
      `no terminal "${String(id)}" of this agent${known.length ? ` (open: ${known.join(', ')})` : ''}`,
    )
  }

  private async closeLive(live: Live): Promise<void> {
    if (!this.live.has(live.record.id)) return
    if (live.record.status === 'running') await live.handle.terminate()
    this.live.delete(live.record.id)
  }

  private async closeAll(): Promise<void> {
    await Promise.allSettled([...this.live.values()].map((l) => this.closeLive(l)))
  }

  private ingest(live: Live, data: Uint8Array, flush = false): void {
    const raw = live.pending + (flush ? live.decoder.end(Buffer.from(data)) : live.decoder.write(Buffer.from(data)))
    const { text, rest } = cleanTerminalText(raw)
    live.pending = flush ? '' : rest
    this.append(live, text.replace(/\r/g, ''))
  }

  private append(live: Live, text: string): void {
    if (text === '') return
    live.text += text
    live.record.outputChars += text.length
    const over = live.text.length - this.config.retainChars
    if (over > 0) {
      live.text = live.text.slice(over)
      live.base += over
    }
    this.wake(live)
  }

  private wake(live: Live): void {
    for (const waiter of [...live.waiters]) waiter()
  }

  private settle(live: Live, since: number, waitMs: number, quietMs: number): Promise<void> {
    return new Promise((resolve) => {
      let quiet: NodeJS.Timeout | undefined
      const done = () => {
        clearTimeout(deadline)
        if (quiet) clearTimeout(quiet)
        live.waiters.delete(check)
        resolve()
      }
      const check = () => {
        if (live.record.status !== 'running') return done()
        if (live.base + live.text.length <= since) return
        if (quiet) clearTimeout(quiet)
        quiet = setTimeout(done, quietMs)
      }
      const deadline = setTimeout(done, waitMs)
      live.waiters.add(check)
      check()
    })
  }
}

export const name = '@dsh/terminal'
export default TerminalService
