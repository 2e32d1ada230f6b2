// The session host: many sessions of one process behind `ctx.api`. A session's agent is created
// on first use (create, prompt, stream, ...), resumed from persistence when it is not in memory,
// and disposed after `idleMs` without a turn or a stream client. Clients see the session log
// (SSE id = seq) plus the pending approvals and questions of the session.
import { join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent, ModelSelection } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type {} from '@dsh/session-persistence' // declares ctx.sessionPersistence
import type { ApprovalAnswer } from '@dsh/user-approval'
import type { QuestionAnswer } from '@dsh/user-questions'
import { resolveDshHome } from '@dsh/home-paths'
import type * as P from '@dsh/web-protocol'
import { ApiError, type SessionRow, type SessionStatus } from '@dsh/web-protocol'
import type { StreamClient } from './gateway.ts'
import { fileBackend, MetaStore, storageBackend } from './meta.ts'
import { SessionIndex } from './index-rows.ts'
import type {} from '@dsh/llm'
import { chooseModel, ModelChoiceError, openSession, PendingAnswers, SessionOpenError } from '@dsh/surface-kit'
import type {} from '@dsh/commands'
import type {} from '@dsh/agent-default-model' // declares ctx.agentDefaultModel
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/brand' // declares the app/ready and app/stopping events
import {
  approvalFrame,
  frameOf,
  framesOf,
  humanSource,
  type InterruptedWork,
  isEmptyWork,
  type Live,
  listRowFields,
  notFound,
  questionFrame,
  type QueuedPrompt,
  toWireModel,
} from './host-wire.ts'
import { SessionRoutes } from './host-routes.ts'
import { bridgeRequests } from './host-requests.ts'
import { StoredHistory } from './stored-history.ts'

export type { InterruptedWork } from './host-wire.ts'

declare module '@dsh/session' {
  interface SessionEventMap {
    /**
     * Work the web host held only in memory when it stopped (`stopped`, logged during the graceful
     * stop) or died (`crashed`, logged when the session is next loaded): prompts queued behind a
     * turn that never ran, and approvals and questions left unanswered (their turn ended
     * cancelled). For clients to show ("not sent: ..."); no message for the model.
     */
    'web/interrupted': InterruptedWork & { reason: 'stopped' | 'crashed' }
  }
}

export interface SessionHostConfig {
  /** A live session with no turn, no queued prompt and no stream client is unloaded after this long. */
  idleMs: number
  /** Per-session metadata file (archived, model, permission mode). Default `$DSH_HOME/web/sessions.json`. */
  metaFile?: string
  /** Most model requests per turn; default: the agent-loop row. */
  maxSteps?: number
  /** Re-read the stored session summaries for `sessions.list` when the index is older than this (ms). */
  listRescanMs: number
}

export const SessionHostConfig: Schema<SessionHostConfig> = Schema.object({
  idleMs: Schema.natural()
    .default(10 * 60_000)
    .description('Unload a live session idle this long (ms).'),
  metaFile: Schema.string().description('Per-session metadata file. Default: $DSH_HOME/web/sessions.json.'),
  maxSteps: Schema.natural().min(1).description('Most model requests per turn.'),
  listRescanMs: Schema.natural()
    .default(30_000)
    .description('Re-read stored session summaries when the list index is older than this (ms).'),
})

// Optional services, read with ctx.get() when used: typed by each service's own declaration
// (the packages are dependencies for their types), except workspaces: @dsh/workspace's tests
// depend on this package, so its shape is read here by what sessions.create uses.
type Optional = Pick<
  Context,
  | 'llm'
  | 'agentDefaultModel'
  | 'durableSessions'
  | 'sessionPersistence'
  | 'approval'
  | 'userQuestions'
  | 'permissionPresets'
  | 'commands'
> & {
  workspaces?: { get(id: string): unknown }
}

export const name = 'api-gateway-sessions'
export const inject = ['api', 'agents', 'sessions']

export function apply(ctx: Context, config: SessionHostConfig): void {
  new SessionHost(ctx, config).start()
}

/**
 * The session state of the web host: the live sessions (opened on first use, resumed from
 * persistence, unloaded when idle), their queues, stream clients and pending requests, and the
 * list index. The methods clients call are registered by SessionRoutes (host-routes.ts), which
 * reads the members below; nothing outside this package does.
 */
