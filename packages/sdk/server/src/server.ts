// HarnessSdkJsonRpcServer: the protocol methods and notifications of `dsh-jsonrpc-agent` over one
// JSON-RPC connection. One agent per session; every appended session event is forwarded as a
// `session/event` notification in seq order, before any response that depends on it. The read
// methods are in reads.ts, the subagent notifications in subagents.ts.
import type { Context } from 'cordis'
import type { Agent, ModelSelection, TurnResult } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type { ApprovalAnswer, ApprovalRequest } from '@dsh/user-approval'
import {
  JsonRpcConnection,
  Method,
  Notification,
  PROTOCOL_VERSION,
  RpcError,
  SUPPORTED_PROTOCOL_VERSIONS,
  type InitializeResult,
  type SessionCreateResult,
  type SessionResumeResult,
  type SessionStatus,
  type SessionStatusNotification,
  type WireApprovalRequest,
  type WireEvent,
  type WireModel,
  type WireTurnResult,
} from '@dsh/sdk-protocol'
import * as p from './params.ts'
import type {} from '@dsh/llm'
import {
  appExit,
  chooseModel,
  ExitCode,
  ModelChoiceError,
  PendingAnswers,
  resumeStored,
  SessionOpenError,
} from '@dsh/surface-kit'
import type {} from '@dsh/agent-default-model'
import { history, list, type ReadServices, search } from './reads.ts'
import { SubagentRelay } from './subagents.ts'

export interface ServerIo {
  input: NodeJS.ReadableStream
  output: { write(text: string): unknown }
}

export interface ServerOptions {
  serverName: string
  serverVersion: string
  maxSteps?: number
  /**
   * Called once when the server stops with its exit status (`ExitCode.ok` on a shutdown request or
   * the end of input, `ExitCode.failed` when the input fails); default: the surface kit's
   * `appExit(ctx)`, the loader's exit (or `process.exitCode` without a loader).
   */
  onStop?: (code: number) => void
}

interface Entry {
  agent: Agent
  session: Session
  status: SessionStatus
  /** A prompt was accepted and its turn has not ended. */
  busy: boolean
  turn?: number
  onTurnStart?: (turn: number) => void
  approvals: Set<string>
  off: () => void
}

// The optional services this server uses when they are mounted (read with ctx.get()), typed by
// their own packages' declarations.
type Optional = Pick<Context, 'llm' | 'agentDefaultModel' | 'durableSessions' | 'sessionPersistence' | 'approval'> &
  Pick<ReadServices, 'sessionQuery'>

function toWireResult(result: TurnResult): WireTurnResult {
  return {
    turn: result.turn,
    reason: result.reason,
    text: result.text,
    ...(result.error ? { error: { code: result.error.code, message: result.error.message } } : {}),
    usage: result.usage as unknown as WireTurnResult['usage'],
    steps: result.steps,
  }
}

export class HarnessSdkJsonRpcServer {
  readonly connection: JsonRpcConnection
  private readonly entries = new Map<string, Entry>()
  private readonly approvals = new PendingAnswers<ApprovalAnswer>()
  private initialized = false
  private stopping: Promise<void> | undefined
  private offApproval: (() => void) | undefined
  private readonly subagents: SubagentRelay
  private offSubagents: (() => void) | undefined

  constructor(
    private readonly ctx: Context,
    private readonly io: ServerIo,
    private readonly options: ServerOptions,
  ) {
    this.connection = new JsonRpcConnection({
      write: (text) => void io.output.write(text),
      onRequest: (method, params) => this.handle(method, params),
      // The protocol has no client-to-server notifications; ignore them (JSON-RPC forbids replies).
      onNotification: () => {},
    })
    this.subagents = new SubagentRelay(
      (sessionId) => this.entries.has(sessionId),
      (method, params) => this.connection.notify(method, params),
    )
  }

  private opt<K extends keyof Optional>(name: K): Optional[K] | undefined {
    return this.ctx.get(name) as Optional[K] | undefined
  }

