// The state the server keeps per client connection and per ACP session, and the one way an update
// leaves for the client (chained, so notifications keep event order).
import type * as acp from '@agentclientprotocol/sdk'
import type { Agent } from '@dsh/agent'
import type { Translator } from './translate.ts'

export interface Connection {
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

export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** One line on stderr (stdout is the protocol). */
export function log(message: string): void {
  process.stderr.write(`dsh-acp: ${message}\n`)
}

/** Queues `update` for the session's client after the updates already queued; a failure is logged. */
export function send(live: LiveSession, update: acp.SessionUpdate): void {
  const client = live.connection.client
  if (!client) return
  live.queue = live.queue
    .then(() => client.notify('session/update', { sessionId: live.id, update }))
    .catch((error) => log(`session/update for ${live.id} failed: ${errorText(error)}`))
}