export class SessionHost {
  readonly live = new Map<string, Live>()
  private readonly opening = new Map<string, Promise<Live>>()
  readonly unloading = new Map<string, Promise<void>>()
  readonly approvals = new PendingAnswers<ApprovalAnswer>()
  readonly questions = new PendingAnswers<Record<string, QuestionAnswer>>()
  readonly meta: MetaStore
  /** Rows of sessions.list: stored summaries read once (and rescanned), live ones kept current. */
  readonly index: SessionIndex
  /** Events of stored sessions that are not live, for `sessions.history`. */
  readonly history = new StoredHistory()
  private stopped = false
  private readonly offAnswerers: Array<() => void> = []
  readonly ready: Promise<void>

  constructor(
    readonly ctx: Context,
    readonly config: SessionHostConfig,
  ) {
    // An explicit metaFile wins; else the storage hub when it is mounted; else the default file.
    const storage = ctx.get('storage' as never) as Parameters<typeof storageBackend>[0] | undefined
    this.meta = new MetaStore(
      config.metaFile === undefined && storage
        ? storageBackend(storage)
        : fileBackend(config.metaFile ?? join(resolveDshHome(), 'web', 'sessions.json')),
    )
    this.ready = this.meta.load().then(() => {
      if (this.meta.warning) ctx.logger('api-gateway').warn(this.meta.warning)
    })
    this.index = new SessionIndex(
      async () => (await this.opt('durableSessions')?.list()) ?? [],
      config.listRescanMs ?? 30_000,
    )
  }

  opt<K extends keyof Optional>(key: K): Optional[K] | undefined {
    return this.ctx.get(key as never) as Optional[K] | undefined
  }

  /** The host is stopping (or stopped): no new session, turn or request. */
  get stopping(): boolean {
    return this.stopped
  }

  start(): void {
    const ctx = this.ctx
    // `web/interrupted` is logged: persistence must know it, or such sessions would not load.
    ctx.inject(['sessionPersistence'], (inner) => {
      inner.sessionPersistence.registerEventType('web/interrupted')
    })
    new SessionRoutes(this).register()

    bridgeRequests(this, this.offAnswerers)
    // The graceful stop of a dsh app: turns are cancelled and their ends logged while the
    // persistence rows are still active. Unloading the plugin alone stops too (not awaited).
    ctx.on('app/stopping', () => this.stop())
    // Read the stored summaries once the app is up, so the first sessions.list answers from memory.
    ctx.on('app/ready', () => void this.ready.then(() => this.index.rebuild()).catch(() => {}))
    ctx.effect(() => () => this.stop(), 'api-gateway: stop the session host')
  }

