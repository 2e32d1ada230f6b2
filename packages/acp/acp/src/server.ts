// The ACP agent side: one AgentApp per connection, one dsh Agent per ACP session. Session ids on
// the wire are dsh session ids, so `session/load` reopens exactly what `session/new` created.
//
// This file is the service: its listeners, the connection's request table, and the session
// lifecycle (new, load, prompt, cancel, close). The parts: config.ts (the row's schema), live.ts
// (per-connection and per-session state, the update queue), session-open.ts (cwd check, load
// errors, list rows), modes.ts (presets and plan mode as ACP modes), tool-calls.ts (what wraps a
// tool call: progress, diffs, client file access), permission.ts (the approval answerer),
// translate.ts (session events to `session/update`), child-progress.ts (subagent progress).
import { createRequire } from 'node:module'
import * as acp from '@agentclientprotocol/sdk'
import { type Context, Service } from 'cordis'
import type { Agent } from '@dsh/agent'
import type {} from '@dsh/agent-default-model'
import type {} from '@dsh/commands'
import type {} from '@dsh/mcp-client'
import type {} from '@dsh/permission-presets'
import type { AnySessionEvent, Session } from '@dsh/session'
import { describeTurnEnd } from '@dsh/session'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/subagent'
import { appExit, ExitCode, resumeStored, sessionOpenError } from '@dsh/surface-kit'
import { ChildProgress } from './child-progress.ts'
import { Config } from './config.ts'
import { type Connection, type LiveSession, log, errorText, send } from './live.ts'
import { currentMode, sessionModes, setMode } from './modes.ts'
import { askPermission } from './permission.ts'
import { checkCwd, listRows, loadError } from './session-open.ts'
import { stdioStreams } from './stdio.ts'
import { aroundTool, tracking } from './tool-calls.ts'
import {
  DEFAULT_TOOL_KINDS,
  PromptContentError,
  promptToBlocks,
  stopReason,
  Translator,
  type ToolKind,
} from './translate.ts'

export { Config } from './config.ts'
export type { LiveSession } from './live.ts'
export { PLAN_MODE_ID } from './modes.ts'

const { version } = createRequire(import.meta.url)('../package.json') as { version: string }

export class AcpServer extends Service {
  static inject = ['agents', 'sessions']
  static Config = Config

  private readonly sessions = new Map<string, LiveSession>()
  private readonly connections = new Set<Connection>()
  private nextConnection = 1
  private readonly closing = new WeakMap<acp.AgentConnection, Promise<void>>()
  private readonly toolKinds: Record<string, ToolKind>

  constructor(
    ctx: Context,
    public config: Config,
  ) {
    super(ctx, 'acp')
    this.toolKinds = { ...DEFAULT_TOOL_KINDS, ...config.toolKinds }
    // Outermost on pre-execute, so a gate asking for approval there is attributed to its call.
    ctx.on(
      'tools/pre-execute',
      (payload, next) => tracking(this.lookupAny(payload.context.sessionId), payload.call.callId, next),
      { prepend: true },
    )
    ctx.on('tools/execute', (payload, next) =>
      aroundTool(this.ctx, this.lookupAny(payload.context.sessionId), this.config, payload, next),
    )
    ctx.inject(['approval'], (inner) => {
      const approval = inner.approval
      const off = approval.registerAnswerer({
        name: 'acp',
        accepts: (request) => !!request.sessionId && this.sessions.has(request.sessionId),
        answer: (request, { signal }) =>
          askPermission(this.lookupAny(request.sessionId), request, signal, this.config.permissionTimeoutMs),
      })
      inner.effect(() => off)
    })
    // Any change of a session's preset (ours or another surface's) is reported as its mode.
    ctx.on('permission-presets/changed', ({ sessionId, preset }) => {
      const live = this.sessions.get(sessionId)
      if (live)
        send(live, {
          sessionUpdate: 'current_mode_update',
          currentModeId: currentMode(this.ctx, sessionId) ?? preset.name,
        })
    })
    // A foreground subagent of a client's session streams its progress into its tool call.
    const progress = new ChildProgress((sessionId, update) => {
      const live = this.sessions.get(sessionId)
      if (live) send(live, update)
    })
    ctx.on('subagent/started', (record) => {
      if (this.sessions.has(record.parentSessionId) && record.sessionId)
        progress.started(record, ctx.sessions.get(record.sessionId))
    })
    ctx.on('subagent/finished', (record) => progress.finished(record))
    ctx.effect(() => () => progress.dispose(), 'acp: subagent progress')
    // Plan mode is one more session mode: entering or leaving it is reported the same way.
    ctx.on('plan-mode/changed', (session) => {
      const live = this.sessions.get(session.id)
      const mode = currentMode(this.ctx, session.id)
      if (live && mode !== undefined) send(live, { sessionUpdate: 'current_mode_update', currentModeId: mode })
    })
    if (config.stdio) ctx.on('app/ready', () => void this.serveStdio())
    ctx.effect(
      () => () => {
        for (const s of [...this.sessions.values()]) this.closeSession(s)
      },
      'acp: close sessions',
    )
  }

