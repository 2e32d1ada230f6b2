import type { Context } from 'cordis'
import {
  BlockAssembler,
  LlmError,
  addUsage,
  emptyUsage,
  type AssistantMessage,
  type LlmRequest,
  type TokenUsage,
  type ToolCallBlock,
  type UserContentBlock,
} from '@dsh/llm'
import {
  CallIdentities,
  PluginError,
  serialNamed,
  type LoggedError,
  type Session,
  type SessionEventMap,
  type SessionEventType,
  type TurnEndReason,
} from '@dsh/session'
import {
  asAgentId,
  type Agent,
  type AgentId,
  type AgentStatus,
  type CreateAgentOptions,
  type InjectedContext,
  type ModelSelection,
  type PreStepDecision,
  type RequestErrorDecision,
  type SendOptions,
  type TurnResult,
} from '@dsh/agent'
import { Inbox, toBlocks, type QueuedInput } from './inbox.ts'
import { plainService } from '@dsh/plain-service'

export interface LoopOptions {
  maxSteps: number
  defaultModel?: ModelSelection
}

type StepOutcome =
  | { kind: 'tools' }
  | { kind: 'done'; finish?: string }
  | { kind: 'cancelled' }
  | { kind: 'failed'; error: LlmError }

interface RunningTurn {
  turn: number
  controller: AbortController
}

const textOf = (message: AssistantMessage): string =>
  message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')

/** The logged form of a failure that is not the model's: a plugin's own code, else INTERNAL. */
function loggedFailure(failure: unknown): LoggedError {
  const code = (failure as { code?: unknown } | null)?.code
  return {
    code: typeof code === 'string' && code !== '' ? code : 'INTERNAL',
    message: failure instanceof Error ? failure.message : String(failure),
  }
}