  /** Cancels running turns (awaited), fails pending approvals/questions closed, disposes agents. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    // What only memory holds (queued prompts, unanswered requests) is reported in each log below.
    const interrupted = new Map([...this.live.values()].map((live) => [live, this.pendingOf(live)]))
    this.approvals.failAll(new Error('the web host is stopping'))
    this.questions.failAll(new Error('the web host is stopping'))
    for (const off of this.offAnswerers.splice(0)) off()
    const lives = [...this.live.values()]
    for (const live of lives) {
      live.queue.length = 0
      live.agent.abort('the web host is stopping')
    }
    await Promise.all(lives.map((live) => live.agent.idle().catch(() => {})))
    for (const live of lives) {
      const work = interrupted.get(live)
      if (!isEmptyWork(work)) {
        try {
          live.session.append('web/interrupted', { reason: 'stopped', ...work! })
        } catch (error) {
          this.ctx
            .logger('api-gateway')
            .warn(`session ${live.id}: cannot log the interrupted work: ${(error as Error).message}`)
        }
      }
      if (live.pendingKey) void this.meta.update(live.id, { pending: undefined }).catch(() => {})
      if (live.idleTimer) clearTimeout(live.idleTimer)
      this.flushFrames(live)
      for (const client of [...live.clients]) client.close()
      live.off()
      await live.agent.dispose().catch(() => {})
      await this.opt('durableSessions')
        ?.checkpoint(live.id)
        .catch(() => {})
    }
    this.live.clear()
    await this.meta.flush()
  }

  // ---- sessions ----

  async open(sessionId: string): Promise<Live> {
    if (this.stopping) throw new ApiError('UNAVAILABLE', 'the web host is stopping')
    const live = this.live.get(sessionId)
    if (live) return live
    let opening = this.opening.get(sessionId)
    if (!opening) {
      opening = this.load(sessionId).finally(() => this.opening.delete(sessionId))
      this.opening.set(sessionId, opening)
    }
    return opening
  }

  private async load(sessionId: string): Promise<Live> {
    await this.ready
    // Live from here: history pages come from the session itself.
    this.history.forget(sessionId)
    if (this.meta.get(sessionId).removed) throw notFound(sessionId)
    await this.unloading.get(sessionId)
    let session: Session
    try {
      session = await openSession(this.ctx.sessions, this.opt('durableSessions'), sessionId)
    } catch (error) {
      if (!(error instanceof SessionOpenError)) throw error
      if (error.code === 'LOCKED')
        throw new ApiError('SESSION_LOCKED', `session ${sessionId} is open in another process: ${error.detail}`)
      if (error.code === 'FAILED') throw new ApiError('INTERNAL', `cannot load session ${sessionId}: ${error.detail}`)
      throw notFound(sessionId)
    }
    const meta = this.meta.get(sessionId)
    // The last host died with work only it held: say so in the log, once.
    if (!isEmptyWork(meta.pending)) {
      try {
        session.append('web/interrupted', { reason: 'crashed', ...meta.pending! })
        await this.meta.update(sessionId, { pending: undefined })
      } catch (error) {
        this.ctx
          .logger('api-gateway')
          .warn(`session ${sessionId}: cannot log the interrupted work: ${(error as Error).message}`)
      }
    }
    let model: ModelSelection | undefined
    if (meta.model)
      model = await this.resolveModel(`${meta.model.provider}/${meta.model.model}`, meta.model.reasoningEffort).catch(
        () => undefined,
      )
    const header = session.last('request/header')
    if (!model && header)
      model = await this.resolveModel(`${header.data.provider}/${header.data.model}`).catch(() => undefined)
    model ??= await this.resolveModel(undefined)
    if (meta.permissionMode) {
      try {
        this.opt('permissionPresets')?.set(sessionId, meta.permissionMode)
      } catch (error) {
        this.ctx
          .logger('api-gateway')
          .warn(`session ${sessionId}: stored permission mode ignored: ${(error as Error).message}`)
      }
    }
    const agent = this.ctx.agents.create({
      cwd: session.cwd,
      session,
      model,
      ...(this.config.maxSteps ? { maxSteps: this.config.maxSteps } : {}),
    })
    return this.adopt(agent)
  }

  adopt(agent: Agent): Live {
    const session = agent.session
    const live: Live = {
      id: session.id,
      agent,
      session,
      queue: [],
      driving: false,
      approvals: new Map(),
      questions: new Map(),
      clients: new Set(),
      status: 'idle',
      off: () => {},
      row: this.index.track(session.id, session.cwd, session.events),
      pendingKey: '',
    }
    live.off = session.subscribe((event) => {
      this.index.apply(live.row, event)
      const frame = frameOf(live, event)
      let queued = false
      for (const client of live.clients) {
        if (frame && client.replay) queued = true
        else client.send(undefined, event, event.seq)
      }
      if (queued) this.queueFrames(live, event.seq)
      if (event.type === 'turn/start' || event.type === 'turn/end') this.refreshStatus(live)
    })
    this.live.set(live.id, live)
    this.scheduleIdle(live)
    return live
  }

  statusOf(live: Live): SessionStatus {
    if (live.approvals.size > 0 || live.questions.size > 0) return 'waiting'
    if (live.driving || live.agent.status === 'running') return 'running'
    return 'idle'
  }

  /** The work of `live` that only memory holds. */
  private pendingOf(live: Live): InterruptedWork {
    return {
      queued: live.queue.map((p) => p.text),
      approvals: [...live.approvals.values()].map((r) => ({ requestId: String(r.id), kind: r.kind, title: r.title })),
      questions: [...live.questions.values()].map((r) => ({
        requestId: String(r.id),
        questions: r.questions.map((q) => q.question),
      })),
    }
  }