  /** Starts reading frames; the server stops when the input ends. */
  start(): void {
    const approval = this.opt('approval')
    if (approval) {
      this.offApproval = approval.registerAnswerer({
        name: 'sdk-jsonrpc',
        accepts: (request) => request.sessionId !== undefined && this.entries.has(request.sessionId),
        answer: (request, { signal }) => this.askClient(request, signal),
      })
    }
    // Grandchildren are logged in their parent's (a child's) session, which no client holds.
    this.offSubagents = this.ctx.on('session/event', (session, event) => {
      if (this.subagents.isDescendant(session.id)) this.subagents.relay(session, event as WireEvent)
    })
    const input = this.io.input
    const onData = (chunk: Buffer | string) => this.connection.receive(chunk)
    const onEnd = () => void this.stop(ExitCode.ok)
    // Input that cannot be read is not a client that went away: say why, and exit as a failure.
    const onError = (error: Error) => {
      process.stderr.write(`${this.options.serverName}: cannot read the protocol input: ${error.message}\n`)
      void this.stop(ExitCode.failed)
    }
    input.on('data', onData)
    input.on('end', onEnd)
    input.on('error', onError)
    this.detach = () => {
      input.off('data', onData)
      input.off('end', onEnd)
      input.off('error', onError)
    }
    input.resume?.()
  }

  private detach: () => void = () => {}

  /**
   * Stops serving: pending approvals fail closed (the answerer rejects, so the approval service
   * resolves them `unavailable`), running turns are cancelled and awaited, agents disposed.
   */
  stop(code: number): Promise<void> {
    this.stopping ??= (async () => {
      this.detach()
      this.approvals.failAll(new Error('the SDK client disconnected'))
      this.offApproval?.()
      this.offSubagents?.()
      const entries = [...this.entries.values()]
      for (const entry of entries) entry.agent.abort('sdk server stopping')
      await Promise.all(entries.map((entry) => entry.agent.idle().catch(() => {})))
      this.connection.flush()
      for (const entry of entries) {
        entry.off()
        await entry.agent.dispose().catch(() => {})
      }
      this.entries.clear()
      // The loader is read now, as before: a tree being disposed (a signal, a reload) has none left.
      const stop = this.options.onStop ?? appExit(this.ctx)
      stop(code)
    })()
    return this.stopping
  }

  private handle(method: string, params: unknown): unknown {
    if (this.stopping !== undefined) throw new RpcError('SHUTTING_DOWN', `${method}: the server is shutting down`)
    if (method !== Method.initialize && !this.initialized) {
      if (!(Object.values(Method) as string[]).includes(method))
        throw new RpcError('METHOD_NOT_FOUND', `unknown method "${method}"`)
      throw new RpcError('NOT_INITIALIZED', `${method}: call initialize first`)
    }
    switch (method) {
      case Method.initialize:
        return this.initialize(params)
      case Method.sessionCreate:
        return this.create(params)
      case Method.sessionResume:
        return this.resume(params)
      case Method.sessionPrompt:
        return this.prompt(params)
      case Method.sessionCancel:
        return this.cancel(params)
      case Method.sessionList:
        return list(this.reads(), this.entries.values(), params)
      case Method.sessionHistory:
        return history(this.reads(), this.entries, params)
      case Method.sessionSearch:
        return search(this.reads(), params)
      case Method.approvalRespond:
        return this.respond(params)
      case Method.shutdown: {
        // Answer first; the stop runs after the response frame is flushed.
        queueMicrotask(() => queueMicrotask(() => void this.stop(ExitCode.ok)))
        return {}
      }
      default:
        throw new RpcError('METHOD_NOT_FOUND', `unknown method "${method}"`)
    }
  }

  private reads(): ReadServices {
    return {
      durableSessions: this.opt('durableSessions'),
      sessionPersistence: this.opt('sessionPersistence'),
      sessionQuery: this.opt('sessionQuery'),
    }
  }

