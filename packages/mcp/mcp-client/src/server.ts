// One MCP server: connects (jittered exponential backoff), registers the server's tools on
// `ctx.tools` (each listed tool checked on its own, see tool-list.ts and tool-registrations.ts), follows list_changed,
// restarts after a crash, and forwards calls with a per-call timeout and cancellation. Every step
// is reported as a status change; the service turns the interesting ones into logged notices.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { GetPromptResult, ReadResourceResult } from '@modelcontextprotocol/sdk/types.js'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import { loadSdk, type Client } from './sdk.ts'
import type { McpSource, ServerSpec } from './config.ts'
import { retryDelay, type ConnectionHost, type McpServerState, type McpServerStatus } from './connection-types.ts'
import { createClient, createTransport } from './client-wiring.ts'
import { callFailure, describeFailure, failure, authErrorOf } from './failures.ts'
import { toolName } from './names.ts'
import type { McpOAuth } from '@dsh/mcp-oauth'
import { resourceTools } from './resource-tools.ts'
import { mapResult } from './results.ts'
import { ServerCatalog, type CatalogKind, type CatalogSnapshot } from './server-catalog.ts'
import { compilerOf, listAllTools, outputProblem, type SchemaCompiler } from './tool-list.ts'
import { ToolRegistrations } from './tool-registrations.ts'

