// The approval/question bridge of the web host: the approval and user-questions services ask the
// host's clients about a request of a live session; the request is shown on the session's stream
// (and counted in its status) until a client answers it (host-routes.ts), the asker gives up, or
// the host stops.
import type { SessionHost } from './host.ts'
import { approvalFrame, type Live, questionFrame } from './host-wire.ts'
import type { PendingAnswers } from '@dsh/surface-kit'

/**
 * Registers the host as the `web` answerer of the approval and question services, each as soon as
 * it is provided (a service that appears after the host started is bridged too; one that goes
 * away takes its registration along); each removal is pushed to `offs` (the host's stop runs them).
 */
export function bridgeRequests(host: SessionHost, offs: Array<() => void>): void {
  host.ctx.inject(['approval'], (ctx) => {
    if (host.stopping) return
    offs.push(
      ctx.approval.registerAnswerer({
        name: 'web',
        accepts: (request) => request.sessionId !== undefined && host.live.has(request.sessionId),
        answer: (request, { signal }) =>
          ask(
            host,
            host.approvals,
            request.sessionId!,
            String(request.id),
            signal,
            (live) => {
              live.approvals.set(String(request.id), request)
              host.broadcast(live, 'approval', approvalFrame(request))
            },
            (live, outcome) => {
              live.approvals.delete(String(request.id))
              host.broadcast(live, 'approval/resolved', { requestId: String(request.id), decision: outcome })
            },
          ),
      }),
    )
  })
  host.ctx.inject(['userQuestions'], (ctx) => {
    if (host.stopping) return
    offs.push(
      ctx.userQuestions.registerAnswerer({
        name: 'web',
        accepts: (request) => request.sessionId !== undefined && host.live.has(request.sessionId),
        answer: (request, { signal }) =>
          ask(
            host,
            host.questions,
            request.sessionId!,
            String(request.id),
            signal,
            (live) => {
              live.questions.set(String(request.id), request)
              host.broadcast(live, 'question', questionFrame(request))
            },
            (live, outcome) => {
              live.questions.delete(String(request.id))
              host.broadcast(live, 'question/resolved', { requestId: String(request.id), status: outcome })
            },
          ),
      }),
    )
  })
}

/**
 * Waits in `table` for the client's answer to a request of a live session: `publish` shows it to
 * the clients, `settled` reports how it ended (the decision, `answered`, `cancelled` when the
 * asker gave up, `unavailable` when the host stopped).
 */
function ask<T>(
  host: SessionHost,
  table: PendingAnswers<T>,
  sessionId: string,
  requestId: string,
  signal: AbortSignal,
  publish: (live: Live) => void,
  settled: (live: Live, outcome: string) => void,
): Promise<T> {
  const live = host.live.get(sessionId)
  if (!live || host.stopping) return Promise.reject(new Error('the web session is not open'))
  const answer = table.wait(requestId, {
    sessionId,
    signal,
    abortMessage: 'the request was settled elsewhere',
    settled: (outcome) => {
      settled(
        live,
        outcome.kind === 'answered'
          ? ((outcome.value as { decision?: string }).decision ?? 'answered')
          : outcome.kind === 'cancelled'
            ? 'cancelled'
            : 'unavailable',
      )
      host.refreshStatus(live)
    },
  })
  publish(live)
  host.refreshStatus(live)
  return answer
}
