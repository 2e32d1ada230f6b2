// `ctx.subagents`: starts children through named providers, enforces the depth and concurrency
// limits and the per-child timeout, links each child to its parent in both logs, and cascades
// cancellation from the parent (its tool call's signal, or the parent agent going away).
import { type Context, Service } from 'cordis'
import type Schema from 'schemastery'
import type { Agent } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type {} from '@dsh/session-persistence'
import { inProcessProvider } from './in-process.ts'
import { inheritanceOf, inheritedDepth, inheritedModeFloor, looserThan, DEPTH_ENV } from './inherit.ts'
import type {} from '@dsh/sandbox-policy'
import {
  SubagentError,
  type ChildOutcome,
  type ProviderChild,
  type StartSubagentOptions,
  type SubagentLink,
  type SubagentProvider,
  type SubagentRecord,
  type SubagentWorld,
  type SubagentWorldLease,
} from './types.ts'
import {
  MAX_REPORT_CHARS,
  PROVIDER_NAME_PATTERN,
  SUBAGENT_EVENT_TYPES,
  subagentServiceConfig,
  type Live,
  type StartedSubagent,
  type SubagentServiceConfig,
} from './service-types.ts'
export {
  MAX_REPORT_CHARS,
  PROVIDER_NAME_PATTERN,
  SUBAGENT_EVENT_TYPES,
  type StartedSubagent,
  type SubagentServiceConfig,
} from './service-types.ts'

const snapshot = (record: SubagentRecord): SubagentRecord => structuredClone(record)

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

export class SubagentService extends Service {
  static inject = ['agents', 'sessions']
  static Config: Schema<Partial<SubagentServiceConfig>, SubagentServiceConfig> = subagentServiceConfig

  // Fields are only mutated in place: inside methods `this` may be a per-caller shadow.
  private readonly config: SubagentServiceConfig
  private readonly home: Context
  private readonly registered = new Map<string, SubagentProvider>()
  private readonly worldsByName = new Map<string, SubagentWorld>()
  /** parent session id -> child id -> live child. */
  private readonly liveByParent = new Map<string, Map<string, Live>>()
  /** in-process child agent id -> its depth. */
  private readonly depthOfAgent = new Map<string, number>()
  private readonly running = new Set<Live>()
  /** parent session id -> last number handed out. */
  private readonly counters = new Map<string, number>()
  /** Start requests waiting for a free slot, first come first served. */
  private readonly waiting: Array<{ wake: () => void; fail: (error: SubagentError) => void }> = []
  /** Slots freed and handed to a woken request that has not taken them yet. Mutated in place. */
  private handedOverBox = { n: 0 }
  private get handedOver(): number {
    return this.handedOverBox.n
  }
  private set handedOver(n: number) {
    this.handedOverBox.n = n
  }

  /** Depth of this process's root agents: 0, or what the parent dsh set when this process is a subagent. */
  readonly baseDepth: number