  /** The live ACP sessions, by id. */
  get live(): ReadonlyMap<string, LiveSession> {
    return this.sessions
  }

  /** Serves ACP on stdin/stdout; resolves when the client closed the connection. */
  async serveStdio(): Promise<void> {
    const { maxMessageBytes } = this.config
    const { output, input } = stdioStreams({ maxMessageBytes })
    // The SDK's own limit sits above ours, so every line the guard passes on is accepted.
    const conn = this.connect(acp.ndJsonStream(output, input, { maxMessageBytes: maxMessageBytes + 2 }))
    await conn.closed.catch(() => {})
    // Running turns are cancelled and settle (their logs end with turn/end) before the exit.
    await this.closing.get(conn)
    if (this.config.exitOnClose) appExit(this.ctx)(ExitCode.ok)
  }

  /** Serves one ACP client over `stream` (stdio, a socket, an in-memory pair in tests). */
  connect(stream: acp.Stream): acp.AgentConnection {
    const state: Connection = { id: this.nextConnection++, capabilities: {}, sessions: new Set() }
    this.connections.add(state)
    const app = acp
      .agent({ name: this.config.agentName })
      .onRequest('initialize', ({ params }) => this.initialize(state, params))
      .onRequest('session/new', ({ params }) => this.newSession(state, params))
      .onRequest('session/load', ({ params }) => this.loadSession(state, params))
      .onRequest('session/list', ({ params }) => this.listSessions(params))
      .onRequest('session/prompt', ({ params, signal }) => this.prompt(state, params, signal))
      .onRequest('session/set_mode', ({ params }) => this.setMode(state, params))
      .onNotification('session/cancel', ({ params }) => this.cancel(params.sessionId))
    const conn = app.connect(stream)
    state.client = conn.client
    this.closing.set(
      conn,
      conn.closed.catch(() => {}).then(() => this.disconnect(state)),
    )
    return conn
  }

  private get durable() {
    return this.ctx.get('durableSessions')
  }

