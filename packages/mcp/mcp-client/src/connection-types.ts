// The vocabulary of one MCP server connection: its state and status as `ctx.mcp` reports them,
// the options every connection of a service shares, and what a connection needs from its host.
import type { Context } from 'cordis'
import type { LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js'
import type { ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import type { SubprocessService } from '@dsh/subprocess'
import type { McpSource, McpTransportKind } from './config.ts'
import type { AuthStore, ConsentRequest } from '@dsh/mcp-oauth'
import type { McpServerConnection } from './server.ts'

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
  /** A `notifications/resources/updated` of the live client (a subscribed resource changed). */
  onResourceUpdated?(connection: McpServerConnection, uri: string): void
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

/** The wait before retry number `failures`: doubling from `initialDelayMs`, capped, half of it random. */
export function retryDelay(retry: RetryOptions, failures: number): number {
  const { initialDelayMs, maxDelayMs } = retry
  const ceiling = Math.min(maxDelayMs, initialDelayMs * 2 ** Math.max(0, failures - 1))
  // Half fixed, half random: servers restarted together do not retry in lockstep.
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2))
}