  constructor(ctx: Context, config: Partial<SubagentServiceConfig> = {}) {
    super(ctx, 'subagents')
    this.home = ctx
    this.config = {
      defaultProvider: 'spawn',
      maxDepth: 2,
      maxConcurrent: 4,
      maxQueued: 16,
      timeoutMs: 600_000,
      ...config,
    }
    // A subagent process keeps its parent's depth and limit: the tighter of the two limits holds.
    const inherited = inheritedDepth()
    this.baseDepth = inherited.depth
    if (inherited.maxDepth !== undefined) this.config.maxDepth = Math.min(this.config.maxDepth, inherited.maxDepth)
    // ... and its sandbox mode as a floor: DSH_PERMISSION_MODE normally makes it the preset
    // default, but a layer that turns that variable off or drops the presets row must not let a
    // read-only parent's child write. A session that would run looser gets the parent's mode.
    const floor = inheritedModeFloor()
    if (floor) {
      ctx.on('session/created', (session) => {
        const policy = ctx.get('sandboxPolicy')
        if (policy && looserThan(policy.modeFor(session.id), floor)) policy.setMode(session.id, floor)
      })
    }
    // The three event types are logged: persistence must know them or the sessions do not load.
    ctx.inject(['sessionPersistence'], (inner) => {
      for (const type of SUBAGENT_EVENT_TYPES) inner.sessionPersistence.registerEventType(type)
    })
    // A parent that goes away takes its running children with it.
    ctx.on('agent/disposed', (agent) => {
      for (const live of [...this.running]) {
        if (live.parent === agent) this.stop(live, 'PARENT_GONE', 'the parent agent was disposed')
      }
    })
    ctx.effect(
      () => () => {
        for (const live of [...this.running]) this.stop(live, 'PARENT_GONE', 'the subagent service was unloaded')
        for (const waiter of this.waiting.splice(0))
          waiter.fail(
            new SubagentError('CANCELLED', 'the subagent service was unloaded while the request waited for a slot'),
          )
      },
      'subagents: stop children',
    )
    const inProcess = { maxSteps: this.config.maxSteps }
    this.registerProvider(inProcessProvider(ctx, 'spawn', inProcess))
    this.registerProvider(inProcessProvider(ctx, 'fork', inProcess))
  }

  get limits(): Readonly<Pick<SubagentServiceConfig, 'maxDepth' | 'maxConcurrent' | 'timeoutMs'>> {
    const { maxDepth, maxConcurrent, timeoutMs } = this.config
    return { maxDepth, maxConcurrent, timeoutMs }
  }

  get defaultProvider(): string {
    return this.config.defaultProvider
  }

  /** Adds a provider; undone by the returned disposer or when the registering plugin unloads. */
  registerProvider(provider: SubagentProvider): () => void {
    if (!provider || typeof provider.start !== 'function')
      throw new TypeError('subagents.registerProvider: expected {name, start}')
    if (typeof provider.name !== 'string' || !PROVIDER_NAME_PATTERN.test(provider.name)) {
      throw new TypeError(
        `subagents.registerProvider: invalid provider name ${JSON.stringify(provider.name)} (must match ${PROVIDER_NAME_PATTERN})`,
      )
    }
    if (this.registered.has(provider.name))
      throw new TypeError(`subagents.registerProvider: provider "${provider.name}" is already registered`)
    const registered = this.registered
    const dispose = this.ctx.effect(() => {
      registered.set(provider.name, provider)
      return () => {
        if (registered.get(provider.name) === provider) registered.delete(provider.name)
      }
    }, `subagent-provider:${provider.name}`)
    return () => void dispose()
  }

  /** Adds a world children can run in (`world` of a start request); undone like a provider. */
  registerWorld(world: SubagentWorld): () => void {
    if (!world || typeof world.open !== 'function' || !PROVIDER_NAME_PATTERN.test(world.name))
      throw new TypeError(`subagents.registerWorld: expected {name matching ${PROVIDER_NAME_PATTERN}, open}`)
    if (this.worldsByName.has(world.name))
      throw new TypeError(`subagents.registerWorld: world "${world.name}" is already registered`)
    const worlds = this.worldsByName
    const dispose = this.ctx.effect(() => {
      worlds.set(world.name, world)
      return () => {
        if (worlds.get(world.name) === world) worlds.delete(world.name)
      }
    }, `subagent-world:${world.name}`)
    return () => void dispose()
  }

  worlds(): SubagentWorld[] {
    return [...this.worldsByName.values()]
  }

  providers(): SubagentProvider[] {
    return [...this.registered.values()]
  }

  /** Delegation depth of an agent: 0 for a root, n for a child n levels down. */
  depthOf(agent: Agent | string): number {
    return this.depthOfAgent.get(typeof agent === 'string' ? agent : agent.id) ?? this.baseDepth
  }

