// @dsh/agent: the Agent handle, the `ctx.agents` registry and the `agent/*` event vocabulary.
// It has no dependency on any loop: a loop plugin registers an AgentFactory and the registry
// delegates `create()` to it, so the loop can be swapped from configuration.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { LlmError, LlmRequest, ReasoningEffort, TokenUsage, UserContentBlock } from '@dsh/llm'
import type { LoggedError, MessageSource, Session, TurnEndReason } from '@dsh/session'
import type {} from '@dsh/brand' // declares the app/ready and app/stopping events

declare const agentIdBrand: unique symbol
/** Opaque agent id (branded). */
export type AgentId = string & { readonly [agentIdBrand]: true }
export const asAgentId = (value: string): AgentId => value as AgentId

export interface ModelSelection {
  provider: string
  model: string
  reasoningEffort?: ReasoningEffort
  maxTokens?: number
}

export type AgentStatus = 'idle' | 'running' | 'disposed'

export interface TurnResult {
  turn: number
  reason: TurnEndReason
  /** Text of the last assistant message of the turn ('' when there was none). */
  text: string
  error?: LoggedError
  /** Sum of the usage of every step of the turn. */
  usage: TokenUsage
  steps: number
}

export interface InjectedContext {
  content: string | UserContentBlock[]
  source: MessageSource
}

export interface SendOptions {
  source?: MessageSource
}

export interface Agent {
  readonly id: AgentId
  readonly session: Session
  readonly cwd: string
  /** Agent scope key for scoped registrations (tools, prompt sections). */
  readonly scope: string
  model: ModelSelection
  readonly status: AgentStatus
  /** Queues a human message. Starts a turn when idle; mid-turn it is claimed at the next step. */
  send(input: string | UserContentBlock[], options?: SendOptions): Promise<TurnResult>
  /** Queues model-facing context that waits for the next admitted request; never starts a turn. */
  inject(context: InjectedContext): void
  /** Cancels the running turn (no-op when idle). The turn ends with reason `cancelled`. */
  abort(reason?: string): void
  /** Resolves when no turn is running and no input is queued. */
  idle(): Promise<void>
  dispose(): Promise<void>
}

export interface CreateAgentOptions {
  cwd: string
  /** Reuse an existing session (resume); otherwise the factory creates one. */
  session?: Session
  model?: ModelSelection
  id?: string
  maxSteps?: number
}

export interface AgentFactory {
  readonly name: string
  create(options: CreateAgentOptions): Agent
}

// ---- agent/* events ----

export interface PreStepPayload {
  agent: Agent
  turn: number
  step: number
  /** The input this step will enter into the log, in order. Listeners may append to it. */
  messages: InjectedContext[]
  /**
   * Work the step's model response must wait for, without holding the request back (see
   * `RequestPayload.defer`). Absent from loops that do not support it: then await the work.
   */
  defer?(work: Promise<unknown>): void
}
export type PreStepDecision =
  | { action: 'enter'; messages: InjectedContext[] }
  | { action: 'reject'; code: string; reason: string }

export interface RequestPayload {
  agent: Agent
  turn: number
  step: number
  /** The request about to be sent. Changing model-visible fields here must be logged first. */
  request: LlmRequest
  /**
   * Work that may run while the request is in flight but must finish before anything of its
   * response is logged or acted on (a durability checkpoint): the loop sends the request at once,
   * then waits for every deferred promise before it takes the first chunk or a stream failure. A
   * rejection ends the step (`step/end {finish: error}`, nothing of the response logged) and the
   * turn `error` with the rejection's `code` (else INTERNAL), never as a provider error.
   * Absent from loops that do not support it: then await the work before `next()`.
   */
  defer?(work: Promise<unknown>): void
}

export interface RequestErrorPayload {
  agent: Agent
  turn: number
  step: number
  error: LlmError
  /** 1 for the first failure of this request, counting retries. */
  attempt: number
}
export type RequestErrorDecision = { action: 'fail' } | { action: 'retry'; delayMs: number }

export interface TurnStoppingPayload {
  agent: Agent
  turn: number
  reason: TurnEndReason
}

declare module 'cordis' {
  interface Context {
    agents: AgentRegistry
  }
  interface Events {
    'agent/created'(agent: Agent): void
    'agent/disposed'(agent: Agent): void
    'agent/status'(agent: Agent, status: AgentStatus): void
    'agent/turn-end'(agent: Agent, result: TurnResult): void
    'agent/pre-step'(payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision>
    'agent/request'(payload: RequestPayload, next: () => Promise<void>): Promise<void>
    'agent/request-error'(
      payload: RequestErrorPayload,
      next: () => Promise<RequestErrorDecision>,
    ): Promise<RequestErrorDecision>
    'agent/turn-stopping'(payload: TurnStoppingPayload): Promise<void> | void
  }
}

export class AgentRegistry extends Service {
  static Config: Schema<{}> = Schema.object({})
  private factories: AgentFactory[] = []
  private agents = new Map<AgentId, Agent>()

  constructor(ctx: Context, _config: {} = {}) {
    super(ctx, 'agents')
    // An app that is about to stop (the `app/stopping` event, declared in @dsh/brand, emitted while every
    // row is still active) disposes its agents first: running turns end `cancelled` and their last
    // events reach the session log before persistence and the loop unwind.
    ctx.on('app/stopping', async () => {
      await Promise.allSettled([...this.agents.values()].map((agent) => agent.dispose()))
    })
    // Disposing the registry disposes every agent it still tracks.
    ctx.effect(() => () => {
      for (const agent of [...this.agents.values()]) agent.dispose().catch(() => {})
    })
  }

  /** Registers the loop's factory. The newest factory wins; undone with the disposer or its plugin. */
  registerFactory(factory: AgentFactory): () => void {
    return this.ctx.effect(() => {
      this.factories.push(factory)
      return () => {
        const index = this.factories.indexOf(factory)
        if (index >= 0) this.factories.splice(index, 1)
      }
    }, `agents.factory(${factory.name})`)
  }

  get factory(): AgentFactory | undefined {
    return this.factories[this.factories.length - 1]
  }

  create(options: CreateAgentOptions): Agent {
    const factory = this.factory
    if (!factory) throw new Error('no agent loop is mounted: add the @dsh/agent-loop row to the profile')
    const agent = factory.create(options)
    if (this.agents.has(agent.id)) throw new Error(`agent id '${agent.id}' is already in use`)
    this.agents.set(agent.id, agent)
    this.ctx.emit('agent/created', agent)
    return agent
  }

  /** Called by an Agent implementation when it is disposed. */
  forget(agent: Agent): void {
    if (this.agents.get(agent.id) === agent) {
      this.agents.delete(agent.id)
      this.ctx.emit('agent/disposed', agent)
    }
  }

  get(id: string): Agent | undefined {
    return this.agents.get(id as AgentId)
  }

  list(): Agent[] {
    return [...this.agents.values()]
  }
}

export default AgentRegistry
