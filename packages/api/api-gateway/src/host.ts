// The session host: many sessions of one process behind `ctx.api`. A session's agent is created
// on first use (create, prompt, stream, ...), resumed from persistence when it is not in memory,
// and disposed after `idleMs` without a turn or a stream client. Clients see the session log
// (SSE id = seq) plus the pending approvals and questions of the session.
import { stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent, ModelSelection } from '@dsh/agent'
import type { AnySessionEvent, Session } from '@dsh/session'
import type {} from '@dsh/session-persistence' // declares ctx.sessionPersistence
import type { ApprovalAnswer, ApprovalRequest } from '@dsh/user-approval'
import type { QuestionAnswer, QuestionsRequest } from '@dsh/user-questions'
import { resolveDshHome } from '@dsh/home-paths'
import * as P from '@dsh/web-protocol'
import { ApiError, type SessionRow, type SessionStatus, type WireEvent, type WireModel } from '@dsh/web-protocol'
import type { StreamClient } from './gateway.ts'
import { FrameLog } from './sse.ts'
import { fileBackend, MetaStore, storageBackend } from './meta.ts'
import { SessionIndex, type IndexRow } from './index-rows.ts'
import type {} from '@dsh/llm'
import { chooseModel, ModelChoiceError } from '@dsh/surface-kit'
import type {} from '@dsh/commands'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/brand' // declares the app/ready and app/stopping events

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

/** What a `web/interrupted` event reports (also kept in the session metadata while pending). */
export interface InterruptedWork {
  queued: string[]
  approvals: Array<{ requestId: string; kind: string; title: string }>
  questions: Array<{ requestId: string; questions: string[] }>
}

const isEmptyWork = (w: InterruptedWork | undefined) =>
  !w || (!w.queued.length && !w.approvals.length && !w.questions.length)

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

interface Pending<T> {
  sessionId: string
  resolve(value: T): void
  reject(error: Error): void
}

interface Live {
  id: string
  agent: Agent
  session: Session
  queue: string[]
  /** The host is driving a turn (from send until the agent is idle again). */
  driving: boolean
  approvals: Map<string, ApprovalRequest>
  questions: Map<string, QuestionsRequest>
  clients: Set<StreamClient>
  status: SessionStatus
  off(): void
  idleTimer?: NodeJS.Timeout
  /** The session's row of the list index, kept current by its events. */
  row: IndexRow
  /** JSON of the in-memory work last written to the metadata (see notePending). */
  pendingKey: string
  /**
   * The SSE frames of the log, built at the first stream client and then kept current by the
   * session's events: each event is serialised once for every client, live or replayed.
   */
  frames?: FrameLog
  /**
   * The first seq appended since the clients were last written: log frames appended in one turn
   * of the event loop (a burst of model deltas) go to each client as one write at its end.
   */
  pendingFrom?: number
  flushTimer?: NodeJS.Immediate
}

// Optional services, read with ctx.get() when used: typed by each service's own declaration
// (the packages are dependencies for their types), except the two this package does not depend on.
type Optional = Pick<
  Context,
  'llm' | 'durableSessions' | 'sessionPersistence' | 'approval' | 'userQuestions' | 'permissionPresets' | 'commands'
> & {
  agentDefaultModel?: { get(): ModelSelection }
  workspaces?: { get(id: string): unknown }
}

export const name = 'api-gateway-sessions'
export const inject = ['api', 'agents', 'sessions']

export function apply(ctx: Context, config: SessionHostConfig): void {
  new SessionHost(ctx, config).start()
}

