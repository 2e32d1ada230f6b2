// One MCP server: connects (with jittered exponential backoff), registers the server's tools on
// `ctx.tools`, follows `notifications/tools/list_changed`, restarts after a crash, and forwards
// calls with a per-call timeout and cancellation. Everything it goes through is reported as a
// status change; the service turns the interesting ones into logged notices.
//
// A server's tool list is read loosely and each tool checked on its own (the SDK's schema, its
// output-schema compiler, the registry): one tool dsh cannot use is skipped with a notice naming
// it and why, and the server's other tools still load.
import { basename } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Context } from 'cordis'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type {
  GetPromptResult,
  LoggingMessageNotification,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
  Tool,
} from '@modelcontextprotocol/sdk/types.js'
import { loadSdk, sdk as loadedSdk, type Client, type Sdk } from './sdk.ts'
import type { SubprocessService } from '@dsh/subprocess'
import type { JsonSchema, ToolCallContext, ToolOutput } from '@dsh/tools'
import type { McpSource, McpTransportKind, ServerSpec } from './config.ts'
import { hashedToolName, nameBoard, toolName, type NameBoard } from './names.ts'
import { mapResult } from './results.ts'
import { MESSAGE_TOO_LARGE, SubprocessStdioTransport, type TooLargeData } from './stdio-transport.ts'
import { McpAuthError, McpOAuth, type AuthStore, type ConsentRequest } from './oauth.ts'
import type { ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js'

export type McpServerState = 'starting' | 'connected' | 'retrying' | 'failed' | 'invalid' | 'disabled' | 'closed'

/** What `ctx.mcp.list()` reports per server. */
export interface McpServerStatus {
  name: string
  source: McpSource
  /** Where the server was declared: a file path, `config`, `settings`, or `session <id>`. */
  origin: string
  /** Agent scope of a per-session server (its tools exist only there). */
  scope?: string
  transport?: McpTransportKind
  state: McpServerState
  /** Registered (model-facing) tool names, sorted. */
  tools: string[]
  /** Tools the server offers that dsh could not register, with why (absent when none). */
  skipped?: Array<{ tool: string; reason: string }>
  /** Failed attempts since the last stable connection. */
  failures: number
  /** Restarts after a connection was lost. */
  restarts: number
  /** The last failure, one line. */
  error?: string
  /** Epoch ms of the next attempt while `retrying`. */
  nextRetryAt?: number
  /** A remote server that needs a human to sign in (OAuth) and found none: `failed` until one is at hand. */
  signIn?: 'needed'
}

export interface RetryOptions {
  initialDelayMs: number
  maxDelayMs: number
  /** Consecutive failures after which the server is left `failed`. */
  maxAttempts: number
  /** A connection that lasts this long resets the failure count. */
  stableMs: number
}

export interface ConnectionOptions {
  connectTimeoutMs: number
  callTimeoutMs: number
  maxCallMs: number
  /** How long a call waits for a server that is (re)connecting before it fails. */
  reconnectWaitMs: number
  killGraceMs: number
  maxDescriptionChars: number
  retry: RetryOptions
  /** How long a sign-in waits for the browser to come back to the loopback callback. */
  authWaitMs: number
  /** Sign-ins one request may trigger (401 and 403 insufficient_scope) before the server is failed. */
  maxAuthAttempts: number
}

export interface ConnectionHost {
  /** The plugin context tools are registered on. */
  ctx: Context
  subprocess: SubprocessService
  options: ConnectionOptions
  /** Called on every state change; `notice` is set for changes a user should hear about. */
  onStatus(status: McpServerStatus, notice?: string): void
  onProgress?(info: {
    server: string
    tool: string
    callId: string
    /** The session whose call reported it (absent for a call outside a session). */
    sessionId?: string
    progress: number
    total?: number
    message?: string
  }): void
  /** The server's prompts, resources or templates were (re)listed: after connecting, on list_changed, on dispose. */
  onCatalog?(connection: McpServerConnection): void
  /** A `notifications/message` (log line) of the server. */
  onLog?(server: string, params: LoggingMessageNotification['params']): void
  /** The workspace offered to servers as their one root (`roots/list`). */
  workspace: string
  /** Where OAuth sign-in state is kept. */
  authStore: AuthStore
  /** Shows an authorization URL to a human (see McpOAuth); rejects with McpAuthError when nobody can or will. */
  consent(request: ConsentRequest): Promise<void>
  /** Asks the human an elicitation of the server, in the session whose call is running (if any). */
  elicit(
    server: string,
    params: ElicitRequestFormParams | ElicitRequestURLParams,
    sessionId: string | undefined,
    signal: AbortSignal,
  ): Promise<ElicitResult>
}

const CLIENT_INFO = { name: 'dsh', version: '0.1.0' }

interface Registered {
  raw: string
  key: string
  dispose(): void
}

/** Checks a structured result against the tool's output schema: undefined when it conforms. */
type OutputCheck = (value: unknown) => { valid: boolean; errorMessage?: string }

/** Compiles a JSON schema into a check, throwing on a schema it cannot compile (the SDK's ajv). */
interface SchemaCompiler {
  getValidator(schema: unknown): OutputCheck
}

/**
 * The client's own JSON-schema validator (ajv, as `listTools()` would use it to cache output
 * schemas). The SDK keeps it in a private field; the SDK version is pinned exactly, and without the
 * field output schemas are simply not checked. Importing the SDK's ajv provider module separately
 * broke in the prelinked bundle ("Ajv is not a constructor"), hence the field.
 */
function compilerOf(client: Client): SchemaCompiler | undefined {
  const field = (client as unknown as { _jsonSchemaValidator?: Partial<SchemaCompiler> })._jsonSchemaValidator
  return typeof field?.getValidator === 'function' ? (field as SchemaCompiler) : undefined
}

/** A connection failure described while the process was still up (closing it kills it). */
class ConnectFailure extends Error {}

export class McpServerConnection {
  private state: McpServerState = 'starting'
  private client?: Client
  private transport?: Transport
  private failures = 0
  private restarts = 0
  private lastError?: string
  private nextRetryAt?: number
  private disposed = false
  private timer?: NodeJS.Timeout
  private stableTimer?: NodeJS.Timeout
  private wakeRetry?: () => void
  private readonly registered = new Map<string, Registered>()
  /** The last tool list read (valid tools only), kept to register again when names change. */
  private listed: Tool[] = []
  /** Tools refused when the list was read, and all refused tools after the last register. */
  private listSkipped: Array<{ tool: string; reason: string }> = []
  private skipped: Array<{ tool: string; reason: string }> = []
  private validator?: SchemaCompiler
  /** Skips already reported, so a refresh does not repeat the notice. */
  private readonly reported = new Set<string>()
  /** Output-schema checks by raw tool name (the SDK's own, done here since tools are listed here). */
  private outputChecks = new Map<string, OutputCheck>()
  private readonly board: NameBoard
  private waiters: Array<() => void> = []
  private running = false
  /** Settles once the first connection attempt has finished, whatever its outcome. */
  readonly firstAttempt: Promise<void>
  readonly createdAt = Date.now()
  private settleFirst!: () => void
  private oauth?: McpOAuth
  /** The read/list tools of a server that offers resources. */
  private readonly resourceTools = new Map<string, () => void>()
  private signIn?: 'needed'
  /** Sessions of the calls in flight, newest last: an elicitation is asked in the newest. */
  private readonly callSessions: Array<string | undefined> = []
  /** What the server offers besides tools, as last listed (kept while it restarts, like its tools). */
  private prompts: Prompt[] = []
  /** Whether the live server's capabilities offer resources (it may then be `@`-mentioned). */
  offersResources = false
  private resources: Resource[] = []
  private templates: ResourceTemplate[] = []

  constructor(
    readonly name: string,
    readonly spec: ServerSpec,
    readonly source: McpSource,
    readonly origin: string,
    private readonly host: ConnectionHost,
    readonly scope?: string,
  ) {
    this.firstAttempt = new Promise((resolve) => (this.settleFirst = resolve))
    // Keyed by the service's options object: the one thing every connection of a service shares
    // by identity (a Cordis context reached through a service may be a fresh proxy each time).
    this.board = nameBoard(host.options, scope)
  }

  status(): McpServerStatus {
    return {
      name: this.name,
      source: this.source,
      origin: this.origin,
      ...(this.scope !== undefined ? { scope: this.scope } : {}),
      transport: this.spec.transport,
      state: this.state,
      tools: [...this.registered.keys(), ...this.resourceTools.keys()].sort(),
      ...(this.skipped.length ? { skipped: this.skipped.map((s) => ({ ...s })) } : {}),
      failures: this.failures,
      restarts: this.restarts,
      ...(this.lastError !== undefined ? { error: this.lastError } : {}),
      ...(this.state === 'retrying' && this.nextRetryAt !== undefined ? { nextRetryAt: this.nextRetryAt } : {}),
      ...(this.signIn ? { signIn: this.signIn } : {}),
    }
  }

  start(): void {
    void this.run()
  }

  /**
   * Connects again now: a `failed` server starts over, a `retrying` one skips its wait; `force`
   * also drops a live connection and connects again (after a sign-in was forgotten).
   */
  restart(force = false): void {
    if (this.disposed) return
    if (force && this.state === 'connected') {
      const client = this.client
      this.client = undefined
      void client?.close().catch(() => {})
      this.failures = 0
      void this.run()
      return
    }
    if (this.state === 'failed') {
      this.failures = 0
      this.signIn = undefined
      void this.run()
    } else if (this.state === 'retrying') {
      if (this.wakeRetry) this.wakeRetry()
      else {
        clearTimeout(this.timer)
        void this.run()
      }
    }
  }

  /** Resolves at the next `connected`, `failed` or `closed` (or after `waitMs`). */
  settled(waitMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, waitMs)
      timer.unref?.()
      this.waiters.push(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  async dispose(): Promise<void> {
    if (this.disposed) return
    this.disposed = true
    clearTimeout(this.timer)
    clearTimeout(this.stableTimer)
    this.wakeRetry?.()
    for (const entry of this.registered.values()) entry.dispose()
    this.registered.clear()
    for (const dispose of this.resourceTools.values()) dispose()
    this.resourceTools.clear()
    this.board.leave(this.name)
    this.prompts = []
    this.resources = []
    this.templates = []
    this.host.onCatalog?.(this)
    const client = this.client
    this.client = undefined
    this.setState('closed')
    this.settleFirst()
    this.oauth?.close()
    await client?.close().catch(() => {})
  }

  private setState(state: McpServerState, notice?: string): void {
    this.state = state
    if (state === 'connected' || state === 'failed' || state === 'closed') {
      const waiters = this.waiters
      this.waiters = []
      for (const wake of waiters) wake()
    }
    this.host.onStatus(this.status(), notice)
  }

  private delayFor(failures: number): number {
    const { initialDelayMs, maxDelayMs } = this.host.options.retry
    const ceiling = Math.min(maxDelayMs, initialDelayMs * 2 ** Math.max(0, failures - 1))
    // Half fixed, half random: servers restarted together do not retry in lockstep.
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2))
  }

  private async run(): Promise<void> {
    if (this.running) return
    this.running = true
    try {
      while (!this.disposed) {
        if (this.state !== 'starting') this.setState('starting')
        try {
          await this.connectOnce()
          this.settleFirst()
          return
        } catch (error) {
          if (this.disposed) return
          this.failures++
          this.lastError = error instanceof ConnectFailure ? error.message : this.explain(error)
          const auth = authErrorOf(error)
          if (auth) {
            // Retrying cannot help a sign-in nobody can give (or that was refused): failed at once.
            this.signIn = auth.reason === 'no-human' ? 'needed' : undefined
            this.settleFirst()
            this.setState(
              'failed',
              `MCP server "${this.name}" could not sign in: ${this.lastError}. Its tools are unavailable.`,
            )
            return
          }
          this.settleFirst()
          const { maxAttempts } = this.host.options.retry
          if (this.failures >= maxAttempts) {
            this.setState(
              'failed',
              `MCP server "${this.name}" failed to start after ${this.failures} attempt${this.failures === 1 ? '' : 's'}: ${this.lastError}. Its tools are unavailable.`,
            )
            return
          }
          const delay = this.delayFor(this.failures)
          this.nextRetryAt = Date.now() + delay
          this.setState(
            'retrying',
            `MCP server "${this.name}" failed to start (attempt ${this.failures} of ${maxAttempts}): ${this.lastError}. Retrying in ${(delay / 1000).toFixed(1)} s.`,
          )
          await new Promise<void>((resolve) => {
            this.wakeRetry = resolve
            this.timer = setTimeout(resolve, delay)
            this.timer.unref?.()
          })
          this.wakeRetry = undefined
        }
      }
    } finally {
      this.running = false
    }
  }

  private createTransport(sdk: Sdk): Transport {
    const spec = this.spec
    if (spec.transport === 'stdio')
      return new SubprocessStdioTransport(sdk, this.host.subprocess, spec, this.host.options.killGraceMs)
    const requestInit = { headers: spec.headers }
    if (spec.oauth !== false) {
      this.oauth ??= new McpOAuth({
        server: this.name,
        url: spec.url,
        settings: spec.oauth,
        store: this.host.authStore,
        sdk,
        consent: (request) => this.host.consent(request),
        waitMs: this.host.options.authWaitMs,
        maxAttempts: this.host.options.maxAuthAttempts,
      })
    }
    const fetch = this.oauth?.wrap()
    const options = { requestInit, ...(fetch ? { fetch } : {}) }
    if (spec.transport === 'sse') return new sdk.SSEClientTransport(new URL(spec.url), options)
    return new sdk.StreamableHTTPClientTransport(new URL(spec.url), options)
  }

  private async connectOnce(): Promise<void> {
    const sdk = await loadSdk()
    const { ErrorCode, McpError } = sdk
    const transport = this.createTransport(sdk)
    this.transport = transport
    const client = new sdk.Client(CLIENT_INFO, {
      capabilities: { elicitation: { form: { applyDefaults: true }, url: {} }, roots: { listChanged: false } },
      listChanged: {
        tools: {
          autoRefresh: false,
          debounceMs: 100,
          onChanged: () => {
            if (this.client === client) void this.refresh(client)
          },
        },
        prompts: {
          autoRefresh: false,
          debounceMs: 100,
          onChanged: () => {
            if (this.client === client) void this.refreshCatalog(client, 'prompts')
          },
        },
        resources: {
          autoRefresh: false,
          debounceMs: 100,
          onChanged: () => {
            if (this.client === client) void this.refreshCatalog(client, 'resources')
          },
        },
      },
    })
    client.setNotificationHandler(sdk.LoggingMessageNotificationSchema, (notification) => {
      this.host.onLog?.(this.name, notification.params)
    })
    client.setRequestHandler(sdk.ElicitRequestSchema, (request, extra) =>
      this.host.elicit(
        this.name,
        request.params as ElicitRequestFormParams | ElicitRequestURLParams,
        this.callSessions.at(-1),
        extra.signal,
      ),
    )
    client.setRequestHandler(sdk.ListRootsRequestSchema, () => ({
      roots: [{ uri: pathToFileURL(this.host.workspace).href, name: basename(this.host.workspace) || 'workspace' }],
    }))
    let live = false
    client.onclose = () => {
      if (live && this.client === client && !this.disposed)
        this.lost(this.explain(new McpError(ErrorCode.ConnectionClosed, 'Connection closed')))
    }
    client.onerror = () => {
      // Transport noise (a stray stdout line, a dropped SSE stream) is not a failure by itself:
      // a dead connection surfaces as onclose or as a failing request.
    }
    const timeout = this.host.options.connectTimeoutMs
    try {
      await client.connect(transport, { timeout })
      const tools = await this.listAll(client)
      if (this.disposed) throw new Error('disposed')
      this.client = client
      this.validator = compilerOf(client)
      live = true
      this.sync(tools)
      this.syncResourceTools(client.getServerCapabilities()?.resources !== undefined)
      await this.listCatalog(client, 'prompts')
      await this.listCatalog(client, 'resources')
    } catch (error) {
      // Described before the close below terminates the process, so a refused handshake or list
      // is not reported as the SIGTERM that close sends.
      const reason = this.explain(error)
      await client.close().catch(() => {})
      throw new ConnectFailure(reason, { cause: error })
    }
    const recovered = this.failures > 0 || this.restarts > 0
    this.lastError = undefined
    this.nextRetryAt = undefined
    clearTimeout(this.stableTimer)
    this.stableTimer = setTimeout(() => (this.failures = 0), this.host.options.retry.stableMs)
    this.stableTimer.unref?.()
    this.setState(
      'connected',
      recovered ? `MCP server "${this.name}" is connected again (${this.registered.size} tools).` : undefined,
    )
    this.host.onCatalog?.(this)
  }

  /** The prompts, resources and resource templates the server offered when last listed. */
  catalog(): { prompts: Prompt[]; resources: Resource[]; templates: ResourceTemplate[] } {
    return { prompts: [...this.prompts], resources: [...this.resources], templates: [...this.templates] }
  }

  /**
   * Lists every page of the server's prompts, or of its resources and templates, when its
   * capabilities offer them. A listing that fails leaves that part empty and logs why: prompts
   * and resources are extras, the server's tools still load.
   */
  private async listCatalog(client: Client, kind: 'prompts' | 'resources'): Promise<void> {
    const capabilities = client.getServerCapabilities()
    const timeout = this.host.options.connectTimeoutMs
    const pages = async <T>(
      read: (cursor: string | undefined) => Promise<{ nextCursor?: string } & Record<string, unknown>>,
      field: string,
    ): Promise<T[]> => {
      const out: T[] = []
      const seen = new Set<string>()
      let cursor: string | undefined
      do {
        const page = await read(cursor)
        out.push(...((page[field] as T[] | undefined) ?? []))
        cursor = page.nextCursor
        if (cursor !== undefined && seen.has(cursor)) break
        if (cursor !== undefined) seen.add(cursor)
      } while (cursor)
      return out
    }
    const params = (cursor: string | undefined) => (cursor ? { cursor } : undefined)
    try {
      if (kind === 'prompts') {
        this.prompts = capabilities?.prompts
          ? await pages<Prompt>((c) => client.listPrompts(params(c), { timeout }), 'prompts')
          : []
      } else if (capabilities?.resources) {
        this.resources = await pages<Resource>((c) => client.listResources(params(c), { timeout }), 'resources')
        this.templates = await pages<ResourceTemplate>(
          (c) => client.listResourceTemplates(params(c), { timeout }),
          'resourceTemplates',
        ).catch(() => [])
      } else {
        this.resources = []
        this.templates = []
      }
    } catch (error) {
      this.host.ctx
        .logger('mcp')
        .warn('MCP server "%s": listing its %s failed: %s', this.name, kind, this.explain(error))
    }
  }

  /** A `prompts/list_changed` or `resources/list_changed`: list again and tell the host. */
  private async refreshCatalog(client: Client, kind: 'prompts' | 'resources'): Promise<void> {
    await this.listCatalog(client, kind)
    if (this.client === client && !this.disposed) this.host.onCatalog?.(this)
  }

  /** `prompts/get`: the prompt `name` with its arguments filled in. */
  async getPrompt(name: string, args: Record<string, string>, signal?: AbortSignal): Promise<GetPromptResult> {
    const client = await this.whenConnected(signal ?? new AbortController().signal)
    if (!client) throw new Error(`the MCP server "${this.name}" is not connected (${this.lastError ?? this.state})`)
    try {
      return await client.getPrompt(
        { name, arguments: args },
        { timeout: this.spec.timeoutMs ?? this.host.options.callTimeoutMs, ...(signal ? { signal } : {}) },
      )
    } catch (error) {
      throw new Error(this.explain(error instanceof Error ? error.message : String(error)))
    }
  }

  /** `resources/read` of one URI. */
  async readResource(uri: string, signal?: AbortSignal): Promise<ReadResourceResult> {
    const client = await this.whenConnected(signal ?? new AbortController().signal)
    if (!client) throw new Error(`the MCP server "${this.name}" is not connected (${this.lastError ?? this.state})`)
    try {
      return await client.readResource(
        { uri },
        { timeout: this.spec.timeoutMs ?? this.host.options.callTimeoutMs, ...(signal ? { signal } : {}) },
      )
    } catch (error) {
      throw new Error(this.explain(error instanceof Error ? error.message : String(error)))
    }
  }

  /**
   * Every page of `tools/list`, read with a schema that checks only the page: `client.listTools()`
   * validates the whole list at once (one malformed tool, or an output schema ajv cannot compile,
   * rejects it and with it the server), so each tool is checked on its own in `sync`.
   */
  private async listAll(client: Client): Promise<unknown[]> {
    const { PaginatedResultSchema } = loadedSdk!
    const tools: unknown[] = []
    let cursor: string | undefined
    const seen = new Set<string>()
    do {
      const page = await client.request(
        { method: 'tools/list', ...(cursor ? { params: { cursor } } : {}) },
        PaginatedResultSchema,
        { timeout: this.host.options.connectTimeoutMs },
      )
      const listed = (page as { tools?: unknown }).tools
      if (!Array.isArray(listed)) throw new Error('the server answered tools/list without a tools array')
      tools.push(...listed)
      cursor = page.nextCursor
      if (cursor !== undefined) {
        if (seen.has(cursor)) break
        seen.add(cursor)
      }
    } while (cursor)
    return tools
  }

  private async refresh(client: Client): Promise<void> {
    try {
      const tools = await this.listAll(client)
      if (this.client === client && !this.disposed) {
        this.sync(tools)
        this.host.onStatus(this.status())
      }
    } catch {
      // A failed refresh keeps the previous list; a dead connection is handled by onclose.
    }
  }

  /** The connection dropped after it was up: tools stay registered while the server restarts. */
  private lost(reason: string): void {
    const client = this.client
    this.client = undefined
    clearTimeout(this.stableTimer)
    void client?.close().catch(() => {})
    this.restarts++
    this.failures++
    this.lastError = reason
    const { maxAttempts } = this.host.options.retry
    if (this.failures >= maxAttempts) {
      this.setState(
        'failed',
        `MCP server "${this.name}" stopped (${reason}) and failed ${this.failures} times in a row; it is not restarted. Its tools are unavailable.`,
      )
      return
    }
    const delay = this.delayFor(this.failures)
    this.nextRetryAt = Date.now() + delay
    this.setState(
      'retrying',
      `MCP server "${this.name}" stopped (${reason}); restarting in ${(delay / 1000).toFixed(1)} s.`,
    )
    this.timer = setTimeout(() => void this.run(), delay)
    this.timer.unref?.()
  }

  /**
   * Checks each listed tool on its own: the SDK's tool schema, a task-only tool (dsh calls tools
   * directly), an output schema the validator cannot compile. Valid tools are registered (see
   * `register`); the rest are skipped with a notice naming each and why.
   */
  private sync(listed: unknown[]): void {
    const { ToolSchema } = loadedSdk!
    const tools: Tool[] = []
    const skipped: Array<{ tool: string; reason: string }> = []
    const checks = new Map<string, OutputCheck>()
    const nameOf = (raw: unknown) => {
      const name = (raw as { name?: unknown } | null)?.name
      return typeof name === 'string' && name !== '' ? name : JSON.stringify(name ?? null)
    }
    for (const raw of listed) {
      const parsed = ToolSchema.safeParse(raw)
      if (!parsed.success) {
        skipped.push({
          tool: nameOf(raw),
          reason: `its definition does not follow the MCP schema (${zodSummary(parsed.error)})`,
        })
        continue
      }
      const tool = parsed.data as Tool
      if (tool.execution?.taskSupport === 'required') {
        skipped.push({ tool: tool.name, reason: 'it can only run as an MCP task, which dsh does not start' })
        continue
      }
      if (tool.outputSchema && this.validator) {
        try {
          checks.set(tool.name, this.validator.getValidator(tool.outputSchema))
        } catch (error) {
          skipped.push({ tool: tool.name, reason: `its output schema is invalid (${firstLine(error)})` })
          continue
        }
      }
      tools.push(tool)
    }
    this.listed = tools
    this.listSkipped = skipped
    this.outputChecks = checks
    this.register()
  }

  /**
   * Registers new tools, replaces changed ones and removes vanished ones. A tool the registry
   * refuses (its input schema) is skipped like the ones `sync` refused. Names another server of the
   * same scope also claims are registered under a hashed name (see NameBoard).
   */
  private register(): void {
    const skipped = [...this.listSkipped]
    const plain = new Map<string, Tool>()
    const taken = new Set<string>()
    for (const tool of this.listed) {
      const name = toolName(this.name, tool.name, taken)
      if (taken.has(name)) continue
      taken.add(name)
      plain.set(name, tool)
    }
    const changed = this.board.update(this.name, new Map([...plain].map(([name, tool]) => [name, tool.name])), () => {
      if (!this.disposed) {
        this.register()
        this.host.onStatus(this.status())
      }
    })
    const next = new Map<string, Tool>()
    for (const [name, tool] of plain)
      next.set(this.board.contested(name) ? hashedToolName(this.name, tool.name) : name, tool)
    for (const [name, entry] of this.registered) {
      const tool = next.get(name)
      if (!tool || keyOf(tool) !== entry.key) {
        entry.dispose()
        this.registered.delete(name)
      }
    }
    for (const [name, tool] of next) {
      if (this.registered.has(name)) continue
      try {
        const dispose = this.host.ctx.tools.register<Record<string, unknown>>({
          name,
          description: this.describeTool(tool),
          parameters: parametersOf(tool),
          ...(this.scope !== undefined ? { scope: this.scope } : {}),
          concurrencySafe: tool.annotations?.readOnlyHint === true,
          execute: (args, call) => this.call(tool.name, args, call),
        })
        this.registered.set(name, { raw: tool.name, key: keyOf(tool), dispose })
      } catch (error) {
        skipped.push({ tool: tool.name, reason: `${REGISTRY_REASON}${firstLine(error)}` })
      }
    }
    this.skipped = skipped
    this.noticeSkips()
    for (const name of changed) {
      const claims = this.board.claimants(name)
      if (claims.length < 2) continue
      // One notice per newly contested name, from the server whose listing made it so.
      const list = claims
        .map((c) => `${hashedToolName(c.server, c.tool)} (server "${c.server}", tool "${c.tool}")`)
        .join(', ')
      this.host.onStatus(
        this.status(),
        `MCP servers ${claims.map((c) => `"${c.server}"`).join(' and ')} both offer a tool named ${name}; to keep them apart, each is registered under a name with a hash suffix: ${list}.`,
      )
    }
  }

  /** One notice for the skips not reported yet, naming the server, each tool and why. */
  private noticeSkips(): void {
    const fresh = this.skipped.filter((s) => !this.reported.has(`${s.tool}\u0000${s.reason}`))
    if (fresh.length === 0) return
    for (const s of fresh) this.reported.add(`${s.tool}\u0000${s.reason}`)
    const list = fresh.map((s) => `tool "${s.tool}" (${s.reason})`).join('; ')
    this.host.onStatus(this.status(), `MCP server "${this.name}": skipped ${list}. Its other tools are available.`)
  }

  private describeTool(tool: Tool): string {
    const text = (tool.description ?? tool.title ?? '').trim() || `Tool ${tool.name} of the MCP server "${this.name}".`
    const max = this.host.options.maxDescriptionChars
    return text.length > max ? `${text.slice(0, max - 3)}...` : text
  }

  private whenConnected(signal: AbortSignal): Promise<Client | undefined> {
    if (this.client && this.state === 'connected') return Promise.resolve(this.client)
    if (this.state === 'failed' || this.state === 'closed' || this.disposed) return Promise.resolve(undefined)
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        resolve(this.state === 'connected' ? this.client : undefined)
      }
      const timer = setTimeout(done, this.host.options.reconnectWaitMs)
      signal.addEventListener('abort', done, { once: true })
      this.waiters.push(done)
    })
  }

  async call(tool: string, args: Record<string, unknown>, call: ToolCallContext): Promise<ToolOutput> {
    const client = await this.whenConnected(call.signal)
    if (call.signal.aborted) throw call.signal.reason ?? new Error('aborted')
    if (!client) {
      const why = this.lastError ? ` (${this.lastError})` : ''
      const state =
        this.state === 'failed'
          ? 'failed and is not being restarted'
          : this.state === 'closed'
            ? 'was removed'
            : 'is still (re)connecting'
      return failure(
        'MCP_UNAVAILABLE',
        `the MCP server "${this.name}" ${state}${why}, so tool "${call.name}" did not run. ${this.state === 'failed' || this.state === 'closed' ? 'Do the task without this tool.' : 'Try again in a moment.'}`,
      )
    }
    const timeout = this.spec.timeoutMs ?? this.host.options.callTimeoutMs
    this.callSessions.push(call.sessionId)
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal: call.signal,
        timeout,
        resetTimeoutOnProgress: true,
        maxTotalTimeout: Math.max(timeout, this.host.options.maxCallMs),
        onprogress: (progress) =>
          this.host.onProgress?.({
            server: this.name,
            tool,
            callId: call.callId,
            ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}),
            progress: progress.progress,
            ...(progress.total !== undefined ? { total: progress.total } : {}),
            ...(progress.message !== undefined ? { message: progress.message } : {}),
          }),
      })
      const check = this.outputChecks.get(tool)
      if (check && !result.isError) {
        if (!result.structuredContent) {
          return failure(
            'MCP_ERROR',
            `tool "${call.name}" (MCP server "${this.name}") declares an output schema but returned no structured content.`,
          )
        }
        const verdict = check(result.structuredContent)
        if (!verdict.valid) {
          return failure(
            'MCP_ERROR',
            `tool "${call.name}" (MCP server "${this.name}") returned structured content that does not match its output schema: ${verdict.errorMessage ?? 'invalid'}.`,
          )
        }
      }
      return mapResult(result, { server: this.name, tool })
    } catch (error) {
      if (call.signal.aborted) throw error
      const { ErrorCode, McpError } = loadedSdk!
      if (
        error instanceof McpError &&
        error.code === MESSAGE_TOO_LARGE &&
        (error.data as TooLargeData | undefined)?.reason === 'message-too-large'
      ) {
        const data = error.data as TooLargeData
        return failure(
          'MCP_TOO_LARGE',
          `the answer of tool "${call.name}" (MCP server "${this.name}") was ${formatBytes(data.bytes)}, over the ${formatBytes(data.limit)} message cap, so it was dropped. Ask for less (a smaller range, a filter, a page).`,
        )
      }
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        return failure(
          'MCP_TIMEOUT',
          `tool "${call.name}" (MCP server "${this.name}") did not answer within ${formatMs(timeout)}; the request was cancelled on the server. Its effects, if any, may be partial.`,
        )
      }
      const auth = authErrorOf(error)
      if (auth) {
        return failure(
          'MCP_AUTH',
          `MCP server "${this.name}" refused the call to "${call.name}" and signing in again did not work: ${this.explain(auth.message)}`,
        )
      }
      if ((error instanceof McpError && error.code === ErrorCode.ConnectionClosed) || isNetworkError(error)) {
        const reason = this.explain(error)
        if (this.client === client) this.lost(reason)
        return failure(
          'MCP_DISCONNECTED',
          `the connection to MCP server "${this.name}" was lost during the call (${reason}); it is being restarted. The tool may or may not have run; check before calling it again.`,
        )
      }
      const message = this.explain(error instanceof Error ? error.message : String(error))
      return failure('MCP_ERROR', `MCP server "${this.name}" refused the call to "${call.name}": ${message}`)
    } finally {
      const at = this.callSessions.lastIndexOf(call.sessionId)
      if (at >= 0) this.callSessions.splice(at, 1)
    }
  }

  /**
   * A server that offers resources gets two more tools: `list_resources` (resources and templates,
   * first page each) and `read_resource` (one URI, contents mapped like a tool result's embedded
   * resources). A server tool of the same name wins.
   */
  private syncResourceTools(offered: boolean): void {
    this.offersResources = offered
    if (!offered) {
      for (const dispose of this.resourceTools.values()) dispose()
      this.resourceTools.clear()
      return
    }
    const add = (
      raw: string,
      description: string,
      parameters: JsonSchema,
      run: (client: Client, args: Record<string, unknown>, call: ToolCallContext) => Promise<ToolOutput>,
    ) => {
      const name = toolName(this.name, raw, new Set())
      if (this.resourceTools.has(name) || this.registered.has(name)) return
      try {
        const dispose = this.host.ctx.tools.register<Record<string, unknown>>({
          name,
          description,
          parameters,
          ...(this.scope !== undefined ? { scope: this.scope } : {}),
          concurrencySafe: true,
          execute: async (args, call) => {
            const client = await this.whenConnected(call.signal)
            if (!client)
              return failure(
                'MCP_UNAVAILABLE',
                `the MCP server "${this.name}" is not connected, so "${call.name}" did not run.`,
              )
            try {
              return await run(client, args, call)
            } catch (error) {
              if (call.signal.aborted) throw error
              return failure(
                'MCP_ERROR',
                `MCP server "${this.name}" refused "${call.name}": ${this.explain(error instanceof Error ? error.message : String(error))}`,
              )
            }
          },
        })
        this.resourceTools.set(name, dispose)
      } catch {
        // A name the registry refuses is left out; the server's own tools are unaffected.
      }
    }
    const timeout = () => this.spec.timeoutMs ?? this.host.options.callTimeoutMs
    add(
      'list_resources',
      `Lists the resources (and resource templates) the MCP server "${this.name}" offers: URI, name, type and description. Read one with its read_resource tool.`,
      { type: 'object', properties: { cursor: { type: 'string', description: 'nextCursor of a previous page' } } },
      async (client, args, call) => {
        const cursor = typeof args.cursor === 'string' ? args.cursor : undefined
        const page = await client.listResources(cursor ? { cursor } : undefined, {
          signal: call.signal,
          timeout: timeout(),
        })
        const lines = page.resources.map(
          (r) =>
            `${r.uri}  ${r.name}${r.mimeType ? ` (${r.mimeType})` : ''}${r.description ? ` - ${r.description}` : ''}`,
        )
        if (!cursor) {
          const templates = await client
            .listResourceTemplates(undefined, { signal: call.signal, timeout: timeout() })
            .catch(() => undefined)
          for (const t of templates?.resourceTemplates ?? [])
            lines.push(`${t.uriTemplate}  ${t.name} (template)${t.description ? ` - ${t.description}` : ''}`)
        }
        if (page.nextCursor) lines.push(`More: call again with cursor ${JSON.stringify(page.nextCursor)}.`)
        return { content: lines.length ? lines.join('\n') : `MCP server "${this.name}" lists no resources.` }
      },
    )
    add(
      'read_resource',
      `Reads one resource of the MCP server "${this.name}" by URI (see its list_resources tool; a template's URI with its variables filled in).`,
      { type: 'object', properties: { uri: { type: 'string', description: 'The resource URI' } }, required: ['uri'] },
      async (client, args, call) => {
        const result = await client.readResource({ uri: String(args.uri) }, { signal: call.signal, timeout: timeout() })
        return mapResult({ content: result.contents.map((resource) => ({ type: 'resource', resource })) } as never, {
          server: this.name,
          tool: 'read_resource',
        })
      },
    )
  }

  /** One line about a failure, with every secret of the sign-in replaced. */
  private explain(error: unknown): string {
    const text = typeof error === 'string' ? error : describeFailure(error, this.transport)
    return this.oauth ? this.oauth.scrub(text) : text
  }

  /** Forgets this server's stored sign-in (tokens, registration); false for a server without OAuth. */
  async logout(): Promise<boolean> {
    if (!this.oauth) return false
    await this.oauth.logout()
    return true
  }
}

