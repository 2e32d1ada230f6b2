// @dsh/session-checkpoint-policy: semantic durability points for persisted agents. The log is made
// durable before a model request's response is taken (the flush overlaps the request when the loop
// offers `defer`, else before the request leaves), before a top-level tool body runs (after
// logging `tool/started`), and at each pre-step; when that fails, what it guards does not happen.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/agent'
import type { ExecutePayload, ToolOutput } from '@dsh/tools'
import type { Session } from '@dsh/session'
import type {} from '@dsh/session-persistence'
import { plainService } from '@dsh/plain-service'

export const name = '@dsh/session-checkpoint-policy'
export const inject = ['durableSessions', 'sessions']

export interface Config {
  /** Flush before each model request (`agent/request`). */
  beforeRequest?: boolean
  /** Log `tool/started` and flush before a top-level tool body runs (`tools/execute`). */
  beforeTool?: boolean
  /** Flush at each `agent/pre-step`. */
  atPreStep?: boolean
  /**
   * Let the pre-step and request flushes run while the request is in flight (the loop waits for
   * them before it takes any of the response); false holds the request until they are done.
   */
  overlapRequest?: boolean
}

export const Config: Schema<Config> = Schema.object({
  beforeRequest: Schema.boolean().default(true).description('Flush before each model request.'),
  beforeTool: Schema.boolean()
    .default(true)
    .description('Log tool/started and flush before a top-level tool body runs.'),
  atPreStep: Schema.boolean().default(true).description('Flush at each pre-step boundary.'),
  overlapRequest: Schema.boolean()
    .default(true)
    .description(
      'Pre-step and request flushes run while the request is in flight; the response waits for them (false: the request waits).',
    ),
})

export const CHECKPOINT_FAILED = 'CHECKPOINT_FAILED'

/** A checkpoint could not be made durable; the guarded call was not made. */
export class CheckpointError extends Error {
  override name = 'CheckpointError'
  readonly code = CHECKPOINT_FAILED
  constructor(
    readonly sessionId: string,
    readonly point: 'request' | 'tool' | 'pre-step',
    cause: unknown,
  ) {
    super(
      `checkpoint before ${point === 'pre-step' ? 'the next step' : point === 'tool' ? 'the tool call' : 'the model request'} failed for session ${sessionId}: ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    )
  }
}

/**
 * Whether `callId` was logged as a `tool/call` of the session's current step: calls the loop
 * dispatched for the model. Nested calls (made by another tool's body) have no such event.
 */
export function isTopLevelCall(session: Session, callId: string): boolean {
  const events = session.events
  for (let seq = events.length - 1; seq >= 0; seq--) {
    const event = events[seq]
    if (event.type === 'tool/call' && event.data.callId === callId) return true
    if (event.type === 'step/start' || event.type === 'turn/start') return false
  }
  return false
}

export function apply(ctx: Context, config: Config = {}) {
  const options = { beforeRequest: true, beforeTool: true, atPreStep: true, overlapRequest: true, ...config }
  // Both are required injects: Cordis restarts this plugin when either changes, so the plain
  // objects read once here never go stale. Three checkpoints a turn used to read them each time.
  const durableSessions = plainService(ctx.durableSessions)
  const sessions = plainService(ctx.sessions)
  const checkpoint = async (sessionId: string, point: CheckpointError['point']) => {
    try {
      await durableSessions.checkpoint(sessionId)
    } catch (error) {
      throw new CheckpointError(sessionId, point, error)
    }
  }

  if (options.atPreStep) {
    ctx.on(
      'agent/pre-step',
      async (payload, next) => {
        // Overlapped: the step goes on; its response waits for this flush, and a failure of it
        // ends the turn there (CHECKPOINT_FAILED) before anything of the response is logged.
        if (options.overlapRequest && payload.defer) {
          payload.defer(checkpoint(payload.agent.session.id, 'pre-step'))
          return next()
        }
        try {
          await checkpoint(payload.agent.session.id, 'pre-step')
        } catch (error) {
          return { action: 'reject', code: CHECKPOINT_FAILED, reason: (error as Error).message }
        }
        return next()
      },
      { prepend: true },
    )
  }

  if (options.beforeRequest) {
    // Registered last-in-line (not prepended) so listeners that log request changes run first.
    ctx.on('agent/request', async (payload, next) => {
      // Overlapped: the request leaves now and the loop takes none of its response before every
      // event logged so far (the user's prompt among them) is durable.
      if (options.overlapRequest && payload.defer) payload.defer(checkpoint(payload.agent.session.id, 'request'))
      else await checkpoint(payload.agent.session.id, 'request')
      return next()
    })
  }

  if (options.beforeTool) {
    ctx.on('tools/execute', async (payload: ExecutePayload, next: () => Promise<ToolOutput>): Promise<ToolOutput> => {
      const sessionId = payload.context.sessionId
      const session = sessionId === undefined ? undefined : sessions.get(sessionId)
      if (!session || !durableSessions.isPersisted(session.id) || !isTopLevelCall(session, payload.call.callId))
        return next()
      try {
        session.append('tool/started', { callId: payload.call.callId })
        await checkpoint(session.id, 'tool')
      } catch (error) {
        const message = (error as Error).message
        return {
          content: `The tool call was not run: ${message}. Nothing was executed; it is safe to retry once the session store is writable.`,
          isError: true,
          error: { code: CHECKPOINT_FAILED, message },
        }
      }
      return next()
    })
  }
}