export class SessionHost {
  private readonly live = new Map<string, Live>()
  private readonly opening = new Map<string, Promise<Live>>()
  private readonly unloading = new Map<string, Promise<void>>()
  private readonly approvals = new Map<string, Pending<ApprovalAnswer>>()
  private readonly questions = new Map<string, Pending<Record<string, QuestionAnswer>>>()
  private readonly meta: MetaStore
  /** Rows of sessions.list: stored summaries read once (and rescanned), live ones kept current. */
  readonly index: SessionIndex
  /**
   * Events of stored sessions that are not live, read once for `sessions.history` and paged from
   * memory while their log file is unchanged (see storedEvents). A few sessions, least recent out.
   */
  private readonly stored = new Map<string, { key: string; events: readonly AnySessionEvent[] }>()
  private stopping = false
  private readonly offAnswerers: Array<() => void> = []
  private ready: Promise<void>

  constructor(
    private readonly ctx: Context,
    private readonly config: SessionHostConfig,
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

  private opt<K extends keyof Optional>(key: K): Optional[K] | undefined {
    return this.ctx.get(key as never) as Optional[K] | undefined
  }

  start(): void {
    const ctx = this.ctx
    const api = ctx.api
    // `web/interrupted` is logged: persistence must know it, or such sessions would not load.
    ctx.inject(['sessionPersistence'], (inner) => {
      inner.sessionPersistence.registerEventType('web/interrupted')
    })
    api.provideSessionStreams({ attach: (id, client, after) => this.attach(id, client, after) })
    api.register(P.sessionsList, (p) => this.list(p))
    api.register(P.sessionsCreate, (p) => this.create(p))
    api.register(P.sessionsHistory, (p) => this.history(p))
    api.register(P.sessionsPrompt, (p) => this.prompt(p))
    api.register(P.sessionsCancel, (p) => this.cancel(p))
    api.register(P.sessionsRename, async (p) => {
      const live = await this.open(p.sessionId)
      live.session.append('session/title', { title: p.title.trim(), source: 'user' })
      return { session: this.changed(live) }
    })
    api.register(P.sessionsArchive, async (p) => {
      await this.ready
      const live = await this.open(p.sessionId)
      await this.meta.update(p.sessionId, { archived: p.archived })
      if (p.archived) live.queue.length = 0
      this.notePending(live)
      return { session: this.changed(live) }
    })
    api.register(P.sessionsRemove, (p) => this.remove(p.sessionId))
    api.register(P.sessionsSetModel, async (p) => {
      const live = await this.open(p.sessionId)
      const model = await this.resolveModel(p.model, p.reasoningEffort)
      live.agent.model = model
      const wire = toWireModel(model)
      await this.meta.update(p.sessionId, { model: wire })
      this.changed(live)
      return { model: wire }
    })
    api.register(P.sessionsSetPermissionMode, async (p) => {
      const presets = this.opt('permissionPresets')
      if (!presets)
        throw new ApiError('UNAVAILABLE', 'sessions.setPermissionMode: no permission-presets row is mounted')
      const live = await this.open(p.sessionId)
      try {
        presets.set(p.sessionId, p.mode)
      } catch (error) {
        throw new ApiError('INVALID_PARAMS', `sessions.setPermissionMode: mode: ${(error as Error).message}`, {
          field: 'mode',
        })
      }
      await this.meta.update(p.sessionId, { permissionMode: p.mode })
      this.changed(live)
      return { mode: p.mode }
    })
    api.register(P.sessionsFork, (p) => this.fork(p))
    api.register(P.approvalsRespond, (p) => {
      const pending = this.approvals.get(p.requestId)
      if (!pending)
        throw new ApiError(
          'REQUEST_NOT_FOUND',
          `approvals.respond: no pending approval request ${JSON.stringify(p.requestId)} (already answered, cancelled, or never asked)`,
          { field: 'requestId' },
        )
      pending.resolve({
        decision: p.decision,
        ...(p.reason !== undefined ? { reason: p.reason } : {}),
        ...(p.message !== undefined ? { message: p.message } : {}),
      })
      return {}
    })
    api.register(P.questionsRespond, (p) => {
      const pending = this.questions.get(p.requestId)
      if (!pending)
        throw new ApiError(
          'REQUEST_NOT_FOUND',
          `questions.respond: no pending question request ${JSON.stringify(p.requestId)} (already answered, cancelled, or never asked)`,
          { field: 'requestId' },
        )
      pending.resolve(p.answers as Record<string, QuestionAnswer>)
      return {}
    })
    api.register(P.llmProviders, () => {
      const fallback = this.opt('agentDefaultModel')?.get()
      return {
        providers: this.opt('llm')?.listProviders() ?? [],
        ...(fallback ? { default: toWireModel(fallback) } : {}),
      }
    })
    api.register(P.llmModels, async (p) => {
      const llm = this.opt('llm')
      if (!llm?.listProviders().includes(p.provider)) {
        throw new ApiError(
          'INVALID_PARAMS',
          `llm.models: provider: no provider ${JSON.stringify(p.provider)}; registered: ${llm?.listProviders().join(', ') || '(none)'}`,
          { field: 'provider' },
        )
      }
      return { models: (await llm.listModels(p.provider)).map((m) => ({ ...m, id: m.id })) }
    })
    api.register(P.commandsList, () => ({ commands: this.opt('commands')?.list() ?? [] }))
    api.register(P.commandsExecute, async (p, call) => {
      const commands = this.opt('commands')
      if (!commands) throw new ApiError('UNAVAILABLE', 'commands.execute: no commands row is mounted')
      const live = await this.open(p.sessionId)
      const result = await commands.dispatch(live.agent, p.line, { signal: call.signal })
      if (!result.handled)
        throw new ApiError(
          'INVALID_PARAMS',
          `commands.execute: line: ${JSON.stringify(p.line.slice(0, 40))} is not a command line (/name args)`,
          { field: 'line' },
        )
      return result.ok
        ? { ok: true, name: result.name, ...(result.output !== undefined ? { output: result.output } : {}) }
        : { ok: false, name: result.name, error: result.error }
    })

    const approval = this.opt('approval')
    if (approval) {
      this.offAnswerers.push(
        approval.registerAnswerer({
          name: 'web',
          accepts: (request) => request.sessionId !== undefined && this.live.has(request.sessionId),
          answer: (request, { signal }) =>
            this.ask(
              this.approvals,
              request.sessionId!,
              String(request.id),
              signal,
              (live) => {
                live.approvals.set(String(request.id), request)
                this.broadcast(live, 'approval', approvalFrame(request))
              },
              (live, outcome) => {
                live.approvals.delete(String(request.id))
                this.broadcast(live, 'approval/resolved', { requestId: String(request.id), decision: outcome })
              },
            ),
        }),
      )
    }
    const questions = this.opt('userQuestions')
    if (questions) {
      this.offAnswerers.push(
        questions.registerAnswerer({
          name: 'web',
          accepts: (request) => request.sessionId !== undefined && this.live.has(request.sessionId),
          answer: (request, { signal }) =>
            this.ask(
              this.questions,
              request.sessionId!,
              String(request.id),
              signal,
              (live) => {
                live.questions.set(String(request.id), request)
                this.broadcast(live, 'question', questionFrame(request))
              },
              (live, outcome) => {
                live.questions.delete(String(request.id))
                this.broadcast(live, 'question/resolved', { requestId: String(request.id), status: outcome })
              },
            ),
        }),
      )
    }
    // The graceful stop of a dsh app: turns are cancelled and their ends logged while the
    // persistence rows are still active. Unloading the plugin alone stops too (not awaited).
    ctx.on('app/stopping', () => this.stop())
    // Read the stored summaries once the app is up, so the first sessions.list answers from memory.
    ctx.on('app/ready', () => void this.ready.then(() => this.index.rebuild()).catch(() => {}))
    ctx.effect(() => () => this.stop(), 'api-gateway: stop the session host')
  }

  /** Cancels running turns (awaited), fails pending approvals/questions closed, disposes agents. */
  async stop(): Promise<void> {
    if (this.stopping) return
    this.stopping = true
    // What only memory holds (queued prompts, unanswered requests) is reported in each log below.
    const interrupted = new Map([...this.live.values()].map((live) => [live, this.pendingOf(live)]))
    for (const pending of [...this.approvals.values(), ...this.questions.values()])
      pending.reject(new Error('the web host is stopping'))
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

  private async open(sessionId: string): Promise<Live> {
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
    this.stored.delete(sessionId)
    if (this.meta.get(sessionId).removed) throw notFound(sessionId)
    await this.unloading.get(sessionId)
    let session = this.ctx.sessions.get(sessionId)
    if (!session) {
      const durable = this.opt('durableSessions')
      if (!durable) throw notFound(sessionId)
      try {
        session = (await durable.resume(sessionId)).session
      } catch (error) {
        const code = (error as { code?: string }).code
        if (code === 'NOT_FOUND' || code === 'BAD_ID') throw notFound(sessionId)
        if (code === 'LOCKED')
          throw new ApiError(
            'SESSION_LOCKED',
            `session ${sessionId} is open in another process: ${(error as Error).message}`,
          )
        throw new ApiError('INTERNAL', `cannot load session ${sessionId}: ${(error as Error).message}`)
      }
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

  private adopt(agent: Agent): Live {
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

  private statusOf(live: Live): SessionStatus {
    if (live.approvals.size > 0 || live.questions.size > 0) return 'waiting'
    if (live.driving || live.agent.status === 'running') return 'running'
    return 'idle'
  }

  /** The work of `live` that only memory holds. */
  private pendingOf(live: Live): InterruptedWork {
    return {
      queued: [...live.queue],
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
  private notePending(live: Live): void {
    if (this.stopping) return
    const work = this.pendingOf(live)
    const key = isEmptyWork(work) ? '' : JSON.stringify(work)
    if (key === live.pendingKey) return
    live.pendingKey = key
    this.meta
      .update(live.id, { pending: key ? work : undefined })
      .catch((error: Error) => this.warn(`session ${live.id}: cannot keep the queued work: ${error.message}`))
  }

  private refreshStatus(live: Live): void {
    this.notePending(live)
    const status = this.statusOf(live)
    if (status === live.status) return
    live.status = status
    const frame = { sessionId: live.id, status, queued: live.queue.length }
    this.broadcast(live, 'status', frame)
    this.publishHost({ type: 'session/status', ...frame })
  }

  private broadcast(live: Live, event: string, data: unknown): void {
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
  private flushFrames(live: Live): void {
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

  private changed(live: Live): SessionRow {
    const row = this.rowOf(live)
    this.publishHost({ type: 'session/changed', session: row })
    return row
  }

  private rowOf(live: Live): SessionRow {
    const { row } = live
    const meta = this.meta.get(live.id)
    const presets = this.opt('permissionPresets')
    return {
      sessionId: live.id,
      cwd: row.cwd,
      ...(row.title !== undefined ? { title: row.title } : {}),
      ...(row.firstPrompt !== undefined ? { firstPrompt: row.firstPrompt } : {}),
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      turns: row.turns,
      events: row.events,
      archived: meta.archived === true,
      status: this.statusOf(live),
      queued: live.queue.length,
      model: toWireModel(live.agent.model),
      ...(presets ? { permissionMode: presets.current(live.id).name } : {}),
    }
  }

  private scheduleIdle(live: Live): void {
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
  private async unload(live: Live): Promise<void> {
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
  private publishHost(event: P.HostStreamEvent): void {
    if (this.stopping) return
    this.ctx.api.publishHost(event)
  }

  private warn(message: string): void {
    if (!this.stopping) this.ctx.logger('api-gateway').warn(message)
  }

  private async create(p: {
    cwd?: string
    workspaceId?: string
    model?: string
    reasoningEffort?: P.ReasoningEffort
    title?: string
  }): Promise<{ session: SessionRow }> {
    if (this.stopping) throw new ApiError('UNAVAILABLE', 'the web host is stopping')
    await this.ready
    let cwd: string
    if (p.workspaceId !== undefined) {
      if (p.cwd !== undefined)
        throw new ApiError('INVALID_PARAMS', 'sessions.create: pass either cwd or workspaceId, not both', {
          field: 'cwd',
        })
      const workspaces = this.opt('workspaces')
      if (!workspaces)
        throw new ApiError('UNAVAILABLE', 'sessions.create: workspaceId: no workspace service is mounted; pass cwd')
      const workspace = (await workspaces.get(p.workspaceId)) as { path?: string } | undefined
      if (!workspace?.path)
        throw new ApiError('WORKSPACE_NOT_FOUND', `sessions.create: no workspace ${JSON.stringify(p.workspaceId)}`, {
          field: 'workspaceId',
        })
      cwd = workspace.path
    } else if (p.cwd !== undefined) {
      cwd = resolve(p.cwd)
    } else {
      throw new ApiError('INVALID_PARAMS', 'sessions.create: cwd: pass cwd (a directory) or workspaceId', {
        field: 'cwd',
      })
    }
    const info = await stat(cwd).catch(() => undefined)
    if (!info)
      throw new ApiError('NOT_A_DIRECTORY', `sessions.create: cwd: ${cwd} does not exist`, {
        field: p.workspaceId !== undefined ? 'workspaceId' : 'cwd',
      })
    if (!info.isDirectory())
      throw new ApiError('NOT_A_DIRECTORY', `sessions.create: cwd: ${cwd} is not a directory`, {
        field: p.workspaceId !== undefined ? 'workspaceId' : 'cwd',
      })
    const model = await this.resolveModel(p.model, p.reasoningEffort)
    const agent = this.ctx.agents.create({
      cwd,
      model,
      ...(this.config.maxSteps ? { maxSteps: this.config.maxSteps } : {}),
    })
    const live = this.adopt(agent)
    if (p.title?.trim()) live.session.append('session/title', { title: p.title.trim(), source: 'user' })
    // Announced before any await: a short idleMs may unload it meanwhile, and `stored` must not
    // reach the host stream before `added`.
    const row = this.rowOf(live)
    this.publishHost({ type: 'session/added', session: row })
    if (p.model !== undefined || p.reasoningEffort !== undefined)
      await this.meta.update(live.id, { model: toWireModel(model) })
    return { session: row }
  }

  private async fork(p: { sessionId: string; beforeTurn?: number }): Promise<{ session: SessionRow }> {
    const source = await this.open(p.sessionId)
    let boundary = source.session.length
    if (p.beforeTurn !== undefined) {
      const start = source.session.events.find((e) => e.type === 'turn/start' && e.data.turn === p.beforeTurn)
      if (!start)
        throw new ApiError(
          'INVALID_PARAMS',
          `sessions.fork: beforeTurn: session ${p.sessionId} has no turn ${p.beforeTurn}`,
          { field: 'beforeTurn' },
        )
      boundary = start.seq
    }
    if (!source.session.isTurnBoundary(boundary)) {
      throw new ApiError(
        'SESSION_BUSY',
        `sessions.fork: session ${p.sessionId} is inside a turn at seq ${boundary}; pass beforeTurn or wait for the turn to end`,
        { status: 409, field: 'beforeTurn' },
      )
    }
    const session = this.ctx.sessions.fork(source.session, boundary)
    const agent = this.ctx.agents.create({
      cwd: session.cwd,
      session,
      model: { ...source.agent.model },
      ...(this.config.maxSteps ? { maxSteps: this.config.maxSteps } : {}),
    })
    const live = this.adopt(agent)
    const meta = this.meta.get(source.id)
    if (meta.model) await this.meta.update(live.id, { model: meta.model })
    const row = this.rowOf(live)
    this.publishHost({ type: 'session/added', session: row })
    return { session: row }
  }

  private async list(p: {
    query?: string
    cwd?: string
    includeArchived: boolean
    refresh?: boolean
    offset: number
    limit: number
  }) {
    await this.ready
    const query = p.query?.trim().toLowerCase()
    const cwd = p.cwd !== undefined ? resolve(p.cwd) : undefined
    const matches: SessionRow[] = []
    for (const row of await this.index.current(p.refresh === true)) {
      const meta = this.meta.get(row.id)
      if (meta.removed || (!p.includeArchived && meta.archived)) continue
      if (cwd !== undefined && row.cwd !== cwd) continue
      if (query && !(row.title ?? row.firstPrompt ?? '').toLowerCase().includes(query)) continue
      const live = this.live.get(row.id)
      matches.push(
        live
          ? this.rowOf(live)
          : {
              sessionId: row.id,
              cwd: row.cwd,
              ...(row.title !== undefined ? { title: row.title } : {}),
              ...(row.firstPrompt !== undefined ? { firstPrompt: row.firstPrompt } : {}),
              createdAt: row.createdAt,
              updatedAt: row.updatedAt,
              turns: row.turns,
              events: row.events,
              archived: meta.archived === true,
              status: 'stored',
              queued: 0,
              ...(meta.model ? { model: meta.model } : {}),
              ...(meta.permissionMode ? { permissionMode: meta.permissionMode } : {}),
            },
      )
    }
    matches.sort((a, b) => b.updatedAt - a.updatedAt || (a.sessionId < b.sessionId ? -1 : 1))
    const page = matches.slice(p.offset, p.offset + p.limit)
    const next = p.offset + page.length
    return { sessions: page, total: matches.length, ...(next < matches.length ? { nextOffset: next } : {}) }
  }

  /**
   * Takes a session off the web host: refused while it has work in flight; otherwise its agent is
   * disposed, its streams end, it leaves the index and `session/removed` is published. The log
   * stays where persistence keeps it; the `removed` mark (session metadata) hides it from here on.
   */
  private async remove(sessionId: string): Promise<{ sessionId: string }> {
    await this.ready
    if (this.meta.get(sessionId).removed) throw notFound(sessionId)
    const live = this.live.get(sessionId)
    if (
      live &&
      (live.driving ||
        live.agent.status === 'running' ||
        live.queue.length > 0 ||
        live.approvals.size > 0 ||
        live.questions.size > 0)
    ) {
      throw new ApiError(
        'SESSION_BUSY',
        `sessions.remove: session ${sessionId} has a turn running, waiting or queued; cancel it first`,
        { status: 409, field: 'sessionId' },
      )
    }
    if (!live) await this.exists(sessionId)
    await this.meta.update(sessionId, { removed: true })
    if (live && this.live.get(sessionId) === live) {
      if (live.idleTimer) clearTimeout(live.idleTimer)
      this.flushFrames(live)
      for (const client of [...live.clients]) client.close()
      live.clients.clear()
      await this.unload(live)
    }
    await this.unloading.get(sessionId)
    this.index.delete(sessionId)
    this.publishHost({ type: 'session/removed', sessionId })
    return { sessionId }
  }

  private async history(p: { sessionId: string; fromSeq: number; limit: number }) {
    await this.ready
    if (this.meta.get(p.sessionId).removed) throw notFound(p.sessionId)
    const session = this.live.get(p.sessionId)?.session ?? this.ctx.sessions.get(p.sessionId)
    let events: readonly WireEvent[]
    let total: number
    if (session) {
      events = session.slice(p.fromSeq, p.fromSeq + p.limit) as readonly WireEvent[]
      total = session.length
    } else {
      const persistence = this.opt('sessionPersistence')
      if (!persistence) throw notFound(p.sessionId)
      let stored: { events: readonly AnySessionEvent[]; from: number }
      try {
        stored = await this.storedEvents(persistence, p.sessionId, p.fromSeq)
      } catch (error) {
        const code = (error as { code?: string }).code
        if (code === 'NOT_FOUND' || code === 'BAD_ID') throw notFound(p.sessionId)
        throw new ApiError(
          'INTERNAL',
          `sessions.history: cannot read session ${p.sessionId}: ${(error as Error).message}`,
        )
      }
      const start = p.fromSeq - stored.from
      events = stored.events.slice(start, start + p.limit) as readonly WireEvent[]
      total = stored.from + stored.events.length
    }
    const nextSeq = events.length ? events[events.length - 1].seq + 1 : Math.min(p.fromSeq, total)
    return { events: [...events], nextSeq, end: nextSeq >= total }
  }

  /**
   * The stored events of a session that is not live, from `fromSeq` (`from` says where the
   * returned array starts). With a backend that names its log file, the whole log is read once and
   * kept with the file's identity, size and times: a later page is a slice of it as long as the
   * file is unchanged (checked with one stat per call), and any write by this or another process
   * makes it read again. Other backends read from `fromSeq` on every call.
   */
  private async storedEvents(
    persistence: NonNullable<Optional['sessionPersistence']>,
    sessionId: string,
    fromSeq: number,
  ): Promise<{ events: readonly AnySessionEvent[]; from: number }> {
    const path = locatesLogs(persistence) ? await persistence.logPath(sessionId).catch(() => undefined) : undefined
    const info = path ? await stat(path).catch(() => undefined) : undefined
    if (!info) {
      this.stored.delete(sessionId)
      return { events: await persistence.readFrom(sessionId, fromSeq), from: fromSeq }
    }
    // Taken before the read: a write landing during it leaves a key older than the events read,
    // which only costs a second read next time, never a stale page.
    const key = `${path}\0${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`
    const cached = this.stored.get(sessionId)
    if (cached?.key === key) {
      this.stored.delete(sessionId)
      this.stored.set(sessionId, cached)
      return { events: cached.events, from: 0 }
    }
    const events = await persistence.readFrom(sessionId, 0)
    this.stored.delete(sessionId)
    this.stored.set(sessionId, { key, events })
    while (this.stored.size > STORED_SESSIONS) this.stored.delete(this.stored.keys().next().value!)
    return { events, from: 0 }
  }

  private async prompt(p: { sessionId: string; text: string; mode: P.PromptMode }) {
    await this.ready
    if (this.meta.get(p.sessionId).archived) {
      throw new ApiError(
        'SESSION_ARCHIVED',
        `sessions.prompt: session ${p.sessionId} is archived; restore it with sessions.archive {archived: false} first`,
        { field: 'sessionId' },
      )
    }
    const live = await this.open(p.sessionId)
    if (this.meta.get(p.sessionId).archived)
      throw new ApiError('SESSION_ARCHIVED', `sessions.prompt: session ${p.sessionId} is archived`, {
        field: 'sessionId',
      })
    if (!live.driving && live.agent.status !== 'running') {
      this.drive(live, p.text)
      return { disposition: 'started' as const, queued: live.queue.length }
    }
    if (p.mode === 'steer') {
      // The running turn claims it at its next step (the agent's own inbox); never lost.
      live.agent
        .send(p.text)
        .catch((error: Error) => this.warn(`session ${live.id}: steered prompt failed: ${error.message}`))
      return { disposition: 'steered' as const, queued: live.queue.length }
    }
    live.queue.push(p.text)
    this.refreshStatus(live)
    this.broadcast(live, 'status', { sessionId: live.id, status: live.status, queued: live.queue.length })
    return { disposition: 'queued' as const, queued: live.queue.length }
  }

  /** Runs `text` as a turn, then the queued prompts one turn each, until the queue is empty. */
  private drive(live: Live, text: string): void {
    if (live.idleTimer) clearTimeout(live.idleTimer)
    live.driving = true
    this.refreshStatus(live)
    const next = async () => {
      let current: string | undefined = text
      while (current !== undefined && !this.stopping && this.live.get(live.id) === live) {
        await live.agent
          .send(current)
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

  private async cancel(p: { sessionId: string }) {
    const live = this.live.get(p.sessionId)
    if (!live) {
      await this.exists(p.sessionId)
      return { cancelled: false, dropped: 0 }
    }
    const dropped = live.queue.length
    live.queue.length = 0
    const running = live.driving || live.agent.status === 'running'
    if (running) live.agent.abort('cancelled from the web')
    return { cancelled: running, dropped }
  }

  /** Throws SESSION_NOT_FOUND unless the session is live, in memory or stored. */
  private async exists(sessionId: string): Promise<void> {
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

  private async resolveModel(spec: string | undefined, effort?: P.ReasoningEffort): Promise<ModelSelection> {
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

  private async attach(sessionId: string, client: StreamClient, after: number): Promise<void> {
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

  // ---- approvals and questions ----

  private ask<T>(
    table: Map<string, Pending<T>>,
    sessionId: string,
    requestId: string,
    signal: AbortSignal,
    publish: (live: Live) => void,
    settled: (live: Live, outcome: string) => void,
  ): Promise<T> {
    return new Promise<T>((resolvePromise, rejectPromise) => {
      const live = this.live.get(sessionId)
      if (!live || this.stopping) return rejectPromise(new Error('the web session is not open'))
      const finish = (outcome: string) => {
        table.delete(requestId)
        signal.removeEventListener('abort', onAbort)
        settled(live, outcome)
        this.refreshStatus(live)
      }
      const onAbort = () => {
        finish('cancelled')
        rejectPromise(new Error('the request was settled elsewhere'))
      }
      signal.addEventListener('abort', onAbort, { once: true })
      table.set(requestId, {
        sessionId,
        resolve: (value) => {
          finish((value as { decision?: string }).decision ?? 'answered')
          resolvePromise(value)
        },
        reject: (error) => {
          finish('unavailable')
          rejectPromise(error)
        },
      })
      publish(live)
      this.refreshStatus(live)
    })
  }
}

/** Stored sessions whose events `sessions.history` keeps in memory at once. */
const STORED_SESSIONS = 4

/** A persistence backend that can name a session's log file (the JSONL one can). */
interface LogLocator {
  logPath(sessionId: string): Promise<string | undefined>
}
const locatesLogs = (persistence: object): persistence is LogLocator =>
  typeof (persistence as Partial<LogLocator>).logPath === 'function'

/** The live session's frame log, built from its events on first use. */
function framesOf(live: Live): FrameLog {
  if (!live.frames || live.frames.length !== live.session.length) live.frames = FrameLog.of(live.session.events)
  return live.frames
}

/**
 * The frame of a just-appended event, added to the frame log when there is one (no log yet: no
 * stream client has asked for one). A log out of step with the session is rebuilt.
 */
function frameOf(live: Live, event: AnySessionEvent): Uint8Array | undefined {
  const frames = live.frames
  if (!frames) return undefined
  if (event.seq === frames.length) return frames.append(event)
  return framesOf(live).frame(event.seq)
}

const notFound = (sessionId: string) =>
  new ApiError('SESSION_NOT_FOUND', `no session ${JSON.stringify(sessionId)}`, { field: 'sessionId' })

const toWireModel = (model: ModelSelection): WireModel => ({
  provider: model.provider,
  model: model.model,
  ...(model.reasoningEffort !== undefined ? { reasoningEffort: model.reasoningEffort } : {}),
})

function approvalFrame(request: ApprovalRequest) {
  return {
    requestId: String(request.id),
    sessionId: request.sessionId!,
    request: {
      kind: request.kind,
      title: request.title,
      ...(request.detail !== undefined ? { detail: request.detail } : {}),
      action: request.action,
      options: [...request.options],
      time: request.time,
    },
  }
}

function questionFrame(request: QuestionsRequest) {
  return {
    requestId: String(request.id),
    sessionId: request.sessionId!,
    questions: request.questions.map((q) => ({ ...q })),
    time: request.time,
  }
}
