// The ACP agent side: one AgentApp per connection, one dsh Agent per ACP session. Session ids on
// the wire are dsh session ids, so `session/load` reopens exactly what `session/new` created.
import { describeTurnEnd } from '@dsh/session'
import { readFile, stat } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { isAbsolute, resolve } from 'node:path'
import { statSync } from 'node:fs'
import * as acp from '@agentclientprotocol/sdk'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { Agent } from '@dsh/agent'
import type { AnySessionEvent, Session } from '@dsh/session'
import type { ExecutePayload, ToolOutput } from '@dsh/tools'
import type { ApprovalAnswer, ApprovalChoice, ApprovalRequest } from '@dsh/user-approval'
import { clientFsRoute, type ClientFsRoute } from './client-route.ts'
import { DEFAULT_MAX_MESSAGE_BYTES } from './framing.ts'
import { stdioStreams } from './stdio.ts'
import {
  DEFAULT_TOOL_KINDS,
  promptToBlocks,
  PromptContentError,
  stopReason,
  Translator,
  type ToolKind,
} from './translate.ts'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/agent-default-model'
import type {} from '@dsh/commands'
import type {} from '@dsh/permission-presets'
import { appExit, ExitCode, resumeStored, type SessionOpenError, sessionOpenError } from '@dsh/surface-kit'
import type {} from '@dsh/plan-mode'
import type {} from '@dsh/fs'
import type {} from '@dsh/mcp-client'
import type {} from '@dsh/subagent'
import { ChildProgress } from './child-progress.ts'

const { version } = createRequire(import.meta.url)('../package.json') as { version: string }

/** The ACP session mode that stands for plan mode. */
export const PLAN_MODE_ID = 'plan'

const TOOL_KINDS = [
  'read',
  'edit',
  'delete',
  'move',
  'search',
  'execute',
  'think',
  'fetch',
  'switch_mode',
  'other',
] as const

interface Config {
  stdio: boolean
  exitOnClose: boolean
  agentName: string
  agentTitle: string
  maxSteps?: number
  promptImages: boolean
  toolKinds: Record<string, ToolKind>
  maxToolOutputChars: number
  captureDiffs: boolean
  maxDiffBytes: number
  permissionTimeoutMs: number
  clientFsTools: string[]
  maxMessageBytes: number
}

export const Config: Schema<Config> = Schema.object({
  stdio: Schema.boolean().default(true).description('Serve ACP on stdin/stdout once the app is ready.'),
  exitOnClose: Schema.boolean().default(true).description('Exit the app when the stdio client closes the connection.'),
  agentName: Schema.string().default('dsh').description('agentInfo.name in the initialize response.'),
  agentTitle: Schema.string().default('dsh').description('agentInfo.title in the initialize response.'),
  maxSteps: Schema.natural().min(1).description('Model requests one prompt may take (default: the agent-loop row).'),
  promptImages: Schema.boolean()
    .default(false)
    .description('Accept image prompt content (advertised as promptCapabilities.image).'),
  toolKinds: Schema.dict(Schema.union([...TOOL_KINDS]))
    .default({})
    .description('Tool name -> ACP tool kind, over the built-in table.'),
  maxToolOutputChars: Schema.natural().default(20000).description('Characters of a tool result shown to the client.'),
  captureDiffs: Schema.boolean()
    .default(true)
    .description('Read files before and after edit/write calls to send full-text diffs.'),
  maxDiffBytes: Schema.natural()
    .default(1024 * 1024)
    .description('Files larger than this get hunk diffs only.'),
  permissionTimeoutMs: Schema.natural()
    .default(0)
    .description('How long a permission request may wait for the client; 0 waits until the turn is cancelled.'),
  maxMessageBytes: Schema.natural()
    .min(1)
    .default(DEFAULT_MAX_MESSAGE_BYTES)
    .description('Longest incoming stdio message (bytes); a longer one is dropped and answered with a JSON-RPC error.'),
  clientFsTools: Schema.array(String)
    .default(['read', 'edit', 'write'])
    .description(
      'Tools whose file reads and writes go through the client when it advertises fs capabilities (needs @dsh/acp/client-fs as the fs row).',
    ),
})

interface Connection {
  id: number
  client?: acp.AgentContext
  capabilities: acp.ClientCapabilities
  sessions: Set<LiveSession>
}

export interface LiveSession {
  readonly id: string
  readonly agent: Agent
  readonly cwd: string
  readonly connection: Connection
  readonly translator: Translator
  prompt?: { cancelled: boolean }
  /** Notifications are chained so they leave in event order, before the prompt's response. */
  queue: Promise<void>
  lastFinish?: string
  /** Tool calls currently executing (for attributing permission requests). */
  running: string[]
  permissions: Set<AbortController>
  unsubscribe(): void
  /** Unmounts the MCP servers the client named for this session (`mcpServers`). */
  unmountMcp?(): void
}

