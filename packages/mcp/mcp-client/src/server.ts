// One MCP server: connects (with jittered exponential backoff), registers the server's tools on
// `ctx.tools`, follows `notifications/tools/list_changed`, restarts after a crash, and forwards
// calls with a per-call timeout and cancellation. Everything it goes through is reported as a
// status change; the service turns the interesting ones into logged notices.
import type { Context } from 'cordis'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import { loadSdk, sdk as loadedSdk, type Client, type Sdk } from './sdk.ts'
import type { SubprocessService } from '@dsh/subprocess'
import type { JsonSchema, ToolCallContext, ToolOutput } from '@dsh/tools'
import type { McpSource, McpTransportKind, ServerSpec } from './config.ts'
import { toolName } from './names.ts'
import { mapResult } from './results.ts'
import { SubprocessStdioTransport } from './stdio-transport.ts'

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
  /** Failed attempts since the last stable connection. */
  failures: number
  /** Restarts after a connection was lost. */
  restarts: number
  /** The last failure, one line. */
  error?: string
  /** Epoch ms of the next attempt while `retrying`. */
  nextRetryAt?: number
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
}

export interface ConnectionHost {
  /** The plugin context tools are registered on. */
  ctx: Context
  subprocess: SubprocessService
  options: ConnectionOptions
  /** Called on every state change; `notice` is set for changes a user should hear about. */
  onStatus(status: McpServerStatus, notice?: string): void
  onProgress?(info: { server: string; tool: string; callId: string; progress: number; total?: number; message?: string }): void
}

const CLIENT_INFO = { name: 'dsh', version: '0.1.0' }