function toLlmError(error: unknown): LlmError {
  if (LlmError.is(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new LlmError('TRANSPORT', message, { cause: error })
}

/**
 * The loop-driven Agent. One turn runs at a time; input queued while a turn runs is claimed at
 * the next step boundary (steering), or starts the next turn.
 */
export class LoopAgent implements Agent {
  readonly id: AgentId
  readonly session: Session
  readonly cwd: string
  readonly scope: string
  model: ModelSelection
  private readonly inbox = new Inbox()
  private readonly maxSteps: number
  private _status: AgentStatus = 'idle'
  private current: RunningTurn | undefined
  private driving: Promise<void> | undefined
  private nextTurn: number
  private lastHeader: string | undefined
  /** Session-unique tool-call identities (see CallIdentities in @dsh/session). */
  private readonly callIds: CallIdentities
  private idleWaiters: Array<() => void> = []
  /**
   * The services each step calls, as plain objects read once: reaching a service through the
   * context builds an Error and tracing proxies on every read, and calls through the answer build a
   * per-caller shadow. All three are required injects of agent-loop, whose agents are disposed when
   * Cordis restarts it for a changed service, so these never go stale.
   */
  private readonly services: {
    llm: Context['llm']
    tools: Context['tools']
    systemPrompt: Context['systemPrompt']
    events: Context['events']
  }

  constructor(
    private readonly ctx: Context,
    options: CreateAgentOptions,
    loop: LoopOptions,
  ) {
    this.cwd = options.cwd
    const model = options.model ?? loop.defaultModel
    if (!model) throw new Error('no model selected: pass `model` or configure the agent-loop row `defaultModel`')
    this.model = { ...model }
    this.maxSteps = options.maxSteps ?? loop.maxSteps
    // `events` too: `ctx.waterfall(...)` reads it through an accessor (two Errors and proxies per
    // read); it is the root's built-in service and dispatches to the same listeners either way.
    this.services = {
      llm: plainService(ctx.llm),
      tools: plainService(ctx.tools),
      systemPrompt: plainService(ctx.systemPrompt),
      events: plainService(ctx.events),
    }
    this.session = options.session ?? ctx.sessions.create({ cwd: options.cwd })
    this.id = asAgentId(options.id ?? `agent-${this.session.id}`)
    this.scope = `agent:${this.id}`
    // Resuming: continue turn numbering and header comparison from the log (one scan at creation).
    let turns = 0
    this.callIds = new CallIdentities()
    for (const event of this.session.events) {
      if (event.type === 'turn/start') turns = event.data.turn + 1
      // Replayed through `assign`, so an old log that repeats ids reserves the names a face
      // replaying it shows (see CallIdentities).
      else if (event.type === 'tool/call') this.callIds.assign(event.data.callId)
    }
    this.nextTurn = turns
    const header = this.session.last('request/header')
    this.lastHeader = header ? JSON.stringify(header.data) : undefined
  }

  get status(): AgentStatus {
    return this._status
  }

  send(input: string | UserContentBlock[], options: SendOptions = {}): Promise<TurnResult> {
    if (this._status === 'disposed') return Promise.reject(new Error(`agent ${this.id} is disposed`))
    return new Promise<TurnResult>((resolve, reject) => {
      const queued: QueuedInput = {
        content: toBlocks(input),
        source: options.source ?? { kind: 'human' },
        human: true,
        settle: { resolve, reject },
      }
      this.inbox.pushHuman(queued)
      this.kick()
    })
  }

  inject(context: InjectedContext): void {
    if (this._status === 'disposed') throw new Error(`agent ${this.id} is disposed`)
    this.inbox.pushContext(context)
  }

  abort(_reason?: string): void {
    this.current?.controller.abort()
  }

  idle(): Promise<void> {
    if (!this.driving) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  async dispose(): Promise<void> {
    if (this._status === 'disposed') return
    this.abort('disposed')
    const driving = this.driving
    for (const q of this.inbox.drainHuman()) q.settle?.reject(new Error(`agent ${this.id} was disposed`))
    if (driving !== undefined) await driving.catch(() => {})
    this.setStatus('disposed')
    this.ctx.agents?.forget(this)
  }

  private setStatus(status: AgentStatus): void {
    if (this._status === status || this._status === 'disposed') return
    this._status = status
    this.ctx.emit('agent/status', this, status)
  }

  private kick(): void {
    if (this.driving || !this.inbox.hasHuman) return
    this.driving = this.drive()
  }

  private async drive(): Promise<void> {
    try {
      while (this.inbox.hasHuman && this._status !== 'disposed') {
        this.setStatus('running')
        await this.runTurn()
      }
    } finally {
      this.driving = undefined
      this.setStatus('idle')
      const waiters = this.idleWaiters
      this.idleWaiters = []
      for (const w of waiters) w()
    }
  }

  private async runTurn(): Promise<void> {
    const turn = this.nextTurn++
    const controller = new AbortController()
    this.current = { turn, controller }
    const { session } = this
    session.append('turn/start', { turn })
    let claimed = this.inbox.claimAll()
    const settles = claimed.flatMap((q) => (q.settle ? [q.settle] : []))
    let reason: TurnEndReason = 'completed'
    let error: LoggedError | undefined
    let usage: TokenUsage = emptyUsage()
    let text = ''
    let steps = 0
    let attempt = 0
    let rejected: Array<{ content: UserContentBlock[]; source: QueuedInput['source'] }> = []
    try {
      for (let step = 0; ; step++) {
        if (controller.signal.aborted) {
          reason = 'cancelled'
          break
        }
        if (step >= this.maxSteps) {
          reason = 'blocked'
          error = { code: 'MAX_STEPS', message: `the turn reached its limit of ${this.maxSteps} steps` }
          this.inbox.restore(claimed)
          break
        }
        // Work listeners defer to the response of this step's request (see RequestPayload.defer).
        const gates: Array<Promise<unknown>> = []
        const payload = {
          agent: this as Agent,
          turn,
          step,
          messages: claimed.map((q) => ({ content: q.content, source: q.source })),
          defer: deferInto(gates),
        }
        const decision: PreStepDecision = await this.services.events.waterfall('agent/pre-step', payload, async () => ({
          action: 'enter' as const,
          messages: payload.messages,
        }))
        if (decision.action === 'reject') {
          reason = 'blocked'
          error = { code: decision.code, message: decision.reason }
          rejected = claimed.map((q) => ({ content: q.content, source: q.source }))
          break
        }
        session.append('step/start', { turn, step })
        steps++
        for (const message of decision.messages) {
          session.append('user/message', { content: toBlocks(message.content), source: message.source })
        }
        claimed = []
        const outcome = await this.runStep(turn, step, controller.signal, gates)
        if (outcome.kind === 'done' || outcome.kind === 'tools') {
          attempt = 0
          const last = session.last('assistant/message')
          if (last) {
            text = textOf(last.data.message)
            if (last.data.usage) usage = addUsage(usage, last.data.usage)
          }
        }
        if (outcome.kind === 'cancelled') {
          reason = 'cancelled'
          break
        }
        if (outcome.kind === 'failed') {
          attempt++
          const retry: RequestErrorDecision = await this.ctx.waterfall(
            'agent/request-error',
            { agent: this as Agent, turn, step, error: outcome.error, attempt },
            async () => ({ action: 'fail' as const }),
          )
          if (retry.action === 'retry' && !controller.signal.aborted) {
            if (await sleep(retry.delayMs, controller.signal)) continue
            reason = 'cancelled'
            break
          }
          reason = controller.signal.aborted ? 'cancelled' : 'error'
          if (reason === 'error') error = { code: outcome.error.code, message: outcome.error.message }
          break
        }
        if (outcome.kind === 'tools') {
          claimed = this.claimSteering(settles)
          continue
        }
        // The model finished. New human input that arrived meanwhile steers into one more step.
        if (this.inbox.hasHuman) {
          claimed = this.claimSteering(settles)
          continue
        }
        if (outcome.finish === 'length') reason = 'max-tokens'
        break
      }
    } catch (failure) {
      // A plugin that stops the turn (e.g. a failed checkpoint, a throwing session listener:
      // PLUGIN_ERROR) names its own code; anything else is an internal failure. Either way the
      // turn is closed and logged, never left open.
      reason = 'error'
      error = loggedFailure(failure)
      // Close a step the failure left open, so the log never holds a step without its end.
      const started = session.last('step/start')
      const ended = session.last('step/end')
      if (started && (!ended || ended.seq < started.seq)) {
        this.appendClosing('step/end', { turn, step: started.data.step, finish: 'error' })
      }
    } finally {
      this.current = undefined
    }
    let result: TurnResult | undefined
    try {
      try {
        await serialNamed(this.ctx, 'agent/turn-stopping', 'agent/turn-stopping', [{ agent: this, turn, reason }])
      } catch (failure) {
        // A throwing turn-stopping listener fails the turn (it did not get to do its job), but
        // the turn still ends: logged, settled, never left open.
        if (!error) {
          reason = 'error'
          error = loggedFailure(failure)
        }
        this.ctx.logger('agent-loop').warn('%s', failure instanceof Error ? failure.message : String(failure))
      }
      this.appendClosing('turn/end', {
        turn,
        reason,
        ...(error ? { error } : {}),
        ...(rejected.length ? { rejected } : {}),
      })
      result = { turn, reason, text, usage, steps, ...(error ? { error } : {}) }
      try {
        this.ctx.emit('agent/turn-end', this, result)
      } catch (failure) {
        this.ctx
          .logger('agent-loop')
          .warn('an agent/turn-end listener threw: %s', failure instanceof Error ? failure.message : String(failure))
      }
    } finally {
      result ??= {
        turn,
        reason: 'error',
        text,
        usage,
        steps,
        error: error ?? { code: 'INTERNAL', message: 'the turn could not be closed' },
      }
      for (const s of settles) s.resolve(result!)
    }
  }

  /**
   * Appends an event that closes a step or turn. The event is logged even when a session listener
   * throws (listeners run after the append), so such a failure is only reported, never allowed to
   * leave the step or turn open.
   */
  private appendClosing<K extends SessionEventType>(type: K, data: SessionEventMap[K]): void {
    try {
      this.session.append(type, data)
    } catch (failure) {
      if (!PluginError.is(failure)) throw failure
      this.ctx.logger('agent-loop').warn('%s', failure.message)
    }
  }

  private claimSteering(settles: Array<NonNullable<QueuedInput['settle']>>): QueuedInput[] {
    const claimed = this.inbox.claimAll()
    for (const q of claimed) if (q.settle) settles.push(q.settle)
    return claimed
  }

  private buildRequest(turn: number, step: number, signal: AbortSignal): LlmRequest {
    const { provider, model } = this.model
    const tools = this.services.tools.schemas(this.scope)
    const assembled = this.services.systemPrompt.assemble({
      provider,
      model,
      cwd: this.cwd,
      scope: this.scope,
      tools,
      session: this.session,
    })
    const header = { provider, model, system: assembled.system, tools: assembled.tools }
    const headerJson = JSON.stringify(header)
    if (headerJson !== this.lastHeader) {
      this.session.append('request/header', header)
      this.lastHeader = headerJson
    }
    const request: LlmRequest = {
      provider,
      model,
      system: assembled.system,
      messages: this.session.deriveMessages(),
      tools: assembled.tools,
      signal,
      metadata: { sessionId: this.session.id, agentId: this.id, turn, step },
    }
    if (this.model.maxTokens !== undefined) request.maxTokens = this.model.maxTokens
    if (this.model.reasoningEffort !== undefined) request.reasoningEffort = this.model.reasoningEffort
    return request
  }

  private async runStep(
    turn: number,
    step: number,
    signal: AbortSignal,
    gates: Array<Promise<unknown>> = [],
  ): Promise<StepOutcome> {
    const { session } = this
    const request = this.buildRequest(turn, step, signal)
    await this.services.events.waterfall(
      'agent/request',
      { agent: this, turn, step, request, defer: deferInto(gates) },
      async () => {},
    )
    // Deferred work (the request's durability checkpoint) runs while the request is in flight;
    // nothing of the response is taken before it has finished. Its failure is our side's failure.
    let gate: Promise<unknown> | undefined = gates.length > 0 ? Promise.all(gates) : undefined
    gate?.catch(() => {}) // awaited below on every path; never an unhandled rejection meanwhile
    const passGate = async (): Promise<{ error: unknown } | undefined> => {
      if (!gate) return undefined
      const pending = gate
      gate = undefined
      try {
        await pending
        return undefined
      } catch (error) {
        return { error }
      }
    }
    const assembler = new BlockAssembler()
    let failure: LlmError | undefined
    // Only the stream itself can fail as the model: what our side does with a chunk (logging it,
    // which runs session listeners, and assembling it) fails as a plugin/internal error, so it
    // ends the turn instead of looking like a provider error that the retry policy pays for.
    let local: { error: unknown } | undefined
    let iterator: AsyncIterator<Parameters<BlockAssembler['push']>[0]> | undefined
    // The provider's own id of each call whose log identity differs from it (by log identity).
    const providerIds = new Map<string, string>()
    try {
      if (signal.aborted) throw new LlmError('ABORTED', 'the request was cancelled')
      iterator = this.services.llm.stream(request)[Symbol.asyncIterator]()
      for (;;) {
        const next = await iterator.next()
        if (gate !== undefined) {
          local = await passGate()
          if (local) break
        }
        if (next.done || signal.aborted) break
        try {
          let chunk = next.value
          // A call enters the log here: it gets its session-unique identity before anything
          // (the assembler, faces, tools, hooks) sees it. The provider's id is kept on tool/call.
          if (chunk.kind === 'tool-call-start' && typeof chunk.callId === 'string') {
            const identity = this.callIds.assign(chunk.callId)
            if (identity !== chunk.callId) {
              providerIds.set(identity, chunk.callId)
              chunk = { ...chunk, callId: identity }
            }
          }
          session.append('assistant/chunk', { chunk })
          assembler.push(chunk)
        } catch (error) {
          local = { error }
          break
        }
      }
    } catch (error) {
      failure = toLlmError(error)
      iterator = undefined
      // A failed stream is not looked at (retried or reported) before the deferred work is done;
      // if that failed too, ours is the failure that counts.
      local = await passGate()
    }
    // Stop a stream we left early (cancelled, or our side failed): closes the HTTP request.
    if (iterator && (local || signal.aborted)) await iterator.return?.().catch(() => {})
    if (local && !signal.aborted) {
      this.appendClosing('step/end', { turn, step, finish: 'error' })
      throw local.error
    }
    // From here on an event that a session listener fails on is still logged (listeners run after
    // the append), so the step carries on logging: the first plugin failure is kept and ends the
    // turn once the step is closed and the history is well-formed (every call answered).
    let plugin: PluginError | undefined
    const note = <K extends SessionEventType>(type: K, data: SessionEventMap[K]): void => {
      try {
        session.append(type, data)
      } catch (error) {
        if (!PluginError.is(error)) throw error
        plugin ??= error as PluginError
      }
    }
    const answerUnrun = (call: ToolCallBlock, code: string, text: string, message: string) => {
      note('tool/result', {
        message: {
          role: 'tool',
          callId: call.callId,
          name: call.name,
          content: [{ type: 'text', text }],
          isError: true,
        },
        error: { code, message },
      })
    }
    if (signal.aborted) {
      const prefix = assembler.finalizeInterrupted()
      if (prefix.content.length > 0) {
        note('assistant/message', { message: prefix, interrupted: true })
        // Completed calls in the prefix never ran; answer them so the history stays well-formed.
        for (const call of prefix.content.filter((b): b is ToolCallBlock => b.type === 'tool-call')) {
          note('tool/call', toolCallEvent(call, providerIds))
          answerUnrun(call, 'CANCELLED', 'The turn was cancelled before this tool call ran.', 'cancelled before it ran')
        }
      }
      note('step/end', { turn, step, finish: 'error' })
      // Cancellation wins over a plugin failure met while winding down.
      if (plugin) this.ctx.logger('agent-loop').warn('%s', plugin.message)
      return { kind: 'cancelled' }
    }
    if (!failure) {
      const { message } = assembler.result()
      if (message.content.length === 0) failure = new LlmError('EMPTY_RESPONSE', 'the model returned an empty response')
    }
    if (failure) {
      session.append('step/end', { turn, step, finish: 'error' })
      return { kind: 'failed', error: failure }
    }
    const { message, usage, finish } = assembler.result()
    note('assistant/message', {
      message,
      ...(usage ? { usage } : {}),
      ...(finish ? { finish } : {}),
    })
    const calls = message.content.filter((b): b is ToolCallBlock => b.type === 'tool-call')
    if (calls.length === 0) {
      note('step/end', finish ? { turn, step, finish } : { turn, step })
      if (plugin) throw plugin
      return { kind: 'done', finish }
    }
    for (const call of calls) {
      note('tool/call', toolCallEvent(call, providerIds))
    }
    if (plugin) {
      // A plugin is already broken: run nothing, answer every call, close the step, end the turn.
      const failed = plugin
      for (const call of calls) {
        answerUnrun(
          call,
          failed.code,
          `Error [${failed.code}]: this tool call did not run because a harness plugin failed (${failed.plugin}).`,
          `not run: ${failed.message}`,
        )
      }
      note('step/end', { turn, step, finish: 'error' })
      throw failed
    }
    // Each result is logged as soon as it and every earlier call are done (call order).
    await this.services.tools.executeAll(
      calls.map((c) => ({ callId: c.callId, name: c.name, arguments: c.arguments })),
      { sessionId: this.session.id, agentId: this.id, scope: this.scope, cwd: this.cwd, turn, step, signal },
      (result) => note('tool/result', result),
    )
    note('step/end', finish ? { turn, step, finish } : { turn, step })
    if (plugin && !signal.aborted) throw plugin
    return signal.aborted ? { kind: 'cancelled' } : { kind: 'tools' }
  }
}

/** The `tool/call` event of a call; `providerCallId` only when the provider's id was replaced. */
function toolCallEvent(call: ToolCallBlock, providerIds: ReadonlyMap<string, string>): SessionEventMap['tool/call'] {
  const providerCallId = providerIds.get(call.callId)
  return {
    callId: call.callId,
    name: call.name,
    arguments: call.arguments,
    ...(providerCallId !== undefined ? { providerCallId } : {}),
  }
}

/**
 * `defer` for a step's payloads: collects the promise (marked handled at once, so a rejection
 * that arrives before the loop awaits it is not reported as unhandled; the loop still sees it).
 */
function deferInto(gates: Array<Promise<unknown>>): (work: Promise<unknown>) => void {
  return (work) => {
    work.catch(() => {})
    gates.push(work)
  }
}

/** Resolves true after `ms`, false if the signal aborts first. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false)
    const timer = setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort)
        resolve(true)
      },
      Math.max(0, ms),
    )
    const onAbort = () => {
      clearTimeout(timer)
      resolve(false)
    }
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
