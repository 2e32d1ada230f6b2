// What `@dsh/mcp-client` adds to the shared vocabulary (session events, Cordis events, `ctx.mcp`)
// and how a server's status reads as a one-line notice.
import type { Context, Logger } from 'cordis'
import type { Session, SessionStore } from '@dsh/session'
import type { LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js'
import type { CheckedServer } from './config.ts'
import type { McpServerStatus } from './connection-types.ts'
import type { McpClient } from './index.ts'
import type { ResourceUpdatedNotice } from './subscriptions.ts'

export type { ResourceUpdatedNotice }

/** The session event a server's trouble (and recovery) is logged as. Not model-visible. */
export interface McpStatusNotice {
  server: string
  state: McpServerStatus['state']
  message: string
  scope?: string
}

/** Progress of a running tool call (the call's card shows it); never sent to the model. */
export interface ToolProgress {
  callId: string
  progress: number
  total?: number
  message?: string
  /** Who reported it, e.g. `mcp:<server>`. */
  source: string
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** An MCP server failed, is retrying, was restarted or recovered; never sent to the model. */
    'mcp/status': McpStatusNotice
    /** A progress notification of a running tool call. */
    'tool/progress': ToolProgress
    /** A resource mentioned in the session changed (its server's notifications/resources/updated). */
    'mcp/resource-updated': ResourceUpdatedNotice
  }
}

export interface McpProgress {
  server: string
  tool: string
  callId: string
  sessionId?: string
  progress: number
  total?: number
  message?: string
}

declare module 'cordis' {
  interface Context {
    mcp: McpClient
  }
  interface Events {
    /** Every state change of a server (the status after it). */
    'mcp/status'(status: McpServerStatus, notice?: string): void
    /** A server's prompts, resources or templates were listed again (or it went away). */
    'mcp/catalog'(server: string, scope: string | undefined): void
    /** A progress notification of a running call. */
    'mcp/progress'(progress: McpProgress): void
  }
}

export function staticStatus(entry: CheckedServer & { scope?: string }): McpServerStatus {
  return {
    name: entry.name,
    source: entry.source,
    origin: entry.origin,
    ...(entry.scope !== undefined ? { scope: entry.scope } : {}),
    ...('spec' in entry ? { transport: entry.spec.transport } : {}),
    state: 'invalid' in entry ? 'invalid' : 'disabled',
    tools: [],
    failures: 0,
    restarts: 0,
    ...('invalid' in entry ? { error: entry.invalid } : {}),
  }
}

export function summary(status: McpServerStatus): string {
  switch (status.state) {
    case 'invalid':
      return `MCP server "${status.name}" in ${status.origin} is misconfigured: ${status.error}. It was not started.`
    case 'failed':
      return `MCP server "${status.name}" failed: ${status.error ?? 'unknown error'}. Its tools are unavailable.`
    case 'retrying':
      return `MCP server "${status.name}" is retrying after: ${status.error ?? 'unknown error'}.`
    default:
      return `MCP server "${status.name}" is ${status.state}.`
  }
}

/** Appends a notice to a session; a session that refuses it is logged, never thrown at. */
function appendNotice(ctx: Context, session: Session, notice: McpStatusNotice): void {
  try {
    session.append('mcp/status', notice)
  } catch (error) {
    ctx.logger('mcp').warn('could not log an MCP notice in session %s: %s', session.id, (error as Error).message)
  }
}

/**
 * Logs server trouble in live sessions as `mcp/status`: every notice of a state change, and to a
 * session created after a server already failed, one summary per such (global) server.
 */
export function logNotices(ctx: Context, list: () => McpServerStatus[]): void {
  ctx.on('session/created', (session) => {
    for (const status of list()) {
      if (status.state === 'connected' || status.state === 'starting' || status.state === 'disabled') continue
      if (status.scope !== undefined) continue
      appendNotice(ctx, session, { server: status.name, state: status.state, message: summary(status) })
    }
  })
  ctx.on('mcp/status', (status, notice) => {
    if (!notice) return
    for (const session of ctx.sessions.list()) {
      appendNotice(ctx, session, {
        server: status.name,
        state: status.state,
        message: notice,
        ...(status.scope !== undefined ? { scope: status.scope } : {}),
      })
    }
  })
}

/** A call's progress, appended to the calling session as `tool/progress` (the call's card draws it). */
export function appendProgress(sessions: SessionStore | undefined, progress: McpProgress, logger: Logger): void {
  const session = progress.sessionId !== undefined ? sessions?.get(progress.sessionId) : undefined
  if (!session) return
  try {
    session.append('tool/progress', {
      callId: progress.callId,
      progress: progress.progress,
      ...(progress.total !== undefined ? { total: progress.total } : {}),
      ...(progress.message !== undefined ? { message: progress.message } : {}),
      source: `mcp:${progress.server}`,
    })
  } catch (error) {
    logger.warn('could not log tool progress: %s', (error as Error).message)
  }
}

/** A server's `notifications/message` in the dsh log: debug to debug, info and notice to info, warning to warn, the rest to error. */
export function logServerMessage(logger: Logger, server: string, params: LoggingMessageNotification['params']): void {
  const data = typeof params.data === 'string' ? params.data : JSON.stringify(params.data)
  const text = `MCP server "${server}"${params.logger ? ` (${params.logger})` : ''} [${params.level}]: ${data}`
  if (params.level === 'debug') logger.debug(text)
  else if (params.level === 'info' || params.level === 'notice') logger.info(text)
  else if (params.level === 'warning') logger.warn(text)
  else logger.error(text)
}
