// The session methods of the web host: `sessions.*`, `approvals.respond`, `questions.respond`,
// `llm.*` and `commands.*` registered on ctx.api, each checking its parameters and answering from
// the session state the host keeps (host.ts).
import { stat } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { AnySessionEvent } from '@dsh/session'
import type { QuestionAnswer } from '@dsh/user-questions'
import * as P from '@dsh/web-protocol'
import { ApiError, type SessionRow, type WireEvent } from '@dsh/web-protocol'
import type { SessionHost } from './host.ts'
import { humanSource, listRowFields, notFound, type QueuedPrompt, toWireModel } from './host-wire.ts'

export class SessionRoutes {
  constructor(private readonly host: SessionHost) {}

  /** Registers every session method on ctx.api. */
  register(): void {
    const api = this.host.ctx.api
    api.provideSessionStreams({ attach: (id, client, after) => this.host.attach(id, client, after) })
    api.register(P.sessionsList, (p) => this.list(p))
    api.register(P.sessionsCreate, (p) => this.create(p))
    api.register(P.sessionsHistory, (p) => this.history(p))
    api.register(P.sessionsPrompt, (p) => this.prompt(p))
    api.register(P.sessionsCancel, (p) => this.cancel(p))
    api.register(P.sessionsRename, async (p) => {
      const live = await this.host.open(p.sessionId)
      live.session.append('session/title', { title: p.title.trim(), source: 'user' })
      return { session: this.host.changed(live) }
    })
    api.register(P.sessionsArchive, async (p) => {
      await this.host.ready
      const live = await this.host.open(p.sessionId)
      await this.host.meta.update(p.sessionId, { archived: p.archived })
      if (p.archived) live.queue.length = 0
      this.host.notePending(live)
      return { session: this.host.changed(live) }
    })
    api.register(P.sessionsRemove, (p) => this.remove(p.sessionId))
    api.register(P.sessionsSetModel, async (p) => {
      const live = await this.host.open(p.sessionId)
      const model = await this.host.resolveModel(p.model, p.reasoningEffort)
      live.agent.model = model
      const wire = toWireModel(model)
      await this.host.meta.update(p.sessionId, { model: wire })
      this.host.changed(live)
      return { model: wire }
    })
    api.register(P.sessionsSetPermissionMode, async (p) => {
      const presets = this.host.opt('permissionPresets')
      if (!presets)
        throw new ApiError('UNAVAILABLE', 'sessions.setPermissionMode: no permission-presets row is mounted')
      const live = await this.host.open(p.sessionId)
      try {
        presets.set(p.sessionId, p.mode)
      } catch (error) {
        throw new ApiError('INVALID_PARAMS', `sessions.setPermissionMode: mode: ${(error as Error).message}`, {
          field: 'mode',
        })
      }
      await this.host.meta.update(p.sessionId, { permissionMode: p.mode })
      this.host.changed(live)
      return { mode: p.mode }
    })
    api.register(P.sessionsFork, (p) => this.fork(p))
    api.register(P.approvalsRespond, (p) => {
      const answered = this.host.approvals.answer(p.requestId, {
        decision: p.decision,
        ...(p.reason !== undefined ? { reason: p.reason } : {}),
        ...(p.message !== undefined ? { message: p.message } : {}),
      })
      if (!answered)
        throw new ApiError(
          'REQUEST_NOT_FOUND',
          `approvals.respond: no pending approval request ${JSON.stringify(p.requestId)} (already answered, cancelled, or never asked)`,
          { field: 'requestId' },
        )
      return {}
    })
    api.register(P.questionsRespond, (p) => {
      if (!this.host.questions.answer(p.requestId, p.answers as Record<string, QuestionAnswer>))
        throw new ApiError(
          'REQUEST_NOT_FOUND',
          `questions.respond: no pending question request ${JSON.stringify(p.requestId)} (already answered, cancelled, or never asked)`,
          { field: 'requestId' },
        )
      return {}
    })
    api.register(P.llmProviders, () => {
      const fallback = this.host.opt('agentDefaultModel')?.get()
      return {
        providers: this.host.opt('llm')?.listProviders() ?? [],
        ...(fallback ? { default: toWireModel(fallback) } : {}),
      }
    })
    api.register(P.llmModels, async (p) => {
      const llm = this.host.opt('llm')
      if (!llm?.listProviders().includes(p.provider)) {
        throw new ApiError(
          'INVALID_PARAMS',
          `llm.models: provider: no provider ${JSON.stringify(p.provider)}; registered: ${llm?.listProviders().join(', ') || '(none)'}`,
          { field: 'provider' },
        )
      }
      return { models: (await llm.listModels(p.provider)).map((m) => ({ ...m, id: m.id })) }
    })
    api.register(P.commandsList, () => ({ commands: this.host.opt('commands')?.list() ?? [] }))
    // Open `/` menus re-read the list when it changes (an MCP prompt that arrives while one is open):
    // one `commands/changed` per burst (a server's prompts register one by one).
    let pushing = false
    this.host.ctx.on('commands/changed', () => {
      if (pushing) return
      pushing = true
      queueMicrotask(() => {
        pushing = false
        this.host.publishHost({ type: P.COMMANDS_CHANGED })
      })
    })
    api.register(P.commandsExecute, async (p, call) => {
      const commands = this.host.opt('commands')
      if (!commands) throw new ApiError('UNAVAILABLE', 'commands.execute: no commands row is mounted')
      const live = await this.host.open(p.sessionId)
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
  }

  async create(p: {
    cwd?: string
    workspaceId?: string
    model?: string
    reasoningEffort?: P.ReasoningEffort
    title?: string
  }): Promise<{ session: SessionRow }> {
    if (this.host.stopping) throw new ApiError('UNAVAILABLE', 'the web host is stopping')
    await this.host.ready
    let cwd: string
    if (p.workspaceId !== undefined) {
      if (p.cwd !== undefined)
        throw new ApiError('INVALID_PARAMS', 'sessions.create: pass either cwd or workspaceId, not both', {
          field: 'cwd',
        })
      const workspaces = this.host.opt('workspaces')
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
    const model = await this.host.resolveModel(p.model, p.reasoningEffort)
    const agent = this.host.ctx.agents.create({
      cwd,
      model,
      ...(this.host.config.maxSteps ? { maxSteps: this.host.config.maxSteps } : {}),
    })
    const live = this.host.adopt(agent)
    if (p.title?.trim()) live.session.append('session/title', { title: p.title.trim(), source: 'user' })
    // Announced before any await: a short idleMs may unload it meanwhile, and `stored` must not
    // reach the host stream before `added`.
    const row = this.host.rowOf(live)
    this.host.publishHost({ type: 'session/added', session: row })
    if (p.model !== undefined || p.reasoningEffort !== undefined)
      await this.host.meta.update(live.id, { model: toWireModel(model) })
    return { session: row }
  }

  async fork(p: { sessionId: string; beforeTurn?: number }): Promise<{ session: SessionRow }> {
    const source = await this.host.open(p.sessionId)
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
    const session = this.host.ctx.sessions.fork(source.session, boundary)
    const agent = this.host.ctx.agents.create({
      cwd: session.cwd,
      session,
      model: { ...source.agent.model },
      ...(this.host.config.maxSteps ? { maxSteps: this.host.config.maxSteps } : {}),
    })
    const live = this.host.adopt(agent)
    const meta = this.host.meta.get(source.id)
    if (meta.model) await this.host.meta.update(live.id, { model: meta.model })
    const row = this.host.rowOf(live)
    this.host.publishHost({ type: 'session/added', session: row })
    return { session: row }
  }

  async list(p: {
    query?: string
    cwd?: string
    includeArchived: boolean
    refresh?: boolean
    offset: number
    limit: number
  }) {
    await this.host.ready
    const query = p.query?.trim().toLowerCase()
    const cwd = p.cwd !== undefined ? resolve(p.cwd) : undefined
    const matches: SessionRow[] = []
    for (const row of await this.host.index.current(p.refresh === true)) {
      const meta = this.host.meta.get(row.id)
      if (meta.removed || (!p.includeArchived && meta.archived)) continue
      if (cwd !== undefined && row.cwd !== cwd) continue
      if (query && !(row.title ?? row.firstPrompt ?? '').toLowerCase().includes(query)) continue
      const live = this.host.live.get(row.id)
      matches.push(
        live
          ? this.host.rowOf(live)
          : {
              ...listRowFields(row),
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

   * stays where persistence keeps it; the `removed` mark (session metadata) hides it from here on.
   */
  async remove(sessionId: string): Promise<{ sessionId: string }> {
    await this.host.ready
    if (this.host.meta.get(sessionId).removed) throw notFound(sessionId)
    const live = this.host.live.get(sessionId)
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
    if (!live) await this.host.exists(sessionId)
    await this.host.meta.update(sessionId, { removed: true })
    if (live && this.host.live.get(sessionId) === live) {
      if (live.idleTimer) clearTimeout(live.idleTimer)
      this.host.flushFrames(live)
      for (const client of [...live.clients]) client.close()
      live.clients.clear()
      await this.host.unload(live)
    }
    await this.host.unloading.get(sessionId)
    this.host.index.delete(sessionId)
    this.host.publishHost({ type: 'session/removed', sessionId })
    return { sessionId }
  }

  async history(p: { sessionId: string; fromSeq: number; limit: number }) {
    await this.host.ready
    if (this.host.meta.get(p.sessionId).removed) throw notFound(p.sessionId)
    const session = this.host.live.get(p.sessionId)?.session ?? this.host.ctx.sessions.get(p.sessionId)
    let events: readonly WireEvent[]
    let total: number
    if (session) {
      events = session.slice(p.fromSeq, p.fromSeq + p.limit) as readonly WireEvent[]
      total = session.length
    } else {
      const persistence = this.host.opt('sessionPersistence')
      if (!persistence) throw notFound(p.sessionId)
      let stored: { events: readonly AnySessionEvent[]; from: number }
      try {
        stored = await this.host.history.events(persistence, p.sessionId, p.fromSeq)
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

  async prompt(p: { sessionId: string; text: string; mode: P.PromptMode; references?: P.PromptReference[] }) {
    const prompt: QueuedPrompt = { text: p.text, ...(p.references ? { references: p.references } : {}) }
    await this.host.ready
    if (this.host.meta.get(p.sessionId).archived) {
      throw new ApiError(
        'SESSION_ARCHIVED',
        `sessions.prompt: session ${p.sessionId} is archived; restore it with sessions.archive {archived: false} first`,
        { field: 'sessionId' },
      )
    }
    const live = await this.host.open(p.sessionId)
    if (this.host.meta.get(p.sessionId).archived)
      throw new ApiError('SESSION_ARCHIVED', `sessions.prompt: session ${p.sessionId} is archived`, {
        field: 'sessionId',
      })
    if (!live.driving && live.agent.status !== 'running') {
      this.host.drive(live, prompt)
      return { disposition: 'started' as const, queued: live.queue.length }
    }
    if (p.mode === 'steer') {
      // The running turn claims it at its next step (the agent's own inbox); never lost.
      live.agent
        .send(p.text, { source: humanSource(prompt) })
        .catch((error: Error) => this.host.warn(`session ${live.id}: steered prompt failed: ${error.message}`))
      return { disposition: 'steered' as const, queued: live.queue.length }
    }
    live.queue.push(prompt)
    this.host.refreshStatus(live)
    this.host.broadcast(live, 'status', { sessionId: live.id, status: live.status, queued: live.queue.length })
    return { disposition: 'queued' as const, queued: live.queue.length }
  }

  async cancel(p: { sessionId: string }) {
    const live = this.host.live.get(p.sessionId)
    if (!live) {
      await this.host.exists(p.sessionId)
      return { cancelled: false, dropped: 0 }
    }
    const dropped = live.queue.length
    live.queue.length = 0
    const running = live.driving || live.agent.status === 'running'
    if (running) live.agent.abort('cancelled from the web')
    return { cancelled: running, dropped }
  }
}