const CHOICE_OPTIONS: Record<ApprovalChoice, acp.PermissionOption> = {
  'allowed-once': { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
  'allowed-always': { optionId: 'allow_always', name: 'Allow for this session', kind: 'allow_always' },
  rejected: { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** `session/load`'s error for a session the kit could not open. */
function loadError(error: SessionOpenError): acp.RequestError {
  const { sessionId } = error
  switch (error.code) {
    case 'NO_PERSISTENCE':
      return acp.RequestError.methodNotFound('session/load')
    case 'NOT_FOUND':
      return acp.RequestError.sessionNotFound(sessionId)
    case 'BAD_ID':
      return acp.RequestError.invalidParams({ sessionId }, `cannot load session: ${error.detail}`)
    default:
      return acp.RequestError.invalidRequest(
        { sessionId, code: error.storeCode },
        `cannot load session ${sessionId}: ${error.detail}`,
      )
  }
}

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
      (payload, next) => this.tracking(payload.context.sessionId, payload.call.callId, next),
      { prepend: true },
    )
    ctx.on('tools/execute', (payload, next) => this.aroundTool(payload, next))
    ctx.inject(['approval'], (inner) => {
      const approval = inner.approval
      const off = approval.registerAnswerer({
        name: 'acp',
        accepts: (request) => !!request.sessionId && this.sessions.has(request.sessionId),
        answer: (request, { signal }) => this.askPermission(request, signal),
      })
      inner.effect(() => off)
    })
    // Any change of a session's preset (ours or another surface's) is reported as its mode.
    ctx.on('permission-presets/changed', ({ sessionId, preset }) => {
      const live = this.sessions.get(sessionId)
      if (live)
        this.send(live, {
          sessionUpdate: 'current_mode_update',
          currentModeId: this.currentMode(sessionId) ?? preset.name,
        })
    })
    // A foreground subagent of a client's session streams its progress into its tool call.
    const progress = new ChildProgress((sessionId, update) => {
      const live = this.sessions.get(sessionId)
      if (live) this.send(live, update)
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
      const mode = this.currentMode(session.id)
      if (live && mode !== undefined) this.send(live, { sessionUpdate: 'current_mode_update', currentModeId: mode })
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

  private log(message: string): void {
    process.stderr.write(`dsh-acp: ${message}\n`)
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

  private checkCwd(cwd: string): string {
    if (typeof cwd !== 'string' || !isAbsolute(cwd)) {
      throw acp.RequestError.invalidParams({ cwd }, `cwd must be an absolute path, got ${JSON.stringify(cwd)}`)
    }
    let isDir = false
    try {
      isDir = statSync(cwd).isDirectory()
    } catch {}
    if (!isDir) throw acp.RequestError.invalidParams({ cwd }, `cwd ${cwd} is not an existing directory`)
    return resolve(cwd)
  }

  /**
   * Mounts the client's `mcpServers` for this session's agent scope only, through `ctx.mcp` when an
   * MCP client row is mounted (their tools reach no other session); unmounted with the session.
   */
  private mountMcp(live: LiveSession, servers: readonly unknown[] | undefined): void {
    if (!servers?.length) return
    const mcp = this.ctx.get('mcp')
    if (!mcp) {
      this.log(`ignoring ${servers.length} MCP server(s): no MCP client is mounted`)
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
    for (const update of live.translator.translate(event)) this.send(live, update)
  }

  private send(live: LiveSession, update: acp.SessionUpdate): void {
    const client = live.connection.client
    if (!client) return
    live.queue = live.queue
      .then(() => client.notify('session/update', { sessionId: live.id, update }))
      .catch((error) => this.log(`session/update for ${live.id} failed: ${errorText(error)}`))
  }

  private get commands() {
    return this.ctx.get('commands')
  }

  /** Tells the client which `/` commands exist; sent just after the session's response. */
  private announceCommands(live: LiveSession): void {
    const commands = this.commands
    if (!commands) return
    const availableCommands = commands.list().map((c) => ({
      name: c.name,
      description: c.description,
      ...(c.usage ? { input: { hint: c.usage } } : {}),
    }))
    setTimeout(() => this.send(live, { sessionUpdate: 'available_commands_update', availableCommands }), 0)
  }

  private async newSession(state: Connection, params: acp.NewSessionRequest): Promise<acp.NewSessionResponse> {
    const cwd = this.checkCwd(params.cwd)
    const agent = this.createAgent(cwd)
    const live = this.attach(state, agent, cwd)
    this.mountMcp(live, params.mcpServers)
    this.announceCommands(live)
    const modes = this.modes(agent.session.id)
    return { sessionId: agent.session.id, ...(modes ? { modes } : {}) }
  }

  private async loadSession(state: Connection, params: acp.LoadSessionRequest): Promise<acp.LoadSessionResponse> {
    const cwd = this.checkCwd(params.cwd)
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
      for (const update of live.translator.translate(event, true)) this.send(live, update)
    }
    await live.queue
    this.announceCommands(live)
    const modes = this.modes(live.id)
    return modes ? { modes } : {}
  }

  private get presets() {
    return this.ctx.get('permissionPresets')
  }

  /** `plan` while the session plans (a plan-mode row is mounted), else its permission preset. */
  private currentMode(sessionId: string): string | undefined {
    if (this.ctx.get('planMode')?.isActive(sessionId)) return PLAN_MODE_ID
    return this.presets?.current(sessionId).name
  }

  /**
   * Session modes are the permission presets, when a presets row is mounted, plus `plan` when a
   * plan-mode row is too (without presets there would be no mode to leave plan mode for).
   */
  private modes(sessionId: string): acp.SessionModeState | undefined {
    const presets = this.presets
    if (!presets) return undefined
    const availableModes: acp.SessionMode[] = presets
      .list()
      .map((p) => ({ id: p.name, name: p.name, description: p.description }))
    if (this.ctx.get('planMode'))
      availableModes.push({
        id: PLAN_MODE_ID,
        name: 'plan',
        description: 'Plan mode: investigate and propose a plan; nothing changes until you approve it.',
      })
    return { currentModeId: this.currentMode(sessionId) ?? presets.current(sessionId).name, availableModes }
  }

  private setMode(state: Connection, params: acp.SetSessionModeRequest): acp.SetSessionModeResponse {
    const live = this.lookup(state, params.sessionId)
    const presets = this.presets
    const plan = this.ctx.get('planMode')
    const session = live.agent.session
    if (!presets) throw acp.RequestError.methodNotFound('session/set_mode')
    if (params.modeId === PLAN_MODE_ID && plan) {
      plan.enter(session)
      return {}
    }
    try {
      presets.set(live.id, params.modeId)
    } catch (error) {
      throw acp.RequestError.invalidParams({ modeId: params.modeId }, errorText(error))
    }
    // Choosing a permission mode leaves plan mode.
    if (plan?.isActive(session)) plan.leave(session)
    return {}
  }

  private async listSessions(params: acp.ListSessionsRequest): Promise<acp.ListSessionsResponse> {
    const durable = this.durable
    if (!durable) throw acp.RequestError.methodNotFound('session/list')
    const rows = await durable.list()
    return {
      sessions: rows
        .filter((r) => !params.cwd || r.cwd === params.cwd)
        .map((r) => ({
          sessionId: r.id,
          cwd: r.cwd,
          title: r.title ?? r.firstPrompt ?? null,
          updatedAt: new Date(r.updatedAt).toISOString(),
        })),
    }
  }

  private lookup(state: Connection, sessionId: string): LiveSession {
    const live = this.sessions.get(sessionId)
    if (!live || live.connection !== state) throw acp.RequestError.sessionNotFound(sessionId)
    return live
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
          this.send(live, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: reply } })
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
      .catch((error) => this.log(`closing ${live.id}: ${errorText(error)}`))
  }

  private async disconnect(state: Connection): Promise<void> {
    if (!this.connections.delete(state)) return
    const sessions = [...state.sessions]
    for (const live of sessions) this.closeSession(live)
    await Promise.all(sessions.map((s) => s.agent.idle().catch(() => {})))
  }

  private async readForDiff(path: string): Promise<{ exists: false } | { exists: true; text: string } | undefined> {
    const fs = this.ctx.get('fs')
    try {
      const size = fs ? (await fs.stat(path)).size : (await stat(path)).size
      if (size > this.config.maxDiffBytes) return undefined
      return { exists: true, text: fs ? (await fs.readText(path)).text : await readFile(path, 'utf8') }
    } catch (error) {
      return (error as { code?: string }).code === 'NOT_FOUND' || (error as { code?: string }).code === 'ENOENT'
        ? { exists: false }
        : undefined
    }
  }

  /** `tools/execute` listener: marks the call in progress and captures full-text diffs of file edits. */
  private async aroundTool(payload: ExecutePayload, next: () => Promise<ToolOutput>): Promise<ToolOutput> {
    const live = payload.context.sessionId ? this.sessions.get(payload.context.sessionId) : undefined
    if (!live) return next()
    const { callId, name } = payload.call
    this.send(live, { sessionUpdate: 'tool_call_update', toolCallId: callId, status: 'in_progress' })
    const args = (payload.args ?? {}) as { file_path?: unknown }
    const file = typeof args.file_path === 'string' ? resolve(payload.context.cwd, args.file_path) : undefined
    const capture = this.config.captureDiffs && file && (name === 'edit' || name === 'write')
    const body = () =>
      this.tracking(live.id, callId, async () => {
        const before = capture ? await this.readForDiff(file) : undefined
        const output = await next()
        if (before && file && !output.isError && !output.error) {
          const after = await this.readForDiff(file)
          if (after?.exists)
            live.translator.captureDiff(callId, {
              path: file,
              oldText: before.exists ? before.text : null,
              newText: after.text,
            })
        }
        return output
      })
    const route = this.clientRoute(live, name)
    return route ? clientFsRoute.run(route, body) : body()
  }

  /** Client file access for one tool call, when the client advertised it and the tool is a text file tool. */
  private clientRoute(live: LiveSession, tool: string): ClientFsRoute | undefined {
    const fs = live.connection.capabilities.fs
    const client = live.connection.client
    if (!client || !fs || !this.config.clientFsTools.includes(tool)) return undefined
    const route: ClientFsRoute = {}
    if (fs.readTextFile) {
      route.read = async (path) => (await client.request('fs/read_text_file', { sessionId: live.id, path })).content
    }
    if (fs.writeTextFile) {
      route.write = async (path, content) => {
        await client.request('fs/write_text_file', { sessionId: live.id, path, content })
      }
    }
    return route.read || route.write ? route : undefined
  }

  /** Runs `body` with `callId` recorded as running in its session (for permission attribution). */
  private async tracking<T>(sessionId: string | undefined, callId: string, body: () => Promise<T>): Promise<T> {
    const live = sessionId ? this.sessions.get(sessionId) : undefined
    if (!live) return body()
    live.running.push(callId)
    try {
      return await body()
    } finally {
      live.running.splice(live.running.lastIndexOf(callId), 1)
    }
  }

  /** The approval answerer: asks the client with `session/request_permission`, failing closed. */
  private async askPermission(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalAnswer> {
    const live = request.sessionId ? this.sessions.get(request.sessionId) : undefined
    const client = live?.connection.client
    if (!live || !client) return { decision: 'rejected', reason: 'the ACP client of this session is gone' }
    const choices = request.options.filter((c): c is ApprovalChoice => c in CHOICE_OPTIONS)
    const byId = new Map(choices.map((c) => [CHOICE_OPTIONS[c].optionId, c]))
    const controller = new AbortController()
    const abort = () => controller.abort(signal.reason)
    signal.addEventListener('abort', abort, { once: true })
    const timer =
      this.config.permissionTimeoutMs > 0
        ? setTimeout(
            () => controller.abort(new Error(`no answer within ${this.config.permissionTimeoutMs} ms`)),
            this.config.permissionTimeoutMs,
          )
        : undefined
    live.permissions.add(controller)
    const toolCallId = live.running.at(-1) ?? `approval-${request.id}`
    try {
      const response = await client.request(
        'session/request_permission',
        {
          sessionId: live.id,
          toolCall: {
            toolCallId,
            title: request.title,
            status: 'pending',
            rawInput: request.action,
            ...(request.detail
              ? { content: [{ type: 'content', content: { type: 'text', text: request.detail } }] }
              : {}),
          },
          options: choices.map((c) => CHOICE_OPTIONS[c]),
        },
        { cancellationSignal: controller.signal, stopWaitingOnCancel: true },
      )
      if (response.outcome.outcome === 'cancelled')
        return { decision: 'rejected', reason: 'the client cancelled the permission request' }
      const choice = byId.get(response.outcome.optionId)
      if (!choice)
        return {
          decision: 'rejected',
          reason: `the client chose an unknown option ${JSON.stringify(response.outcome.optionId)}`,
        }
      return { decision: choice }
    } catch (error) {
      // A JSON-RPC error, a closed connection, a timeout or a cancelled prompt: never an allow.
      // The SDK rejects a request it stopped waiting for with a generic error: the abort's own
      // reason says why (timeout or cancellation).
      const why = controller.signal.aborted ? errorText(controller.signal.reason) : errorText(error)
      return { decision: 'rejected', reason: `the client did not answer the permission request (${why})` }
    } finally {
      if (timer) clearTimeout(timer)
      signal.removeEventListener('abort', abort)
      live.permissions.delete(controller)
    }
  }
}

export default AcpServer