  private initialize(raw: unknown): InitializeResult {
    const params = p.object(Method.initialize, raw)
    const version = params.protocolVersion
    if (typeof version !== 'number' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      throw new RpcError(
        'PROTOCOL_VERSION_MISMATCH',
        `initialize: protocol version ${JSON.stringify(version)} is not supported; this server speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
        { supported: [...SUPPORTED_PROTOCOL_VERSIONS] },
      )
    }
    this.initialized = true
    return {
      protocolVersion: PROTOCOL_VERSION,
      serverInfo: { name: this.options.serverName, version: this.options.serverVersion },
      capabilities: {
        persistence: Boolean(this.opt('durableSessions')),
        approval: Boolean(this.opt('approval')),
        search: Boolean(this.opt('sessionQuery')),
      },
    }
  }

  private entry(method: string, params: p.Params): Entry {
    const sessionId = p.string(method, params, 'sessionId')
    const entry = this.entries.get(sessionId)
    if (!entry) {
      const hint = this.opt('durableSessions') ? ' (a stored session must be opened with session/resume first)' : ''
      throw new RpcError(
        'SESSION_NOT_FOUND',
        `${method}: no live session ${JSON.stringify(sessionId)} in this server${hint}`,
        { sessionId },
      )
    }
    return entry
  }

  private async resolveModel(method: string, spec: string | undefined): Promise<ModelSelection> {
    try {
      return await chooseModel(this.opt('llm'), spec, this.opt('agentDefaultModel')?.get())
    } catch (error) {
      if (!(error instanceof ModelChoiceError)) throw error
      if (error.code === 'NO_DEFAULT_MODEL')
        throw new RpcError('INVALID_PARAMS', `${method}: no default model is configured; pass model "provider/model"`, {
          field: 'model',
        })
      throw new RpcError('MODEL_NOT_FOUND', `${method}: model ${JSON.stringify(spec)}: ${error.detail}`, {
        field: 'model',
      })
    }
  }

  private adopt(agent: Agent): Entry {
    const session = agent.session
    const sessionId = session.id
    const entry: Entry = { agent, session, status: 'idle', busy: false, approvals: new Set(), off: () => {} }
    entry.off = session.subscribe((event) => {
      this.connection.notify(Notification.sessionEvent, { sessionId, event })
      this.subagents.relay(session, event as WireEvent)
      if (event.type === 'turn/start' && entry.busy && entry.turn === undefined) {
        const turn = (event.data as { turn: number }).turn
        entry.turn = turn
        this.setStatus(entry, 'running')
        entry.onTurnStart?.(turn)
      }
    })
    this.entries.set(sessionId, entry)
    return entry
  }

  private setStatus(entry: Entry, status: SessionStatus, result?: WireTurnResult): void {
    entry.status = status
    const params: SessionStatusNotification = { sessionId: entry.session.id, status }
    const turn = result?.turn ?? entry.turn
    if (turn !== undefined) params.turn = turn
    if (result) params.result = result
    this.connection.notify(Notification.sessionStatus, params)
  }

  private async create(raw: unknown): Promise<SessionCreateResult> {
    const params = p.object(Method.sessionCreate, raw)
    const cwd = p.directory(Method.sessionCreate, params, 'cwd')
    const model = await this.resolveModel(Method.sessionCreate, p.string(Method.sessionCreate, params, 'model', true))
    const agent = this.ctx.agents.create({ cwd, model, maxSteps: this.options.maxSteps })
    this.adopt(agent)
    return { sessionId: agent.session.id, cwd, model: { provider: agent.model.provider, model: agent.model.model } }
  }

  private async resume(raw: unknown): Promise<SessionResumeResult> {
    const params = p.object(Method.sessionResume, raw)
    const sessionId = p.string(Method.sessionResume, params, 'sessionId')
    const live = this.entries.get(sessionId)
    const wireModel = (a: Agent): WireModel => ({ provider: a.model.provider, model: a.model.model })
    if (live)
      return {
        sessionId,
        cwd: live.session.cwd,
        model: wireModel(live.agent),
        nextSeq: live.session.length,
        loaded: false,
      }
    let session: Session
    try {
      session = (await resumeStored(this.opt('durableSessions'), sessionId)).session
    } catch (error) {
      if (!(error instanceof SessionOpenError)) throw error
      if (error.code === 'NO_PERSISTENCE')
        throw new RpcError(
          'PERSISTENCE_UNAVAILABLE',
          'session/resume: this server has no session-persistence row, so stored sessions cannot be opened',
        )
      if (error.code === 'BAD_ID')
        throw new RpcError('INVALID_PARAMS', `session/resume: ${error.detail}`, { sessionId })
      if (error.code === 'NOT_FOUND')
        throw new RpcError('SESSION_NOT_FOUND', `session/resume: no stored session ${JSON.stringify(sessionId)}`, {
          sessionId,
        })
      if (error.code === 'LOCKED')
        throw new RpcError('SESSION_LOCKED', `session/resume: ${error.detail}`, { sessionId })
      throw new RpcError(
        'INTERNAL',
        `session/resume: cannot load session ${JSON.stringify(sessionId)}: ${error.detail}`,
        { sessionId },
      )
    }
    // Continue with the model the session last used when its route still exists.
    const header = session.last('request/header')
    let model: ModelSelection | undefined
    if (header) {
      const llm = this.opt('llm')
      const { provider, model: id } = header.data
      if (llm?.listProviders().includes(provider) && (await llm.resolveModelInfo(provider, id))) {
        const fallback = this.opt('agentDefaultModel')?.get()
        model = { ...(fallback?.provider === provider ? fallback : {}), provider, model: id }
      }
    }
    model ??= await this.resolveModel(Method.sessionResume, undefined)
    const agent = this.ctx.agents.create({ cwd: session.cwd, session, model, maxSteps: this.options.maxSteps })
    this.adopt(agent)
    return { sessionId, cwd: session.cwd, model: wireModel(agent), nextSeq: session.length, loaded: true }
  }

  private async prompt(raw: unknown): Promise<{ turn: number }> {
    const params = p.object(Method.sessionPrompt, raw)
    const entry = this.entry(Method.sessionPrompt, params)
    const prompt = params.prompt
    if (typeof prompt !== 'string' || prompt.trim() === '')
      throw new RpcError('INVALID_PARAMS', 'session/prompt: prompt must be a non-empty string', { field: 'prompt' })
    if (entry.busy) {
      throw new RpcError(
        'BUSY',
        `session/prompt: session ${entry.session.id} is running turn ${entry.turn ?? '?'}; wait for it or session/cancel it`,
        { sessionId: entry.session.id, turn: entry.turn },
      )
    }
    entry.busy = true
    entry.turn = undefined
    const started = new Promise<number>((resolve) => (entry.onTurnStart = resolve))
    const done = entry.agent.send(prompt)
    const finish = (result: WireTurnResult | undefined) => {
      entry.busy = false
      entry.onTurnStart = undefined
      if (!this.entries.has(entry.session.id)) return
      if (result) this.setStatus(entry, 'idle', result)
      else this.setStatus(entry, 'idle')
      entry.turn = undefined
    }
    done.then(
      (result) => finish(toWireResult(result)),
      (error: Error) => {
        const turn = entry.turn ?? -1
        finish({
          turn,
          reason: 'error',
          text: '',
          error: { code: 'INTERNAL', message: error.message },
          usage: { input: 0, output: 0 },
          steps: 0,
        })
      },
    )
    // turn/start is logged synchronously by the loop when idle; otherwise it comes shortly.
    const turn = await Promise.race([
      started,
      done.then(
        (r) => r.turn,
        (error: Error) => {
          throw new RpcError('INTERNAL', `session/prompt: the agent refused the prompt: ${error.message}`)
        },
      ),
    ])
    return { turn }
  }

  private cancel(raw: unknown): { cancelled: boolean } {
    const entry = this.entry(Method.sessionCancel, p.object(Method.sessionCancel, raw))
    if (!entry.busy) return { cancelled: false }
    entry.agent.abort('cancelled by the SDK client')
    return { cancelled: true }
  }

  private askClient(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalAnswer> {
    const sessionId = request.sessionId!
    const entry = this.entries.get(sessionId)
    if (!entry || this.stopping || this.connection.closed)
      return Promise.reject(new Error('the SDK client is not connected'))
    const id = String(request.id)
    const answer = this.approvals.wait(id, {
      sessionId,
      signal,
      abortMessage: 'the approval request was settled elsewhere',
      settled: () => {
        entry.approvals.delete(id)
        if (entry.approvals.size === 0 && entry.status === 'waiting-approval' && this.entries.has(sessionId)) {
          this.setStatus(entry, entry.busy ? 'running' : 'idle')
        }
      },
    })
    entry.approvals.add(id)
    const wire: WireApprovalRequest = {
      kind: request.kind,
      title: request.title,
      ...(request.detail !== undefined ? { detail: request.detail } : {}),
      action: request.action,
      options: [...request.options],
      ...(request.labels !== undefined ? { labels: { ...request.labels } } : {}),
      ...(request.agentId !== undefined ? { agentId: request.agentId } : {}),
      time: request.time,
    }
    this.connection.notify(Notification.approvalRequested, { requestId: id, sessionId, request: wire })
    if (entry.status !== 'waiting-approval') this.setStatus(entry, 'waiting-approval')
    return answer
  }

  private respond(raw: unknown): {} {
    const params = p.object(Method.approvalRespond, raw)
    const requestId = p.string(Method.approvalRespond, params, 'requestId')
    const decision = p.decision(Method.approvalRespond, params)
    const reason = p.string(Method.approvalRespond, params, 'reason', true)
    const message = p.string(Method.approvalRespond, params, 'message', true)
    const answered = this.approvals.answer(requestId, {
      decision,
      ...(reason !== undefined ? { reason } : {}),
      ...(message !== undefined ? { message } : {}),
    })
    if (!answered)
      throw new RpcError(
        'APPROVAL_NOT_FOUND',
        `approval/respond: no pending approval request ${JSON.stringify(requestId)} (already answered, cancelled, or never asked)`,
        { requestId },
      )
    return {}
  }
}
