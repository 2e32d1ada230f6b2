// One turn of the agent loop as a function of what it talks to: the session log, the model
// stream, the tools, the system prompt and the hooks. No Cordis here: `LoopAgent` (agent.ts)
// builds the dependencies from its context, and tests hand in a scripted stream.
import {
  BlockAssembler,
  LlmError,
  addUsage,
  emptyUsage,
  type AssistantMessage,
  type LlmRequest,
  type StreamChunk,
  type TokenUsage,
  type ToolCallBlock,
  type ToolSchema,
  type UserContentBlock,
} from '@dsh/llm'
import {
  PluginError,
  type CallIdentities,
  type LoggedError,
  type Session,
  type SessionEventMap,
  type SessionEventType,
  type TurnEndReason,
} from '@dsh/session'
import type {
  ModelSelection,
  PreStepDecision,
  PreStepPayload,
  RequestErrorDecision,
  RequestErrorPayload,
  RequestPayload,
  TurnResult,
} from '@dsh/agent'
import type { ExecuteContext, ToolCallRequest, ToolResultPayload } from '@dsh/tools'
import type { AssembleInput, AssembledPrompt } from '@dsh/system-prompt'
import { toBlocks, type QueuedInput } from './inbox.ts'

/** The hook points of a turn; the payloads are the agent events' without `agent`. */
export interface TurnHooks {
  /** `agent/pre-step`; with no listener the answer is `{action: 'enter', messages: payload.messages}`. */
  preStep(payload: Omit<PreStepPayload, 'agent'>): Promise<PreStepDecision>
  /** `agent/request`: runs before the request is sent. */
  request(payload: Omit<RequestPayload, 'agent'>): Promise<void>
  /** `agent/request-error`; with no listener the answer is `{action: 'fail'}`. */
  requestError(payload: Omit<RequestErrorPayload, 'agent'>): Promise<RequestErrorDecision>
  /** `agent/turn-stopping`: a throw fails the turn (it still ends). */
  turnStopping(payload: { turn: number; reason: TurnEndReason }): Promise<void>
  /** `agent/turn-end`: a throw is reported and ignored. */
  turnEnd(result: TurnResult): void
}

/** Queued input: claimed at the turn's start and at each step boundary (steering). */
export interface TurnQueue {
  readonly hasHuman: boolean
  claimAll(): QueuedInput[]
  /** Puts claimed input back at the front (a step that never entered it). */
  restore(inputs: QueuedInput[]): void
}

export interface TurnDeps {
  /** The session log: every request is rebuilt from it, everything the turn does is appended to it. */
  log: Session
  stream(request: LlmRequest): AsyncIterable<StreamChunk>
  tools: {
    schemas(scope?: string): ToolSchema[]
    /** Tools held back from the request as catalogue lines (deferred); their prompt sections are left out. */
    deferred?(scope?: string): ReadonlyArray<{ name: string }>
    executeAll(
      calls: readonly ToolCallRequest[],
      context: ExecuteContext,
      onResult?: (result: ToolResultPayload, index: number) => void,
    ): Promise<unknown>
  }
  prompt: { assemble(input: AssembleInput): AssembledPrompt }
  hooks: TurnHooks
  queue: TurnQueue
  /** Failures that are reported but do not change the turn's outcome. */
  warn(message: string): void
  /** Who is asking: request metadata, tool scope and working directory. */
  agentId: string
  scope: string
  cwd: string
  maxSteps: number
  /** The model of the next request, read at every step (it may change between steps). */
  model(): ModelSelection
  /**
   * State kept across turns: session-unique tool-call identities and the last logged request
   * header (a `request/header` is appended only when it changes).
   */
  state: { callIds: CallIdentities; lastHeader: string | undefined }
}

type StepOutcome =
  | { kind: 'tools' }
  | { kind: 'done'; finish?: string }
  | { kind: 'cancelled' }
  | { kind: 'failed'; error: LlmError }

const textOf = (message: AssistantMessage): string =>
  message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')