  /**
   * Starts a child. Rejects with `SubagentError` (nothing started, nothing logged) for a bad
   * request, an unknown provider, an exceeded limit, or a provider that cannot start.
   */
  async start(options: StartSubagentOptions): Promise<StartedSubagent> {
    const { parent } = options
    if (!parent || typeof parent.send !== 'function')
      throw new SubagentError('INVALID_REQUEST', 'a subagent needs a parent agent')
    if (parent.status === 'disposed')
      throw new SubagentError('INVALID_REQUEST', `agent ${parent.id} is disposed and cannot start children`)
    const description = typeof options.description === 'string' ? options.description.trim() : ''
    const prompt = typeof options.prompt === 'string' ? options.prompt : ''
    if (description === '')
      throw new SubagentError('INVALID_REQUEST', 'description must be a non-empty string (a few words naming the task)')
    if (prompt.trim() === '')
      throw new SubagentError('INVALID_REQUEST', 'prompt must be a non-empty string (the complete task for the child)')
    const name = options.provider ?? this.config.defaultProvider
    const provider = this.registered.get(name)
    if (!provider) {
      const known = [...this.registered.keys()].join(', ') || '(none)'
      throw new SubagentError('UNKNOWN_PROVIDER', `unknown subagent provider "${name}"; available: ${known}`)
    }
    // A configured default world holds only where it exists (a preset used in the local world too).
    const fallback = this.config.world
    const worldName =
      options.world ??
      (fallback !== undefined && this.worldsByName.has(fallback) && provider.worlds ? fallback : undefined)
    const world = worldName === undefined ? undefined : this.worldsByName.get(worldName)
    if (worldName !== undefined && !world) {
      const known = [...this.worldsByName.keys()].join(', ')
      throw new SubagentError(
        'INVALID_REQUEST',
        `unknown world "${worldName}"; ${known ? `available: ${known}` : 'this run has no other world (dsh --world e2b adds "e2b")'}; leave world out to run the child in yours`,
      )
    }
    if (world && !provider.worlds)
      throw new SubagentError(
        'NOT_SUPPORTED',
        `provider "${name}" cannot run a child in the world "${world.name}"; use "spawn" or "fork"`,
      )
    const depth = this.depthOf(parent) + 1
    if (depth > this.config.maxDepth) {
      const where =
        this.baseDepth > 0 && depth - 1 === this.baseDepth
          ? ` (it is itself a subagent in a process its parent started, ${DEPTH_ENV}=${this.baseDepth})`
          : ''
      throw new SubagentError(
        'DEPTH_LIMIT',
        `delegation depth limit reached: this agent is at depth ${depth - 1}${where} and the limit is ${this.config.maxDepth}; do the work yourself`,
      )
    }
    // First come, first served: a fresh request does not overtake the ones already waiting.
    if (this.running.size + this.handedOver >= this.config.maxConcurrent || this.waiting.length > 0) {
      // A nested child never waits: its parent holds a slot, so waiting could deadlock.
      const full = `${this.running.size} subagents are already running (the limit is ${this.config.maxConcurrent})`
      if (depth > 1)
        throw new SubagentError(
          'CONCURRENCY_LIMIT',
          `${full}; a subagent's own children do not wait for a slot, so do this part yourself`,
        )
      if (this.waiting.length >= this.config.maxQueued) {
        throw new SubagentError(
          'CONCURRENCY_LIMIT',
          `${full} and ${this.waiting.length} more are waiting; wait for one to finish`,
        )
      }
      await this.slot(options.signal)
      // The freed slot was handed to this request; it is taken below (running.add) or passed on.
      this.handedOver--
      if ((parent.status as string) === 'disposed') {
        this.passOn()
        throw new SubagentError(
          'INVALID_REQUEST',
          `agent ${parent.id} was disposed while its subagent request waited for a slot`,
        )
      }
    }
    const session = parent.session
    const link: SubagentLink = {
      id: this.nextId(session),
      provider: name,
      parentSessionId: session.id,
      parentAgentId: parent.id,
      depth,
      ...(options.callId !== undefined ? { callId: options.callId } : {}),
    }
    const record: SubagentRecord = {
      ...link,
      description,
      background: options.background === true,
      status: 'running',
      startedAt: Date.now(),
    }
    let settle!: (record: SubagentRecord) => void
    const live: Live = { record, parent, finished: new Promise((resolve) => (settle = resolve)) }
    // Reserve the slot before the first await, so concurrent starts see each other.
    this.running.add(live)
    this.childrenOf(session.id).set(link.id, live)
    let child: ProviderChild
    let lease: SubagentWorldLease | undefined
    try {
      const inherit = inheritanceOf(this.home, parent, depth, this.config.maxDepth)
      lease = world?.open(link)
      child = await provider.start({ parent, link, description, prompt, inherit, ...(lease ? { world: lease } : {}) })
    } catch (error) {
      await lease?.close().catch(() => {})
      this.release(live)
      this.childrenOf(session.id).delete(link.id)
      throw new SubagentError('START_FAILED', `provider "${name}" could not start the child: ${describe(error)}`)
    }
    live.child = child
    if (child.sessionId !== undefined) record.sessionId = child.sessionId
    if (child.agentId !== undefined) {
      record.agentId = child.agentId
      this.depthOfAgent.set(child.agentId, depth)
    }
    this.append(session, 'subagent/started', {
      id: link.id,
      provider: name,
      description,
      depth,
      background: record.background,
      ...(link.callId !== undefined ? { callId: link.callId } : {}),
      ...(record.sessionId !== undefined ? { sessionId: record.sessionId } : {}),
      ...(record.agentId !== undefined ? { agentId: record.agentId } : {}),
    })
    this.home.emit('subagent/started', snapshot(record))

    const timeoutMs = this.config.timeoutMs
    const timer =
      timeoutMs > 0
        ? setTimeout(
            () =>
              this.stop(
                live,
                'TIMEOUT',
                `the subagent did not finish within ${Math.round(timeoutMs / 1000)} s and was stopped`,
              ),
            timeoutMs,
          )
        : undefined
    timer?.unref?.()
    const signal = options.signal
    const onAbort = () => this.stop(live, 'CANCELLED', 'the parent cancelled the call that started it')
    signal?.addEventListener('abort', onAbort, { once: true })
    if (signal?.aborted) onAbort()

    void child.result
      .catch(
        (error): ChildOutcome => ({
          status: 'failed',
          text: '',
          error: { code: 'CHILD_ERROR', message: describe(error) },
        }),
      )
      .then(async (outcome) => {
        if (timer) clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        const stopped = live.stoppedBy
        record.status = stopped?.code === 'TIMEOUT' ? 'failed' : stopped ? 'cancelled' : outcome.status
        record.finishedAt = Date.now()
        record.text = outcome.text ?? ''
        const error = stopped ?? outcome.error
        if (error) record.error = { code: error.code, message: error.message }
        if (outcome.usage) record.usage = outcome.usage
        this.release(live)
        if (record.agentId !== undefined) this.depthOfAgent.delete(record.agentId)
        this.append(session, 'subagent/finished', {
          id: link.id,
          status: record.status as 'completed' | 'failed' | 'cancelled',
          text: record.text,
          ...(record.error ? { error: record.error } : {}),
          ...(record.usage ? { usage: record.usage } : {}),
        })
        try {
          await child.dispose()
        } catch (error) {
          this.home.logger('subagent').warn('disposing subagent %s failed: %s', link.id, describe(error))
        }
        try {
          await lease?.close()
        } catch (error) {
          this.home.logger('subagent').warn('closing the world of subagent %s failed: %s', link.id, describe(error))
        }
        const final = snapshot(record)
        try {
          this.home.emit('subagent/finished', final)
        } finally {
          settle(final)
        }
      })
    return { record: snapshot(record), finished: live.finished }
  }

