// The TypeScript client of `dsh-jsonrpc-agent`: spawns the bin, speaks the protocol over its
// stdio, and exposes sessions whose prompts resolve with the turn's result or stream its events.
import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import {
  ConnectionError,
  JsonRpcConnection,
  Method,
  Notification,
  PROTOCOL_VERSION,
  RpcError,
  type ApprovalDecision,
  type ApprovalRequestedNotification,
  type InitializeResult,
  type MethodName,
  type ParamsOf,
  type ResultOf,
  type SessionEventNotification,
  type SessionInfo,
  type SessionSearchHit,
  type SessionStatus,
  type SessionStatusNotification,
  type SubagentFinishedNotification,
  type SubagentStartedNotification,
  type WireEvent,
  type WireModel,
  type WireTurnResult,
} from '@dsh/sdk-protocol'

/** Every failure the client reports. `code` is a protocol `data.code` or one of the client's own. */
export class HarnessError extends Error {
  override name = 'HarnessError'
  constructor(
    /** SERVER_EXITED | PROTOCOL_ERROR | SPAWN_FAILED | CLOSED | PROTOCOL_VERSION_MISMATCH | SESSION_NOT_FOUND | BUSY | ... */
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

export interface HarnessOptions {
  /**
   * The server command: a path (a `.mjs`/`.js`/`.ts` file runs under this Node), or an argv array.
   * Default: the `dsh-jsonrpc-agent` of an installed `@dsh/sdk-server`, else `dsh-jsonrpc-agent` on PATH.
   */
  bin?: string | readonly string[]
  /** Extra arguments for the bin (e.g. a CONFIG layer file). */
  args?: readonly string[]
  /** Working directory of the server process and the default `cwd` of new sessions. */
  cwd?: string
  /** Environment of the server process (default: this process's). */
  env?: NodeJS.ProcessEnv
  /** Where the server's stderr goes: kept in memory for error messages (default), or inherited. */
  stderr?: 'capture' | 'inherit'
  /** Answers approval requests; without one every request is rejected (fail closed). */
  onApproval?: ApprovalHandler
  /** How long close() waits for a clean exit before killing (default 5000 ms). */
  closeTimeoutMs?: number
  /**
   * Starts the server process instead of `child_process.spawn` (a host's process seam, e.g. dsh's
   * `sdk` subagent provider through `ctx.subprocess`). It must return a ChildProcess-compatible
   * object with piped stdin/stdout/stderr that emits `error`, `exit` and `close`.
   */
  spawnProcess?: (file: string, args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv }) => ChildProcess
}

export type ApprovalHandler = (
  request: ApprovalRequestedNotification,
) =>
  | ApprovalDecision
  | { decision: ApprovalDecision; reason?: string; message?: string }
  | Promise<ApprovalDecision | { decision: ApprovalDecision; reason?: string; message?: string }>

export interface PromptResult extends WireTurnResult {
  sessionId: string
  /** Every event of the turn, `turn/start` to `turn/end`, in seq order. */
  events: WireEvent[]
}

export interface TurnStream extends AsyncIterableIterator<WireEvent> {
  /** Resolves with the turn's result after `turn/end` (also when the iteration was not consumed). */
  readonly result: Promise<PromptResult>
}

// Children still running when this process exits are killed (no leaked servers).
const live = new Set<ChildProcess>()
let exitHookInstalled = false
function track(child: ChildProcess): void {
  live.add(child)
  child.once('exit', () => live.delete(child))
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.once('exit', () => {
    for (const c of live) c.kill('SIGKILL')
  })
}

function defaultCommand(): string[] {
  try {
    const require = createRequire(import.meta.url)
    const pkgFile = require.resolve('@dsh/sdk-server/package.json')
    return [process.execPath, join(dirname(pkgFile), 'bin', 'dsh-jsonrpc-agent.mjs')]
  } catch {
    return ['dsh-jsonrpc-agent']
  }
}

function commandOf(bin: HarnessOptions['bin']): string[] {
  if (bin === undefined) return defaultCommand()
  if (typeof bin !== 'string') return [...bin]
  return /\.(mjs|cjs|js|ts|mts)$/.test(bin) ? [process.execPath, bin] : [bin]
}

const toHarnessError = (error: unknown): Error => {
  if (error instanceof HarnessError) return error
  if (error instanceof RpcError)
    return new HarnessError(error.code, error.message, { ...error.details, rpcCode: error.rpcCode })
  if (error instanceof ConnectionError)
    return new HarnessError(error.code === 'PROTOCOL_ERROR' ? 'PROTOCOL_ERROR' : 'SERVER_EXITED', error.message)
  return error as Error
}

class Deferred<T> {
  promise: Promise<T>
  resolve!: (v: T) => void
  reject!: (e: Error) => void
  constructor() {
    this.promise = new Promise<T>((res, rej) => {
      this.resolve = res
      this.reject = rej
    })
    this.promise.catch(() => {})
  }
}

/** Collects one turn's events; iterable once. */
class TurnCollector implements TurnStream {
  readonly events: WireEvent[] = []
  readonly done = new Deferred<PromptResult>()
  turn: number | undefined
  private started = false
  private sawEnd = false
  ended = false
  private read = 0
  private waiter: Deferred<IteratorResult<WireEvent>> | undefined
  private failure: Error | undefined

