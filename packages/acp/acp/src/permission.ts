// The approval answerer of ACP sessions: a dsh approval request becomes a
// `session/request_permission` to the session's client, and anything but a clear choice among the
// offered options (an error, a closed connection, a timeout, a cancelled prompt) is a rejection.
import type * as acp from '@agentclientprotocol/sdk'
import type { ApprovalAnswer, ApprovalChoice, ApprovalRequest } from '@dsh/user-approval'
import { errorText, type LiveSession } from './live.ts'

/** The ACP permission option of each dsh approval choice. */
export const CHOICE_OPTIONS: Record<ApprovalChoice, acp.PermissionOption> = {
  'allowed-once': { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
  'allowed-always': { optionId: 'allow_always', name: 'Allow for this session', kind: 'allow_always' },
  rejected: { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
}

/**
 * Asks the client of `live` with `session/request_permission`, failing closed. The request is
 * attributed to the tool call running last in the session, else to the approval itself;
 * `timeoutMs` > 0 bounds the wait.
 */
export async function askPermission(
  live: LiveSession | undefined,
  request: ApprovalRequest,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<ApprovalAnswer> {
  const client = live?.connection.client
  if (!live || !client) return { decision: 'rejected', reason: 'the ACP client of this session is gone' }
  const choices = request.options.filter((c): c is ApprovalChoice => c in CHOICE_OPTIONS)
  const byId = new Map(choices.map((c) => [CHOICE_OPTIONS[c].optionId, c]))
  const controller = new AbortController()
  const abort = () => controller.abort(signal.reason)
  signal.addEventListener('abort', abort, { once: true })
  const timer =
    timeoutMs > 0
      ? setTimeout(() => controller.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
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
        // The request's own words for a choice, when it has them (e.g. "Keep the patch only").
        options: choices.map((c) => ({ ...CHOICE_OPTIONS[c], name: request.labels?.[c] ?? CHOICE_OPTIONS[c].name })),
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