  private initialize(state: Connection, params: acp.InitializeRequest): acp.InitializeResponse {
    state.capabilities = params.clientCapabilities ?? {}
    const persistent = Boolean(this.durable)
    return {
      // Only v1 exists; a client asking for another version gets ours and decides.
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: persistent,
        promptCapabilities: { image: this.config.promptImages, audio: false, embeddedContext: true },
        // An MCP client row speaks stdio, streamable HTTP and legacy SSE to the editor's servers.
        mcpCapabilities: { http: !!this.ctx.get('mcp'), sse: !!this.ctx.get('mcp') },
        sessionCapabilities: persistent ? { list: {} } : {},
      },
      agentInfo: { name: this.config.agentName, title: this.config.agentTitle, version },
      authMethods: [],
    }
  }

  /**
   * Mounts the client's `mcpServers` for this session's agent scope only, through `ctx.mcp` when an
   * MCP client row is mounted (their tools reach no other session); unmounted with the session.
   */
  private mountMcp(live: LiveSession, servers: readonly unknown[] | undefined): void {
    if (!servers?.length) return
    const mcp = this.ctx.get('mcp')
    if (!mcp) {
      log(`ignoring ${servers.length} MCP server(s): no MCP client is mounted`)
      return
    }
    live.unmountMcp = mcp.addAcpServers(servers, {
      scope: live.agent.scope,
      cwd: live.cwd,
      origin: `ACP session ${live.id}`,
    })
  }

  private createAgent(cwd: string, session?: Session): Agent {
    const model = this.ctx.get('agentDefaultModel')?.get()
    return this.ctx.agents.create({
      cwd,
      ...(session ? { session } : {}),
      ...(model ? { model } : {}),
      ...(this.config.maxSteps ? { maxSteps: this.config.maxSteps } : {}),
    })
  }

  private attach(state: Connection, agent: Agent, cwd: string): LiveSession {
    const translator = new Translator({
      sessionId: agent.session.id,
      cwd,
      toolKinds: this.toolKinds,
      maxToolOutputChars: this.config.maxToolOutputChars,
    })
    const live: LiveSession = {
      id: agent.session.id,
      agent,
      cwd,
      connection: state,
      translator,
      queue: Promise.resolve(),
      running: [],
      permissions: new Set(),
      unsubscribe: () => {},
    }
    live.unsubscribe = agent.session.subscribe((event) => this.onEvent(live, event))
    this.sessions.set(live.id, live)
    state.sessions.add(live)
    return live
  }

  private onEvent(live: LiveSession, event: AnySessionEvent): void {
    if (event.type === 'step/start') live.lastFinish = undefined
    if (event.type === 'assistant/message' && event.data.finish) live.lastFinish = event.data.finish
    for (const update of live.translator.translate(event)) send(live, update)
  }

  private get commands() {
    return this.ctx.get('commands')
  }

  /** Tells the client which `/` commands exist; sent just after the session's response. */
  private announceCommands(live: LiveSession): void {
    const commands = this.commands
    if (!commands) return
    const availableCommands = commands.list(live.agent).map((c) => ({
      name: c.name,
      description: c.description,
      ...(c.usage ? { input: { hint: c.usage } } : {}),
    }))
    setTimeout(() => send(live, { sessionUpdate: 'available_commands_update', availableCommands }), 0)
  }

  private async newSession(state: Connection, params: acp.NewSessionRequest): Promise<acp.NewSessionResponse> {
    const cwd = checkCwd(params.cwd)
    const agent = this.createAgent(cwd)
    const live = this.attach(state, agent, cwd)
    this.mountMcp(live, params.mcpServers)
    this.announceCommands(live)
    const modes = sessionModes(this.ctx, agent.session.id)
    return { sessionId: agent.session.id, ...(modes ? { modes } : {}) }
  }

  private async loadSession(state: Connection, params: acp.LoadSessionRequest): Promise<acp.LoadSessionResponse> {
    const cwd = checkCwd(params.cwd)
    const durable = this.durable
    // Without persistence nothing is loaded, whether or not a connection holds the id.
    if (durable && this.sessions.has(params.sessionId)) {
      throw acp.RequestError.invalidRequest(
        { sessionId: params.sessionId },
        `session ${params.sessionId} is already open on a connection`,
      )
    }
    let session: Session
    try {
      session = (await resumeStored(durable, params.sessionId)).session
    } catch (error) {
      throw loadError(sessionOpenError(params.sessionId, error))
    }
    const agent = this.createAgent(cwd, session)
    const live = this.attach(state, agent, cwd)
    this.mountMcp(live, params.mcpServers)
    // History first, as notifications, then the response.
    for (const event of session.events) {
      for (const update of live.translator.translate(event, true)) send(live, update)
    }
    await live.queue
    this.announceCommands(live)
    const modes = sessionModes(this.ctx, live.id)
    return modes ? { modes } : {}
  }

  private setMode(state: Connection, params: acp.SetSessionModeRequest): acp.SetSessionModeResponse {
    return setMode(this.ctx, this.lookup(state, params.sessionId), params.modeId)
  }

  private async listSessions(params: acp.ListSessionsRequest): Promise<acp.ListSessionsResponse> {
    const durable = this.durable
    if (!durable) throw acp.RequestError.methodNotFound('session/list')
    return { sessions: listRows(await durable.list(), params.cwd) }
  }

  private lookup(state: Connection, sessionId: string): LiveSession {
    const live = this.sessions.get(sessionId)
    if (!live || live.connection !== state) throw acp.RequestError.sessionNotFound(sessionId)
    return live
  }

  /** The live session of `sessionId`, on any connection. */
  private lookupAny(sessionId: string | undefined): LiveSession | undefined {
    return sessionId ? this.sessions.get(sessionId) : undefined
  }

  private async prompt(state: Connection, params: acp.PromptRequest, signal: AbortSignal): Promise<acp.PromptResponse> {
    const live = this.lookup(state, params.sessionId)
    if (live.prompt) {
      throw acp.RequestError.invalidRequest(
        { sessionId: live.id },
        `session ${live.id} already has a prompt in flight; wait for its response or send session/cancel`,
      )
    }
    let blocks: ReturnType<typeof promptToBlocks>
    try {
      blocks = promptToBlocks(params.prompt, { images: this.config.promptImages })
    } catch (error) {
      if (error instanceof PromptContentError)
        throw acp.RequestError.invalidParams({ sessionId: live.id }, error.message)
      throw error
    }
    const prompt = { cancelled: false }
    live.prompt = prompt
    const onAbort = () => this.cancel(live.id)
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      // A prompt that is one `/command` line runs the command without a model turn.
      const line = blocks.length === 1 && blocks[0].type === 'text' ? blocks[0].text : undefined
      const commands = this.commands
      if (line !== undefined && commands?.isCommandLine(line)) {
        const done = await commands.dispatch(live.agent, line, { signal })
        if (done.handled) {
          const reply = done.ok ? (done.output ?? `/${done.name} done.`) : done.error.message
          send(live, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: reply } })
          await live.queue
          return { stopReason: prompt.cancelled ? 'cancelled' : 'end_turn' }
        }
      }
      const result = await live.agent.send(blocks)
      await live.queue
      if (prompt.cancelled) return { stopReason: 'cancelled' }
      const reason = stopReason(result, live.lastFinish)
      if (reason) return { stopReason: reason }
      throw acp.RequestError.internalError(
        { reason: result.reason, error: result.error },
        describeTurnEnd(result.reason, result.error),
      )
    } finally {
      signal.removeEventListener('abort', onAbort)
      live.prompt = undefined
    }
  }

  private cancel(sessionId: string): void {
    const live = this.sessions.get(sessionId)
    if (!live?.prompt) return
    live.prompt.cancelled = true
    for (const pending of live.permissions) pending.abort(new Error('the prompt was cancelled'))
    live.agent.abort('cancelled by the ACP client')
  }

  private closeSession(live: LiveSession): void {
    this.cancel(live.id)
    live.unsubscribe()
    live.unmountMcp?.()
    this.sessions.delete(live.id)
    live.connection.sessions.delete(live)
    void live.agent
      .idle()
      .then(() => live.agent.dispose())
      .catch((error) => log(`closing ${live.id}: ${errorText(error)}`))
  }

  private async disconnect(state: Connection): Promise<void> {
    if (!this.connections.delete(state)) return
    const sessions = [...state.sessions]
    for (const live of sessions) this.closeSession(live)
    await Promise.all(sessions.map((s) => s.agent.idle().catch(() => {})))
  }
}

export default AcpServer