  constructor(private readonly sessionId: string) {}

  get result(): Promise<PromptResult> {
    return this.done.promise
  }

  /** Returns false when the event is not part of this turn. */
  offer(event: WireEvent): void {
    if (this.ended || this.sawEnd) return
    if (!this.started) {
      if (event.type !== 'turn/start') return
      if (this.turn !== undefined && (event.data as { turn: number }).turn !== this.turn) return
      this.started = true
    }
    this.events.push(event)
    // Iteration ends with the result (the idle status right after turn/end), so a new prompt
    // sent when the loop finishes is never refused as BUSY.
    if (event.type === 'turn/end') this.sawEnd = true
    this.wake()
  }

  settle(result: WireTurnResult): void {
    this.ended = true
    this.done.resolve({ ...result, sessionId: this.sessionId, events: this.events })
    this.wake()
  }

  fail(error: Error): void {
    if (this.failure) return
    this.failure = error
    this.ended = true
    this.done.reject(error)
    this.wake()
  }

  private wake(): void {
    const w = this.waiter
    if (!w) return
    this.waiter = undefined
    this.next().then(w.resolve, w.reject)
  }

  next(): Promise<IteratorResult<WireEvent>> {
    if (this.read < this.events.length) return Promise.resolve({ value: this.events[this.read++], done: false })
    if (this.failure) return Promise.reject(this.failure)
    if (this.ended) return Promise.resolve({ value: undefined, done: true })
    this.waiter = new Deferred()
    return this.waiter.promise
  }

  return(): Promise<IteratorResult<WireEvent>> {
    this.read = Number.MAX_SAFE_INTEGER
    return Promise.resolve({ value: undefined, done: true })
  }

  [Symbol.asyncIterator](): this {
    return this
  }
}

export type SessionListener = (event: WireEvent) => void
export type StatusListener = (status: SessionStatusNotification) => void
/** A `subagent/started` (status `running`) or `subagent/finished` notification. */
export type SubagentNotification = SubagentStartedNotification | SubagentFinishedNotification
export type SubagentListener = (notification: SubagentNotification) => void

export class HarnessSession {
  private active: TurnCollector | undefined
  private readonly listeners = new Set<SessionListener>()
  private readonly statusListeners = new Set<StatusListener>()
  private readonly subagentListeners = new Set<SubagentListener>()
  /** The last status the server reported. */
  status: SessionStatus = 'idle'

  constructor(
    private readonly harness: Harness,
    readonly id: string,
    readonly cwd: string,
    readonly model: WireModel,
  ) {}

  /** Sends a prompt and resolves with the turn's result once it ended. */
  prompt(text: string): Promise<PromptResult> {
    return this.stream(text).result
  }

  /** Sends a prompt; iterate the returned stream for the turn's events (`turn/start` .. `turn/end`). */
  stream(text: string): TurnStream {
    if (this.active && !this.active.ended) {
      const busy = new TurnCollector(this.id)
      busy.fail(new HarnessError('BUSY', `session ${this.id} is already running a turn; wait for it or cancel() it`))
      return busy
    }
    const collector = new TurnCollector(this.id)
    this.active = collector
    this.harness.call(Method.sessionPrompt, { sessionId: this.id, prompt: text }).then(
      ({ turn }) => (collector.turn ??= turn),
      (error: Error) => {
        collector.fail(error)
        if (this.active === collector) this.active = undefined
      },
    )
    return collector
  }

  /** Asks the server to cancel the running turn; true when one was running. */
  async cancel(): Promise<boolean> {
    return (await this.harness.call(Method.sessionCancel, { sessionId: this.id })).cancelled
  }

  /** Logged events from `fromSeq` (default 0). */
  async history(fromSeq = 0, limit?: number): Promise<WireEvent[]> {
    return (
      await this.harness.call(Method.sessionHistory, {
        sessionId: this.id,
        fromSeq,
        ...(limit !== undefined ? { limit } : {}),
      })
    ).events
  }