  /** `start()` and wait for the end of the child's run. */
  async run(options: StartSubagentOptions): Promise<SubagentRecord> {
    const started = await this.start(options)
    return started.finished
  }

  /**
   * The children of a parent session: live ones, and those its log records (a resumed parent's
   * children from before; one with no `subagent/finished` is `interrupted`). Oldest first.
   */
  list(parent: Agent | Session | string): SubagentRecord[] {
    const session = this.sessionOf(parent)
    const sessionId = typeof parent === 'string' ? parent : session?.id
    if (sessionId === undefined) return []
    const live = this.liveByParent.get(sessionId)
    const byId = new Map<string, SubagentRecord>()
    for (const event of session?.events ?? []) {
      if (event.type === 'subagent/started') {
        const d = event.data
        byId.set(d.id, {
          id: d.id,
          provider: d.provider,
          parentSessionId: sessionId,
          parentAgentId: '',
          depth: d.depth,
          description: d.description,
          background: d.background,
          status: 'interrupted',
          startedAt: event.time,
          ...(d.callId !== undefined ? { callId: d.callId } : {}),
          ...(d.sessionId !== undefined ? { sessionId: d.sessionId } : {}),
          ...(d.agentId !== undefined ? { agentId: d.agentId } : {}),
        })
      } else if (event.type === 'subagent/report') {
        const known = byId.get(event.data.id)
        if (known) (known.reports ??= []).push(event.data.message)
      } else if (event.type === 'subagent/finished') {
        const known = byId.get(event.data.id)
        if (!known) continue
        const d = event.data
        Object.assign(
          known,
          { status: d.status, text: d.text, finishedAt: event.time },
          d.error ? { error: d.error } : {},
          d.usage ? { usage: d.usage } : {},
        )
      }
    }
    for (const [id, entry] of live ?? []) byId.set(id, snapshot(entry.record))
    return [...byId.values()].sort((a, b) => a.startedAt - b.startedAt)
  }