/** The sign-in failure behind an error (the SDK may wrap what the fetch threw). */
function authErrorOf(error: unknown): McpAuthError | undefined {
  let e: unknown = error
  for (let depth = 0; e && depth < 5; depth++) {
    if (e instanceof McpAuthError) return e
    e = (e as { cause?: unknown }).cause
  }
  return undefined
}

const REGISTRY_REASON = 'the tool registry refused it: '

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return text.split('\n')[0].slice(0, 300)
}

/** The first few issues of a zod error, as `path: message`. */
function zodSummary(error: { issues?: Array<{ path: PropertyKey[]; message: string }> }): string {
  const issues = error.issues ?? []
  const parts = issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length ? issue.path.map(String).join('.') : '(root)'}: ${issue.message}`)
  return parts.join('; ') + (issues.length > 3 ? `; and ${issues.length - 3} more` : '') || 'invalid'
}

function formatBytes(bytes: number): string {
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

function failure(code: string, sentence: string): ToolOutput {
  return { content: `Error [${code}]: ${sentence}`, isError: true, error: { code, message: sentence } }
}

function keyOf(tool: Tool): string {
  return JSON.stringify([
    tool.description ?? tool.title ?? '',
    tool.inputSchema ?? null,
    tool.annotations?.readOnlyHint === true,
  ])
}

/** The tool's input schema as registry parameters; a schema without `type: object` is wrapped. */
function parametersOf(tool: Tool): JsonSchema {
  const schema = (tool.inputSchema ?? {}) as Record<string, unknown>
  const { $schema: _ignored, ...rest } = schema
  return { ...rest, type: 'object' } as JsonSchema
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`
}

function isNetworkError(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  if (error.name === 'TypeError' && /fetch failed/i.test(error.message)) return true
  const cause = (error as { cause?: { code?: string } }).cause
  return (
    typeof cause?.code === 'string' &&
    /^(ECONNREFUSED|ECONNRESET|EPIPE|ENOTFOUND|EHOSTUNREACH|UND_ERR_SOCKET)$/.test(cause.code)
  )
}

/** One line about why a connection failed, preferring what the process or network said. */
function describeFailure(error: unknown, transport: Transport | undefined): string {
  if (transport instanceof SubprocessStdioTransport) {
    const exit = transport.describeExit()
    if (exit) return exit
  }
  if (loadedSdk && error instanceof loadedSdk.McpError && error.code === loadedSdk.ErrorCode.RequestTimeout)
    return 'the server did not answer in time'
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    if (cause?.code)
      return `${error.message} (${cause.code}${cause.message && !cause.message.includes(cause.code) ? `: ${cause.message}` : ''})`
    return error.message.split('\n')[0] || error.name
  }
  return String(error)
}