  /** Every event of this session as it arrives; returns the unsubscribe function. */
  onEvent(listener: SessionListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  onStatus(listener: StatusListener): () => void {
    this.statusListeners.add(listener)
    return () => this.statusListeners.delete(listener)
  }

  /**
   * Subagents of this session (and of its children, at any depth: `parentSessionId` tells) as
   * they start and finish; returns the unsubscribe function.
   */
  onSubagent(listener: SubagentListener): () => void {
    this.subagentListeners.add(listener)
    return () => this.subagentListeners.delete(listener)
  }

  /** @internal */
  deliverSubagent(notification: SubagentNotification): void {
    for (const l of this.subagentListeners) l(notification)
  }

  /** @internal */
  deliver(event: WireEvent): void {
    this.active?.offer(event)
    for (const l of this.listeners) l(event)
  }

  /** @internal */
  deliverStatus(status: SessionStatusNotification): void {
    this.status = status.status
    const active = this.active
    if (active && status.result && (active.turn === undefined || status.result.turn === active.turn)) {
      active.settle(status.result)
      this.active = undefined
    }
    for (const l of this.statusListeners) l(status)
  }

  /** @internal */
  fail(error: Error): void {
    this.active?.fail(error)
    this.active = undefined
  }
}

export interface HarnessExit {
  code: number | null
  signal: NodeJS.Signals | null
}

export class Harness {
  private readonly sessions = new Map<string, HarnessSession>()
  private readonly connection: JsonRpcConnection
  private stderrTail = ''
  private failure: HarnessError | undefined
  private closing: Promise<void> | undefined
  private readonly exit = new Deferred<HarnessExit>()
  info!: InitializeResult

  private constructor(
    private readonly child: ChildProcess,
    private readonly options: HarnessOptions,
    private readonly command: string[],
  ) {
    this.connection = new JsonRpcConnection({
      write: (text) => {
        if (child.stdin?.writable) child.stdin.write(text)
      },
      strict: true,
      onNotification: (method, params) => this.onNotification(method, params),
      onRequest: (method) => {
        throw new RpcError('METHOD_NOT_FOUND', `the client serves no method "${method}"`)
      },
      onFatal: (error) => {
        this.fail(new HarnessError('PROTOCOL_ERROR', `${error.message} (from ${this.command.join(' ')})`))
        // The stream cannot be resynchronised: stop the server.
        child.kill('SIGTERM')
      },
    })
  }