  /** One child of a parent session, or undefined. */
  get(parent: Agent | Session | string, id: string): SubagentRecord | undefined {
    return this.list(parent).find((record) => record.id === id)
  }

  /** Delivers a message into a running child of `parent`. */
  send(parent: Agent | Session | string, id: string, message: string): SubagentRecord {
    if (typeof message !== 'string' || message.trim() === '')
      throw new SubagentError('INVALID_REQUEST', 'message must be a non-empty string')
    const live = this.runningChild(parent, id)
    if (!live.child?.send)
      throw new SubagentError(
        'NOT_SUPPORTED',
        `subagent ${id} (provider "${live.record.provider}") cannot receive messages while it runs`,
      )
    live.child.send(message)
    return snapshot(live.record)
  }

  /** Stops a running child of `parent`; its run ends `cancelled`. */
  interrupt(parent: Agent | Session | string, id: string): SubagentRecord {
    const live = this.runningChild(parent, id)
    this.stop(live, 'INTERRUPTED', 'interrupted by its parent')
    return snapshot(live.record)
  }

  /** Resolves with the final record once a live child finished; undefined for an unknown id. */
  wait(parent: Agent | Session | string, id: string): Promise<SubagentRecord> | undefined {
    const sessionId = this.sessionIdOf(parent)
    const live = sessionId === undefined ? undefined : this.liveByParent.get(sessionId)?.get(id)
    return live?.finished
  }

  /**
   * A running in-process child sends its parent a message: logged in the parent's session as
   * `subagent/report`, kept on the record, and announced as the `subagent/report` event (surfaces
   * and the tools deliver it). `child` is the child agent (or its id).
   */
  report(child: Agent | string, message: string): SubagentRecord {
    if (typeof message !== 'string' || message.trim() === '')
      throw new SubagentError('INVALID_REQUEST', 'message must be a non-empty string')
    if (message.length > MAX_REPORT_CHARS)
      throw new SubagentError(
        'INVALID_REQUEST',
        `a report is at most ${MAX_REPORT_CHARS} characters (this one has ${message.length}); shorten it`,
      )
    const agentId = typeof child === 'string' ? child : child.id
    // By the child's own link (its session's first event), so a report in the child's very first
    // step finds it even before start() has recorded its agent id.
    const agent = typeof child === 'string' ? this.home.agents.get(child) : child
    const first = agent?.session.events[0]
    const linked =
      first?.type === 'subagent/link'
        ? this.liveByParent.get(first.data.parentSessionId)?.get(first.data.id)
        : undefined
    const live =
      linked && this.running.has(linked) ? linked : [...this.running].find((entry) => entry.record.agentId === agentId)
    if (!live)
      throw new SubagentError('NOT_A_SUBAGENT', 'only a running subagent can report to a parent; this agent has none')
    const session = this.sessionOf(live.parent)
    ;(live.record.reports ??= []).push(message)
    if (session) this.append(session, 'subagent/report', { id: live.record.id, message })
    const record = snapshot(live.record)
    this.home.emit('subagent/report', record, message)
    return record
  }

