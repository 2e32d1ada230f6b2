import type { Context } from 'cordis'
import type { UserContentBlock } from '@dsh/llm'
import { CallIdentities, serialNamed, type Session } from '@dsh/session'
import {
  asAgentId,
  type Agent,
  type AgentId,
  type AgentStatus,
  type CreateAgentOptions,
  type InjectedContext,
  type ModelSelection,
  type SendOptions,
  type TurnResult,
} from '@dsh/agent'
import { plainService } from '@dsh/plain-service'
import { Inbox, toBlocks, type QueuedInput } from './inbox.ts'
import { runTurn, type TurnDeps } from './turn.ts'

export interface LoopOptions {
  maxSteps: number
  defaultModel?: ModelSelection
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
  private _status: AgentStatus = 'idle'
  /** The running turn's controller: `abort()` cancels through it. */
  private current: AbortController | undefined
  private driving: Promise<void> | undefined
  private nextTurn: number
  private idleWaiters: Array<() => void> = []
  /** What `runTurn` talks to, built once from the context (see turn.ts). */
  private readonly deps: TurnDeps

  constructor(
    private readonly ctx: Context,
    options: CreateAgentOptions,
    loop: LoopOptions,
  ) {
    this.cwd = options.cwd
    const model = options.model ?? loop.defaultModel
    if (!model) throw new Error('no model selected: pass `model` or configure the agent-loop row `defaultModel`')
    this.model = { ...model }
    this.session = options.session ?? ctx.sessions.create({ cwd: options.cwd })
    this.id = asAgentId(options.id ?? `agent-${this.session.id}`)
    this.scope = `agent:${this.id}`
    // Resuming: continue turn numbering and header comparison from the log (one scan at creation).
    let turns = 0
    const callIds = new CallIdentities()
    for (const event of this.session.events) {
      if (event.type === 'turn/start') turns = event.data.turn + 1
      // Replayed through `assign`, so an old log that repeats ids reserves the names a face
      // replaying it shows (see CallIdentities).
      else if (event.type === 'tool/call') callIds.assign(event.data.callId)
    }
    this.nextTurn = turns
    const header = this.session.last('request/header')
    this.deps = this.turnDeps(options.maxSteps ?? loop.maxSteps, {
      callIds,
      lastHeader: header ? JSON.stringify(header.data) : undefined,
    })
  }

  /**
   * The services each step calls, as plain objects read once: reaching a service through the
   * context builds an Error and tracing proxies on every read, and calls through the answer build a
   * per-caller shadow. All three are required injects of agent-loop, whose agents are disposed when
   * Cordis restarts it for a changed service, so these never go stale. `events` too:
   * `ctx.waterfall(...)` reads it through an accessor (two Errors and proxies per read); it is the
   * root's built-in service and dispatches to the same listeners either way.
   */
  private turnDeps(maxSteps: number, state: TurnDeps['state']): TurnDeps {
    const { ctx } = this
    const llm = plainService(ctx.llm)
    const events = plainService(ctx.events)
    const logger = ctx.logger('agent-loop')
    const agent = this as Agent
    return {
      log: this.session,
      stream: (request) => llm.stream(request),
      tools: plainService(ctx.tools),
      prompt: plainService(ctx.systemPrompt),
      queue: this.inbox,
      warn: (message) => logger.warn('%s', message),
      agentId: this.id,
      scope: this.scope,
      cwd: this.cwd,
      maxSteps,
      model: () => this.model,
      state,
      hooks: {
        preStep: (step) => {
          const payload = { agent, ...step }
          return events.waterfall('agent/pre-step', payload, async () => ({
            action: 'enter' as const,
            messages: payload.messages,
          }))
        },
        request: (step) => events.waterfall('agent/request', { agent, ...step }, async () => {}),
        requestError: (failed) =>
          ctx.waterfall('agent/request-error', { agent, ...failed }, async () => ({ action: 'fail' as const })),
        turnStopping: async ({ turn, reason }) => {
          await serialNamed(ctx, 'agent/turn-stopping', 'agent/turn-stopping', [{ agent, turn, reason }])
        },
        turnEnd: (result) => ctx.emit('agent/turn-end', agent, result),
      },
    }
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
    this.current?.abort()
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
        const controller = new AbortController()
        this.current = controller
        try {
          await runTurn(this.deps, this.nextTurn++, controller.signal)
        } finally {
          this.current = undefined
        }
      }
    } finally {
      this.driving = undefined
      this.setStatus('idle')
      const waiters = this.idleWaiters
      this.idleWaiters = []
      for (const w of waiters) w()
    }
  }
}