  /**
   * Keeps the in-memory work in the session metadata, so a host that dies with it still reports
   * it (as `web/interrupted`, reason `crashed`) when the session is next loaded. Written only
   * when it changed.
   */
  notePending(live: Live): void {
    if (this.stopping) return
    const work = this.pendingOf(live)
    const key = isEmptyWork(work) ? '' : JSON.stringify(work)
    if (key === live.pendingKey) return
    live.pendingKey = key
    this.meta
      .update(live.id, { pending: key ? work : undefined })
      .catch((error: Error) => this.warn(`session ${live.id}: cannot keep the queued work: ${error.message}`))
  }

  refreshStatus(live: Live): void {
    this.notePending(live)
    const status = this.statusOf(live)
    if (status === live.status) return
    live.status = status
    const frame = { sessionId: live.id, status, queued: live.queue.length }
    this.broadcast(live, 'status', frame)
    this.publishHost({ type: 'session/status', ...frame })
  }

  broadcast(live: Live, event: string, data: unknown): void {
    // State frames follow the log frames appended before them.
    this.flushFrames(live)
    for (const client of live.clients) client.send(event, data)
  }

  /** Notes that log frames from `seq` on wait for the clients; written at the end of this loop turn. */
  private queueFrames(live: Live, seq: number): void {
    if (live.pendingFrom !== undefined) return
    live.pendingFrom = seq
    live.flushTimer = setImmediate(() => this.flushFrames(live))
  }

  /** Writes the waiting log frames to every client that takes frames: one shared slice, one write each. */
  flushFrames(live: Live): void {
    const from = live.pendingFrom
    if (from === undefined) return
    live.pendingFrom = undefined
    if (live.flushTimer) clearImmediate(live.flushTimer)
    live.flushTimer = undefined
    const frames = live.frames
    if (!frames || from >= frames.length) return
    // The same slice for every client; one that has fallen behind gets what fits, then resync.
    for (const client of [...live.clients]) client.replay?.(frames, from - 1)
  }

  changed(live: Live): SessionRow {
    const row = this.rowOf(live)
    this.publishHost({ type: 'session/changed', session: row })
    return row
  }

  rowOf(live: Live): SessionRow {
    const { row } = live
    const meta = this.meta.get(live.id)
    const presets = this.opt('permissionPresets')
    return {
      ...listRowFields(row),
      archived: meta.archived === true,
      status: this.statusOf(live),
      queued: live.queue.length,
      model: toWireModel(live.agent.model),
      ...(presets ? { permissionMode: presets.current(live.id).name } : {}),
    }
  }

  scheduleIdle(live: Live): void {
    if (live.idleTimer) clearTimeout(live.idleTimer)
    live.idleTimer = undefined
    if (
      this.stopping ||
      live.clients.size > 0 ||
      live.driving ||
      live.queue.length > 0 ||
      live.agent.status === 'running'
    )
      return
    live.idleTimer = setTimeout(() => void this.unload(live), this.config.idleMs)
    live.idleTimer.unref?.()
  }

  /** Drops an idle session's agent; a persisted session also leaves memory (it resumes on use). */
  async unload(live: Live): Promise<void> {
    if (this.live.get(live.id) !== live || live.clients.size > 0 || live.driving || live.agent.status === 'running')
      return
    if (live.approvals.size > 0 || live.questions.size > 0) return
    // A plugin that needs the session live (a pending reminder) keeps it; ask again later.
    if (this.ctx.bail('session/keep-alive', live.agent.session)) {
      this.scheduleIdle(live)
      return
    }
    this.live.delete(live.id)
    // A use that arrives meanwhile waits for this to finish, then loads the session again.
    const work = (async () => {
      live.off()
      await live.agent.dispose().catch(() => {})
      const durable = this.opt('durableSessions')
      if (durable?.isPersisted(live.id)) {
        await durable.checkpoint(live.id).catch(() => {})
        // Release the log's writer lock before the session leaves memory, so a resume right
        // after this finds it closed (durable sessions would close it only in the background).
        await this.opt('sessionPersistence')
          ?.close(live.id)
          .catch(() => {})
        this.ctx.sessions.delete(live.id)
      }
      this.refreshStatusStored(live.id)
    })()
    this.unloading.set(live.id, work)
    await work.finally(() => this.unloading.delete(live.id))
  }