interface Registered {
  raw: string
  key: string
  dispose(): void
}

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
  private waiters: Array<() => void> = []
  private running = false
  /** Settles once the first connection attempt has finished, whatever its outcome. */
  readonly firstAttempt: Promise<void>
  readonly createdAt = Date.now()
  private settleFirst!: () => void

  constructor(
    readonly name: string,
    readonly spec: ServerSpec,
    readonly source: McpSource,
    readonly origin: string,
    private readonly host: ConnectionHost,
    readonly scope?: string,
  ) {
    this.firstAttempt = new Promise((resolve) => (this.settleFirst = resolve))
  }

  status(): McpServerStatus {
    return {
      name: this.name,
      source: this.source,
      origin: this.origin,
      ...(this.scope !== undefined ? { scope: this.scope } : {}),
      transport: this.spec.transport,
      state: this.state,
      tools: [...this.registered.keys()].sort(),
      failures: this.failures,
      restarts: this.restarts,
      ...(this.lastError !== undefined ? { error: this.lastError } : {}),
      ...(this.state === 'retrying' && this.nextRetryAt !== undefined ? { nextRetryAt: this.nextRetryAt } : {}),
    }
  }

  start(): void {
    void this.run()
  }

  /** Connects again now: a `failed` server starts over, a `retrying` one skips its wait. */
  restart(): void {
    if (this.disposed) return
    if (this.state === 'failed') {
      this.failures = 0
      void this.run()
    } else if (this.state === 'retrying') {
      if (this.wakeRetry) this.wakeRetry()
      else {
        clearTimeout(this.timer)
        void this.run()
      }
    }
  }

  async dispose(): Promise<void> {
    if (this.disposed) return
    this.disposed = true
    clearTimeout(this.timer)
    clearTimeout(this.stableTimer)
    this.wakeRetry?.()
    for (const entry of this.registered.values()) entry.dispose()
    this.registered.clear()
    const client = this.client
    this.client = undefined
    this.setState('closed')
    this.settleFirst()
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
          this.lastError = describeFailure(error, this.transport)
          this.settleFirst()
          const { maxAttempts } = this.host.options.retry
          if (this.failures >= maxAttempts) {
            this.setState('failed', `MCP server "${this.name}" failed to start after ${this.failures} attempt${this.failures === 1 ? '' : 's'}: ${this.lastError}. Its tools are unavailable.`)
            return
          }
          const delay = this.delayFor(this.failures)
          this.nextRetryAt = Date.now() + delay
          this.setState('retrying', `MCP server "${this.name}" failed to start (attempt ${this.failures} of ${maxAttempts}): ${this.lastError}. Retrying in ${(delay / 1000).toFixed(1)} s.`)
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
    if (spec.transport === 'stdio') return new SubprocessStdioTransport(sdk, this.host.subprocess, spec, this.host.options.killGraceMs)
    const requestInit = { headers: spec.headers }
    if (spec.transport === 'sse') return new sdk.SSEClientTransport(new URL(spec.url), { requestInit })
    return new sdk.StreamableHTTPClientTransport(new URL(spec.url), { requestInit })
  }

  private async connectOnce(): Promise<void> {
    const sdk = await loadSdk()
    const { ErrorCode, McpError } = sdk
    const transport = this.createTransport(sdk)
    this.transport = transport
    const client = new sdk.Client(CLIENT_INFO, {
      capabilities: {},
      listChanged: {
        tools: {
          autoRefresh: false,
          debounceMs: 100,
          onChanged: () => {
            if (this.client === client) void this.refresh(client)
          },
        },
      },
    })
    let live = false
    client.onclose = () => {
      if (live && this.client === client && !this.disposed) this.lost(describeFailure(new McpError(ErrorCode.ConnectionClosed, 'Connection closed'), transport))
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
      live = true
      this.sync(tools)
    } catch (error) {
      await client.close().catch(() => {})
      throw error
    }
    const recovered = this.failures > 0 || this.restarts > 0
    this.lastError = undefined
    this.nextRetryAt = undefined
    clearTimeout(this.stableTimer)
    this.stableTimer = setTimeout(() => (this.failures = 0), this.host.options.retry.stableMs)
    this.stableTimer.unref?.()
    this.setState('connected', recovered ? `MCP server "${this.name}" is connected again (${this.registered.size} tools).` : undefined)
  }

  private async listAll(client: Client): Promise<Tool[]> {
    const tools: Tool[] = []
    let cursor: string | undefined
    const seen = new Set<string>()
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.host.options.connectTimeoutMs })
      tools.push(...page.tools)
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
      this.setState('failed', `MCP server "${this.name}" stopped (${reason}) and failed ${this.failures} times in a row; it is not restarted. Its tools are unavailable.`)
      return
    }
    const delay = this.delayFor(this.failures)
    this.nextRetryAt = Date.now() + delay
    this.setState('retrying', `MCP server "${this.name}" stopped (${reason}); restarting in ${(delay / 1000).toFixed(1)} s.`)
    this.timer = setTimeout(() => void this.run(), delay)
    this.timer.unref?.()
  }

  /** Registers new tools, replaces changed ones and removes vanished ones. */
  private sync(tools: Tool[]): void {
    const next = new Map<string, Tool>()
    const taken = new Set<string>()
    for (const tool of tools) {
      if (typeof tool?.name !== 'string' || tool.name === '') continue
      const name = toolName(this.name, tool.name, taken)
      if (taken.has(name)) continue
      taken.add(name)
      next.set(name, tool)
    }
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
          description: this.describe(tool),
          parameters: parametersOf(tool),
          ...(this.scope !== undefined ? { scope: this.scope } : {}),
          concurrencySafe: tool.annotations?.readOnlyHint === true,
          execute: (args, call) => this.call(tool.name, args, call),
        })
        this.registered.set(name, { raw: tool.name, key: keyOf(tool), dispose })
      } catch (error) {
        this.host.ctx.logger('mcp').warn('MCP server "%s": tool %s skipped: %s', this.name, JSON.stringify(tool.name), (error as Error).message)
      }
    }
  }

  private describe(tool: Tool): string {
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
      const state = this.state === 'failed' ? 'failed and is not being restarted' : this.state === 'closed' ? 'was removed' : 'is still (re)connecting'
      return failure('MCP_UNAVAILABLE', `the MCP server "${this.name}" ${state}${why}, so tool "${call.name}" did not run. ${this.state === 'failed' || this.state === 'closed' ? 'Do the task without this tool.' : 'Try again in a moment.'}`)
    }
    const timeout = this.spec.timeoutMs ?? this.host.options.callTimeoutMs
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
            progress: progress.progress,
            ...(progress.total !== undefined ? { total: progress.total } : {}),
            ...(progress.message !== undefined ? { message: progress.message } : {}),
          }),
      })
      return mapResult(result, { server: this.name, tool })
    } catch (error) {
      if (call.signal.aborted) throw error
      const { ErrorCode, McpError } = loadedSdk!
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        return failure('MCP_TIMEOUT', `tool "${call.name}" (MCP server "${this.name}") did not answer within ${formatMs(timeout)}; the request was cancelled on the server. Its effects, if any, may be partial.`)
      }
      if ((error instanceof McpError && error.code === ErrorCode.ConnectionClosed) || isNetworkError(error)) {
        const reason = describeFailure(error, this.transport)
        if (this.client === client) this.lost(reason)
        return failure('MCP_DISCONNECTED', `the connection to MCP server "${this.name}" was lost during the call (${reason}); it is being restarted. The tool may or may not have run; check before calling it again.`)
      }
      const message = error instanceof Error ? error.message : String(error)
      return failure('MCP_ERROR', `MCP server "${this.name}" refused the call to "${call.name}": ${message}`)
    }
  }
}

function failure(code: string, sentence: string): ToolOutput {
  return { content: `Error [${code}]: ${sentence}`, isError: true, error: { code, message: sentence } }
}

function keyOf(tool: Tool): string {
  return JSON.stringify([tool.description ?? tool.title ?? '', tool.inputSchema ?? null, tool.annotations?.readOnlyHint === true])
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
  return typeof cause?.code === 'string' && /^(ECONNREFUSED|ECONNRESET|EPIPE|ENOTFOUND|EHOSTUNREACH|UND_ERR_SOCKET)$/.test(cause.code)
}

/** One line about why a connection failed, preferring what the process or network said. */
function describeFailure(error: unknown, transport: Transport | undefined): string {
  if (transport instanceof SubprocessStdioTransport) {
    const exit = transport.describeExit()
    if (exit) return exit
  }
  if (loadedSdk && error instanceof loadedSdk.McpError && error.code === loadedSdk.ErrorCode.RequestTimeout) return 'the server did not answer in time'
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    if (cause?.code) return `${error.message} (${cause.code}${cause.message && !cause.message.includes(cause.code) ? `: ${cause.message}` : ''})`
    return error.message.split('\n')[0] || error.name
  }
  return String(error)
}