const messageOf = (failure: unknown): string => (failure instanceof Error ? failure.message : String(failure))

/** The logged form of a failure that is not the model's: a plugin's own code, else INTERNAL. */
function loggedFailure(failure: unknown): LoggedError {
  const code = (failure as { code?: unknown } | null)?.code
  return { code: typeof code === 'string' && code !== '' ? code : 'INTERNAL', message: messageOf(failure) }
}

function toLlmError(error: unknown): LlmError {
  if (LlmError.is(error)) return error
  return new LlmError('TRANSPORT', messageOf(error), { cause: error })
}

/**
 * Runs turn number `turn` to its end: claims the queued input, runs steps until the model is done
 * (or the turn is cancelled through `signal`, fails, is rejected or reaches `maxSteps`), logs
 * `turn/end`, and settles every `send()` whose input the turn claimed. Never rejects for a failure
 * of the model or of plugin code: those end the turn with a reason and a logged error.
 */
export async function runTurn(deps: TurnDeps, turn: number, signal: AbortSignal): Promise<TurnResult> {
  const { log: session, queue } = deps
  session.append('turn/start', { turn })
  let claimed = queue.claimAll()
  const settles = claimed.flatMap((q) => (q.settle ? [q.settle] : []))
  const claimSteering = (): QueuedInput[] => {
    const steering = queue.claimAll()
    for (const q of steering) if (q.settle) settles.push(q.settle)
    return steering
  }
  let reason: TurnEndReason = 'completed'
  let error: LoggedError | undefined
  let usage: TokenUsage = emptyUsage()
  let text = ''
  let steps = 0
  let attempt = 0
  let rejected: Array<{ content: UserContentBlock[]; source: QueuedInput['source'] }> = []
  try {
    for (let step = 0; ; step++) {
      if (signal.aborted) {
        reason = 'cancelled'
        break
      }
      if (step >= deps.maxSteps) {
        reason = 'blocked'
        error = { code: 'MAX_STEPS', message: `the turn reached its limit of ${deps.maxSteps} steps` }
        queue.restore(claimed)
        break
      }
      // Work listeners defer to the response of this step's request (see RequestPayload.defer).
      const gates: Array<Promise<unknown>> = []
      const decision = await deps.hooks.preStep({
        turn,
        step,
        messages: claimed.map((q) => ({ content: q.content, source: q.source })),
        defer: deferInto(gates),
      })
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
      const outcome = await runStep(deps, turn, step, signal, gates)
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
        const retry = await deps.hooks.requestError({ turn, step, error: outcome.error, attempt })
        if (retry.action === 'retry' && !signal.aborted) {
          if (await sleep(retry.delayMs, signal)) continue
          reason = 'cancelled'
          break
        }
        reason = signal.aborted ? 'cancelled' : 'error'
        if (reason === 'error') error = { code: outcome.error.code, message: outcome.error.message }
        break
      }
      if (outcome.kind === 'tools') {
        claimed = claimSteering()
        continue
      }
      // The model finished. New human input that arrived meanwhile steers into one more step.
      if (queue.hasHuman) {
        claimed = claimSteering()
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
      appendClosing(deps, 'step/end', { turn, step: started.data.step, finish: 'error' })
    }
  }
  let result: TurnResult | undefined
  try {
    try {
      await deps.hooks.turnStopping({ turn, reason })
    } catch (failure) {
      // A throwing turn-stopping listener fails the turn (it did not get to do its job), but
      // the turn still ends: logged, settled, never left open.
      if (!error) {
        reason = 'error'
        error = loggedFailure(failure)
      }
      deps.warn(messageOf(failure))
    }
    appendClosing(deps, 'turn/end', {
      turn,
      reason,
      ...(error ? { error } : {}),
      ...(rejected.length ? { rejected } : {}),
    })
    result = { turn, reason, text, usage, steps, ...(error ? { error } : {}) }
    try {
      deps.hooks.turnEnd(result)
    } catch (failure) {
      deps.warn(`an agent/turn-end listener threw: ${messageOf(failure)}`)
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
    for (const s of settles) s.resolve(result)
  }
  return result
}

/**
 * Appends an event that closes a step or turn. The event is logged even when a session listener
 * throws (listeners run after the append), so such a failure is only reported, never allowed to
 * leave the step or turn open.
 */
function appendClosing<K extends SessionEventType>(deps: TurnDeps, type: K, data: SessionEventMap[K]): void {
  try {
    deps.log.append(type, data)
  } catch (failure) {
    if (!PluginError.is(failure)) throw failure
    deps.warn(failure.message)
  }
}

function buildRequest(deps: TurnDeps, turn: number, step: number, signal: AbortSignal): LlmRequest {
  const selection = deps.model()
  const { provider, model } = selection
  const session = deps.log
  const tools = deps.tools.schemas(deps.scope)
  const deferredTools = deps.tools.deferred?.(deps.scope).map((def) => def.name)
  const assembled = deps.prompt.assemble({
    provider,
    model,
    cwd: deps.cwd,
    scope: deps.scope,
    tools,
    session,
    ...(deferredTools?.length ? { deferredTools } : {}),
  })
  const header = { provider, model, system: assembled.system, tools: assembled.tools }
  const headerJson = JSON.stringify(header)
  if (headerJson !== deps.state.lastHeader) {
    session.append('request/header', header)
    deps.state.lastHeader = headerJson
  }
  const request: LlmRequest = {
    provider,
    model,
    system: assembled.system,
    messages: session.deriveMessages(),
    tools: assembled.tools,
    signal,
    metadata: { sessionId: session.id, agentId: deps.agentId, turn, step },
  }
  if (selection.maxTokens !== undefined) request.maxTokens = selection.maxTokens
  if (selection.reasoningEffort !== undefined) request.reasoningEffort = selection.reasoningEffort
  return request
}

async function runStep(
  deps: TurnDeps,
  turn: number,
  step: number,
  signal: AbortSignal,
  gates: Array<Promise<unknown>>,
): Promise<StepOutcome> {
  const session = deps.log
  const request = buildRequest(deps, turn, step, signal)
  await deps.hooks.request({ turn, step, request, defer: deferInto(gates) })
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
  let iterator: AsyncIterator<StreamChunk> | undefined
  // The provider's own id of each call whose log identity differs from it (by log identity).
  const providerIds = new Map<string, string>()
  try {
    if (signal.aborted) throw new LlmError('ABORTED', 'the request was cancelled')
    iterator = deps.stream(request)[Symbol.asyncIterator]()
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
          const identity = deps.state.callIds.assign(chunk.callId)
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
    appendClosing(deps, 'step/end', { turn, step, finish: 'error' })
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
      message: { role: 'tool', callId: call.callId, name: call.name, content: [{ type: 'text', text }], isError: true },
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
    if (plugin) deps.warn(plugin.message)
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
  note('assistant/message', { message, ...(usage ? { usage } : {}), ...(finish ? { finish } : {}) })
  const calls = message.content.filter((b): b is ToolCallBlock => b.type === 'tool-call')
  if (calls.length === 0) {
    note('step/end', finish ? { turn, step, finish } : { turn, step })
    if (plugin) throw plugin
    return { kind: 'done', finish }
  }
  for (const call of calls) note('tool/call', toolCallEvent(call, providerIds))
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
  await deps.tools.executeAll(
    calls.map((c) => ({ callId: c.callId, name: c.name, arguments: c.arguments })),
    { sessionId: session.id, agentId: deps.agentId, scope: deps.scope, cwd: deps.cwd, turn, step, signal },
    (result) => note('tool/result', result),
  )
  note('step/end', finish ? { turn, step, finish } : { turn, step })
  if (plugin && !signal.aborted) throw plugin
  return signal.aborted ? { kind: 'cancelled' } : { kind: 'tools' }
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