  /** Spawns the server and performs `initialize` (checking the protocol version). */
  static async start(options: HarnessOptions = {}): Promise<Harness> {
    const command = commandOf(options.bin)
    const argv = [...command.slice(1), ...(options.args ?? [])]
    const child = options.spawnProcess
      ? options.spawnProcess(command[0], argv, { cwd: options.cwd, env: options.env ?? process.env })
      : spawn(command[0], argv, {
          cwd: options.cwd,
          env: options.env ?? process.env,
          stdio: ['pipe', 'pipe', options.stderr === 'inherit' ? 'inherit' : 'pipe'],
        })
    track(child)
    const harness = new Harness(child, options, command)
    harness.attach()
    try {
      const info = await harness.call(Method.initialize, {
        protocolVersion: PROTOCOL_VERSION,
        clientInfo: { name: '@dsh/sdk-client' },
      })
      if (info?.protocolVersion !== PROTOCOL_VERSION) {
        throw new HarnessError(
          'PROTOCOL_VERSION_MISMATCH',
          `the server speaks protocol ${JSON.stringify(info?.protocolVersion)}, this client ${PROTOCOL_VERSION}`,
        )
      }
      harness.info = info
    } catch (error) {
      await harness.kill()
      throw error
    }
    return harness
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  /** Resolves when the server process has exited. */
  get exited(): Promise<HarnessExit> {
    return this.exit.promise
  }

  private attach(): void {
    const { child } = this
    child.stdout!.on('data', (chunk: Buffer) => this.connection.receive(chunk))
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-4000)
    })
    child.stdin!.on('error', () => {}) // EPIPE when the server died; reported through 'close'
    child.on('error', (error) => {
      this.fail(new HarnessError('SPAWN_FAILED', `cannot start ${this.command.join(' ')}: ${error.message}`))
      this.exit.resolve({ code: null, signal: null })
    })
    child.on('close', (code, signal) => {
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`
      const tail = this.stderrTail.trim().split('\n').slice(-5).join('\n')
      this.fail(
        new HarnessError(
          'SERVER_EXITED',
          `dsh-jsonrpc-agent ${how}${this.closing !== undefined ? ' (closed by the client)' : ''}${tail ? `; stderr:\n${tail}` : ''}`,
          { code, signal },
        ),
      )
      this.exit.resolve({ code, signal })
    })
  }

  private fail(error: HarnessError): void {
    if (this.failure) return
    this.failure = error
    this.connection.end(
      new ConnectionError(error.code === 'PROTOCOL_ERROR' ? 'PROTOCOL_ERROR' : 'CONNECTION_CLOSED', error.message),
    )
    for (const s of this.sessions.values()) s.fail(error)
  }

  /** @internal Sends one request; failures are HarnessErrors. */
  async call<M extends MethodName>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
    if (this.failure) throw this.failure
    try {
      return await this.connection.request<ResultOf<M>>(method, params)
    } catch (error) {
      throw this.failure && error instanceof ConnectionError ? this.failure : toHarnessError(error)
    }
  }

  private onNotification(method: string, params: unknown): void {
    if (method === Notification.sessionEvent) {
      const { sessionId, event } = params as SessionEventNotification
      this.sessions.get(sessionId)?.deliver(event)
    } else if (method === Notification.sessionStatus) {
      const status = params as SessionStatusNotification
      this.sessions.get(status.sessionId)?.deliverStatus(status)
    } else if (method === Notification.subagentStarted || method === Notification.subagentFinished) {
      const notification = params as SubagentNotification
      this.sessions.get(notification.sessionId)?.deliverSubagent(notification)
    } else if (method === Notification.approvalRequested) {
      void this.answerApproval(params as ApprovalRequestedNotification)
    }
  }

  private async answerApproval(request: ApprovalRequestedNotification): Promise<void> {
    let answer: { decision: ApprovalDecision; reason?: string; message?: string }
    try {
      const handler = this.options.onApproval
      const given = handler
        ? await handler(request)
        : { decision: 'rejected' as const, reason: 'the SDK client has no approval handler' }
      answer = typeof given === 'string' ? { decision: given } : given
    } catch (error) {
      answer = { decision: 'rejected', reason: `the approval handler failed: ${(error as Error).message}` }
    }
    await this.call(Method.approvalRespond, { requestId: request.requestId, ...answer }).catch(() => {})
  }

  /** Creates a session (cwd defaults to the harness cwd, then this process's cwd). */
  async createSession(options: { cwd?: string; model?: string } = {}): Promise<HarnessSession> {
    const cwd = options.cwd ?? this.options.cwd ?? process.cwd()
    const result = await this.call(Method.sessionCreate, { cwd, ...(options.model ? { model: options.model } : {}) })
    const session = new HarnessSession(this, result.sessionId, result.cwd, result.model)
    this.sessions.set(session.id, session)
    return session
  }

  /** Opens a stored session (or returns the live one) so it can be prompted again. */
  async resumeSession(sessionId: string): Promise<HarnessSession> {
    const existing = this.sessions.get(sessionId)
    if (existing) return existing
    const result = await this.call(Method.sessionResume, { sessionId })
    const session = new HarnessSession(this, result.sessionId, result.cwd, result.model)
    this.sessions.set(session.id, session)
    return session
  }

  async listSessions(options: { cwd?: string } = {}): Promise<SessionInfo[]> {
    return (await this.call(Method.sessionList, options)).sessions
  }

  /**
   * Sessions whose log contains `text` as a literal phrase (at least 3 characters), one hit per
   * session with its best match. Needs a server with `capabilities.search`.
   */
  async searchSessions(text: string, options: { cwd?: string; limit?: number } = {}): Promise<SessionSearchHit[]> {
    return (await this.call(Method.sessionSearch, { text, ...options })).hits
  }

  /** Stored events of any session (live or not) from `fromSeq`. */
  async history(sessionId: string, fromSeq = 0): Promise<WireEvent[]> {
    return (await this.call(Method.sessionHistory, { sessionId, fromSeq })).events
  }

  /**
   * Shuts the server down: `shutdown`, end of stdin, then SIGTERM and SIGKILL if it does not exit
   * within `closeTimeoutMs`. Pending prompts reject with SERVER_EXITED (closed by the client).
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.child.exitCode === null && this.child.signalCode === null && !this.failure) {
        await Promise.race([this.call(Method.shutdown, {}).catch(() => {}), this.exited])
      }
      this.child.stdin?.end()
      await this.kill()
    })()
    return this.closing
  }

  private async kill(): Promise<void> {
    const timeout = this.options.closeTimeoutMs ?? 5000
    const wait = (ms: number) =>
      Promise.race([this.exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())])
    this.child.stdin?.end()
    if (await wait(timeout)) return
    this.child.kill('SIGTERM')
    if (await wait(2000)) return
    this.child.kill('SIGKILL')
    await this.exited
  }
}