  private refreshStatusStored(sessionId: string): void {
    this.publishHost({ type: 'session/status', sessionId, status: 'stored', queued: 0 })
  }

  /** Host stream events stop with the host (a turn settling during unload publishes nothing). */
  publishHost(event: P.HostStreamEvent): void {
    if (this.stopping) return
    this.ctx.api.publishHost(event)
  }

  warn(message: string): void {
    if (!this.stopping) this.ctx.logger('api-gateway').warn(message)
  }

  /** Runs `prompt` as a turn, then the queued prompts one turn each, until the queue is empty. */
  drive(live: Live, prompt: QueuedPrompt): void {
    if (live.idleTimer) clearTimeout(live.idleTimer)
    live.driving = true
    this.refreshStatus(live)
    const next = async () => {
      let current: QueuedPrompt | undefined = prompt
      while (current !== undefined && !this.stopping && this.live.get(live.id) === live) {
        await live.agent
          .send(current.text, { source: humanSource(current) })
          .catch((error: Error) => this.warn(`session ${live.id}: turn failed: ${error.message}`))
        await live.agent.idle().catch(() => {})
        current = this.meta.get(live.id).archived ? undefined : live.queue.shift()
      }
      live.driving = false
      if (this.stopping) return
      this.refreshStatus(live)
      this.scheduleIdle(live)
    }
    void next()
  }

  /** Throws SESSION_NOT_FOUND unless the session is live, in memory or stored. */
  async exists(sessionId: string): Promise<void> {
    if (this.meta.get(sessionId).removed) throw notFound(sessionId)
    if (this.live.has(sessionId) || this.ctx.sessions.get(sessionId)) return
    const persistence = this.opt('sessionPersistence')
    if (!persistence) throw notFound(sessionId)
    try {
      await persistence.readFrom(sessionId, Number.MAX_SAFE_INTEGER)
    } catch {
      throw notFound(sessionId)
    }
  }

  async resolveModel(spec: string | undefined, effort?: P.ReasoningEffort): Promise<ModelSelection> {
    try {
      return await chooseModel(this.opt('llm'), spec, this.opt('agentDefaultModel')?.get(), effort)
    } catch (error) {
      if (!(error instanceof ModelChoiceError)) throw error
      if (error.code === 'NO_DEFAULT_MODEL')
        throw new ApiError('INVALID_PARAMS', 'no default model is configured; pass model "provider/model"', {
          field: 'model',
        })
      const message =
        error.code === 'NO_MODEL_SERVICE' ? `model: ${JSON.stringify(spec)}: ${error.detail}` : `model: ${error.detail}`
      throw new ApiError('MODEL_NOT_FOUND', message, { field: 'model' })
    }
  }

  // ---- streams ----

  async attach(sessionId: string, client: StreamClient, after: number): Promise<void> {
    const live = await this.open(sessionId)
    if (live.idleTimer) clearTimeout(live.idleTimer)
    if (after >= live.session.length) {
      // The client holds events this log does not have (another host, a replaced log).
      client.resync(`the client is at seq ${after} but session ${sessionId} ends at ${live.session.length - 1}`)
      this.scheduleIdle(live)
      return
    }
    // Replay and subscribe in one synchronous stretch: appends are synchronous, so nothing can
    // land between the last replayed event and the first live one. The replay goes out as one
    // write where the client can batch.
    // Frames still waiting go to the clients already attached first: the new one gets them in
    // its replay, and never twice.
    this.flushFrames(live)
    let open = true
    if (client.replay && client.writeFrame) {
      open = client.replay(framesOf(live), after)
    } else {
      const replay = () => {
        for (const event of live.session.slice(after + 1)) {
          if (!client.send(undefined, event, event.seq)) return void (open = false)
        }
      }
      if (client.batch) client.batch(replay)
      else replay()
    }
    if (!open) return
    live.clients.add(client)
    client.onClose = () => {
      live.clients.delete(client)
      this.scheduleIdle(live)
    }
    client.send('status', { sessionId: live.id, status: this.statusOf(live), queued: live.queue.length })
    for (const request of live.approvals.values()) client.send('approval', approvalFrame(request))
    for (const request of live.questions.values()) client.send('question', questionFrame(request))
  }
}