export type {
  ConnectionHost,
  ConnectionOptions,
  McpServerState,
  McpServerStatus,
  RetryOptions,
} from './connection-types.ts'

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
  /** The server's tools on `ctx.tools` (tool-registrations.ts). */
  private readonly tools: ToolRegistrations
  private validator?: SchemaCompiler
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
  private readonly offers = new ServerCatalog()
  /** Whether the live server's capabilities offer resources (it may then be `@`-mentioned), and subscriptions to them. */
  offersResources = false
  subscribable = false

  constructor(
    readonly name: string,
    readonly spec: ServerSpec,
    readonly source: McpSource,
    readonly origin: string,
    private readonly host: ConnectionHost,
    readonly scope?: string,
  ) {
    this.firstAttempt = new Promise((resolve) => (this.settleFirst = resolve))
    this.tools = new ToolRegistrations(name, host, scope, {
      disposed: () => this.disposed,
      notify: (notice) => this.host.onStatus(this.status(), notice),
      call: (tool, args, call) => this.call(tool, args, call),
    })
  }

  status(): McpServerStatus {
    return {
      name: this.name,
      source: this.source,
      origin: this.origin,
      ...(this.scope !== undefined ? { scope: this.scope } : {}),
      transport: this.spec.transport,
      state: this.state,
      tools: [...this.tools.names(), ...this.resourceTools.keys()].sort(),
      ...(this.tools.skipped.length ? { skipped: this.tools.skipped.map((s) => ({ ...s })) } : {}),
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
    this.tools.clear()
    for (const dispose of this.resourceTools.values()) dispose()
    this.resourceTools.clear()
    this.offers.clear()
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
          const delay = retryDelay(this.host.options.retry, this.failures)
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

  private async connectOnce(): Promise<void> {
    const sdk = await loadSdk()
    const { ErrorCode, McpError } = sdk
    const made = createTransport(sdk, this.name, this.spec, this.host, this.oauth)
    this.oauth = made.oauth
    const transport = made.transport
    this.transport = transport
    const client = createClient(sdk, {
      toolsChanged: (changed) => {
        if (this.client === changed) void this.refresh(changed)
      },
      catalogChanged: (changed, kind) => {
        if (this.client === changed) void this.refreshCatalog(changed, kind)
      },
      resourceUpdated: (changed, uri) => this.client === changed && this.host.onResourceUpdated?.(this, uri),
      log: (params) => this.host.onLog?.(this.name, params),
      elicit: (params, signal) => this.host.elicit(this.name, params, this.callSessions.at(-1), signal),
      workspace: this.host.workspace,
    })
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
      const tools = await listAllTools(client, this.host.options.connectTimeoutMs)
      if (this.disposed) throw new Error('disposed')
      this.client = client
      this.validator = compilerOf(client)
      live = true
      this.tools.sync(tools, this.validator)
      this.syncResourceTools(client.getServerCapabilities()?.resources !== undefined)
      this.subscribable = client.getServerCapabilities()?.resources?.subscribe === true
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
      recovered ? `MCP server "${this.name}" is connected again (${this.tools.size} tools).` : undefined,
    )
    this.host.onCatalog?.(this)
  }

  /** The prompts, resources and resource templates the server offered when last listed. */
  catalog(): CatalogSnapshot {
    return this.offers.snapshot()
  }

  /** Lists prompts or resources; a failure leaves that part as it was and is logged. */
  private async listCatalog(client: Client, kind: CatalogKind): Promise<void> {
    try {
      await this.offers.list(client, kind, this.host.options.connectTimeoutMs)
    } catch (error) {
      this.host.ctx
        .logger('mcp')
        .warn('MCP server "%s": listing its %s failed: %s', this.name, kind, this.explain(error))
    }
  }

  /** A `prompts/list_changed` or `resources/list_changed`: list again and tell the host. */
  private async refreshCatalog(client: Client, kind: CatalogKind): Promise<void> {
    await this.listCatalog(client, kind)
    if (this.client === client && !this.disposed) this.host.onCatalog?.(this)
  }

  /** `prompts/get`: the prompt `name` with its arguments filled in. */
  getPrompt(name: string, args: Record<string, string>, signal?: AbortSignal): Promise<GetPromptResult> {
    return this.request(signal, (client, options) => client.getPrompt({ name, arguments: args }, options))
  }

  /** `resources/read` of one URI. */
  readResource(uri: string, signal?: AbortSignal): Promise<ReadResourceResult> {
    return this.request(signal, (client, options) => client.readResource({ uri }, options))
  }

  /** One request once connected, with the call timeout; rejects with one explained line. */
  async request<T>(
    signal: AbortSignal | undefined,
    send: (client: Client, options: { timeout: number; signal?: AbortSignal }) => Promise<T>,
  ): Promise<T> {
    const client = await this.whenConnected(signal ?? new AbortController().signal)
    if (!client) throw new Error(`the MCP server "${this.name}" is not connected (${this.lastError ?? this.state})`)
    try {
      return await send(client, {
        timeout: this.spec.timeoutMs ?? this.host.options.callTimeoutMs,
        ...(signal ? { signal } : {}),
      })
    } catch (error) {
      throw new Error(this.explain(error instanceof Error ? error.message : String(error)))
    }
  }

  private async refresh(client: Client): Promise<void> {
    try {
      const tools = await listAllTools(client, this.host.options.connectTimeoutMs)
      if (this.client === client && !this.disposed) {
        this.tools.sync(tools, this.validator)
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
    const delay = retryDelay(this.host.options.retry, this.failures)
    this.nextRetryAt = Date.now() + delay
    this.setState(
      'retrying',
      `MCP server "${this.name}" stopped (${reason}); restarting in ${(delay / 1000).toFixed(1)} s.`,
    )
    this.timer = setTimeout(() => void this.run(), delay)
    this.timer.unref?.()
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
      const wrong = outputProblem(this.tools.outputCheck(tool), result, call.name, this.name)
      return wrong ? failure('MCP_ERROR', wrong) : mapResult(result, { server: this.name, tool })
    } catch (error) {
      if (call.signal.aborted) throw error
      const mapped = callFailure(error, {
        server: this.name,
        tool: call.name,
        timeout,
        explain: (e) => this.explain(e),
      })
      if (mapped.lost !== undefined && this.client === client) this.lost(mapped.lost)
      return mapped.output
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
    const timeout = () => this.spec.timeoutMs ?? this.host.options.callTimeoutMs
    const connected = (signal: AbortSignal) => this.whenConnected(signal)
    for (const tool of resourceTools(this.name, timeout, connected, (error) => this.explain(error))) {
      const name = toolName(this.name, tool.raw, new Set())
      if (this.resourceTools.has(name) || this.tools.has(name)) continue
      try {
        const dispose = this.host.ctx.tools.register<Record<string, unknown>>({
          name,
          description: tool.description,
          parameters: tool.parameters,
          ...(this.scope !== undefined ? { scope: this.scope } : {}),
          concurrencySafe: true,
          execute: tool.execute,
        })
        this.resourceTools.set(name, dispose)
      } catch {
        // A name the registry refuses is left out; the server's own tools are unaffected.
      }
    }
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