  /** Resolves when a freed slot is handed to this request; rejects with `CANCELLED` when `signal` aborts first. */
  private slot(signal: AbortSignal | undefined): Promise<void> {
    const cancelled = () => new SubagentError('CANCELLED', 'the request was cancelled while it waited for a slot')
    if (signal?.aborted) return Promise.reject(cancelled())
    const waiting = this.waiting
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        wake: () => {
          signal?.removeEventListener('abort', onAbort)
          resolve()
        },
        fail: (error: SubagentError) => {
          signal?.removeEventListener('abort', onAbort)
          reject(error)
        },
      }
      const onAbort = () => {
        const at = waiting.indexOf(waiter)
        if (at >= 0) waiting.splice(at, 1)
        reject(cancelled())
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      waiting.push(waiter)
    })
  }

  /** Frees a child's slot and hands it to the oldest waiting request. */
  private release(live: Live): void {
    if (this.running.delete(live)) this.passOn()
  }

  /** A slot is free: hand it to the oldest waiting request, if any. */
  private passOn(): void {
    const next = this.waiting.shift()
    if (!next) return
    this.handedOver++
    next.wake()
  }

  private runningChild(parent: Agent | Session | string, id: string): Live {
    const sessionId = this.sessionIdOf(parent)
    const live = sessionId === undefined ? undefined : this.liveByParent.get(sessionId)?.get(id)
    if (live && live.record.status === 'running' && !live.stoppedBy) return live
    if (live || this.get(parent, id))
      throw new SubagentError('AGENT_FINISHED', `subagent ${id} has already finished; start a new one instead`)
    const known = this.list(parent).map((r) => r.id)
    throw new SubagentError(
      'UNKNOWN_AGENT',
      `no subagent "${id}" was started by this agent${known.length ? ` (known: ${known.join(', ')})` : ''}`,
    )
  }

  private stop(live: Live, code: string, message: string): void {
    if (live.stoppedBy || live.record.status !== 'running') return
    live.stoppedBy = { code, message }
    try {
      live.child?.abort(message)
    } catch (error) {
      this.home.logger('subagent').warn('aborting subagent %s failed: %s', live.record.id, describe(error))
    }
  }

  private nextId(session: Session): string {
    let n = this.counters.get(session.id)
    if (n === undefined) {
      n = 0
      for (const event of session.events) if (event.type === 'subagent/started') n++
    }
    n++
    this.counters.set(session.id, n)
    return `sub-${n}`
  }

  private childrenOf(sessionId: string): Map<string, Live> {
    let map = this.liveByParent.get(sessionId)
    if (!map) this.liveByParent.set(sessionId, (map = new Map()))
    return map
  }

  private sessionOf(parent: Agent | Session | string): Session | undefined {
    if (typeof parent === 'string') return this.home.sessions.get(parent)
    return 'session' in parent ? parent.session : parent
  }

  private sessionIdOf(parent: Agent | Session | string): string | undefined {
    return typeof parent === 'string' ? parent : this.sessionOf(parent)?.id
  }

  private append<K extends 'subagent/started' | 'subagent/finished' | 'subagent/report'>(
    session: Session,
    type: K,
    data: import('@dsh/session').SessionEventMap[K],
  ): void {
    try {
      session.append(type, data)
    } catch (error) {
      // A throwing session listener: the event is logged anyway; report it and carry on.
      this.home.logger('subagent').warn('%s', describe(error))
    }
  }
}
