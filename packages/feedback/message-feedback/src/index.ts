// @dsh/message-feedback: like/dislike (with an optional note) on one finalized assistant message,
// logged in the session as `feedback/message` {messageSeq, rating, note?}. The latest event per
// message is its current rating; `rating: "none"` withdraws it. Log-only: the model never sees
// it. With `ctx.api` mounted it serves `messageFeedback.put` and `messageFeedback.list`.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Session, SessionEvent } from '@dsh/session'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/api-gateway'
import { ApiError } from '@dsh/web-protocol'
import { currentFeedback, messageFeedbackList, messageFeedbackPut, type Rating } from './contract.ts'

export * from './contract.ts'

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A human's rating of the assistant message logged at `messageSeq` (log-only). */
    'feedback/message': { messageSeq: number; rating: Rating; note?: string }
  }
}

export const name = 'message-feedback'
export const inject = ['sessions']
export type MessageFeedbackConfig = Record<string, never>
export const Config: Schema<MessageFeedbackConfig> = Schema.object({}) as Schema<MessageFeedbackConfig>

export class FeedbackError extends Error {
  constructor(
    readonly code: 'NOT_A_MESSAGE' | 'NOT_FINAL',
    message: string,
  ) {
    super(message)
  }
}

/** Appends one rating; throws FeedbackError when `messageSeq` is not a finalized assistant message. */
export function rateMessage(
  session: Session,
  messageSeq: number,
  rating: Rating,
  note?: string,
): SessionEvent<'feedback/message'> {
  const target = session.events[messageSeq]
  if (target?.type !== 'assistant/message')
    throw new FeedbackError('NOT_A_MESSAGE', `seq ${messageSeq} of session ${session.id} is not an assistant message`)
  if ((target as SessionEvent<'assistant/message'>).data.interrupted)
    throw new FeedbackError(
      'NOT_FINAL',
      `the assistant message at seq ${messageSeq} was interrupted and cannot be rated`,
    )
  const trimmed = note?.trim()
  return session.append('feedback/message', { messageSeq, rating, ...(trimmed ? { note: trimmed } : {}) })
}

export function apply(ctx: Context): void {
  ctx.inject(['sessionPersistence'], (inner) => {
    inner.sessionPersistence.registerEventType('feedback/message')
  })
  ctx.inject(['api'], (inner) => {
    const live = (sessionId: string) => {
      const session = ctx.sessions.get(sessionId)
      if (!session)
        throw new ApiError('SESSION_NOT_FOUND', `no loaded session ${JSON.stringify(sessionId)} (open it first)`, {
          field: 'sessionId',
        })
      return session
    }
    inner.api.register(messageFeedbackPut, ({ sessionId, messageSeq, rating, note }) => {
      const session = live(sessionId)
      try {
        const event = rateMessage(session, messageSeq, rating, note)
        return {
          feedback: { messageSeq, rating, ...(event.data.note ? { note: event.data.note } : {}), time: event.time },
          seq: event.seq,
        }
      } catch (error) {
        if (error instanceof FeedbackError)
          throw new ApiError('INVALID_PARAMS', `messageFeedback.put: messageSeq: ${error.message}`, {
            field: 'messageSeq',
          })
        throw error
      }
    })
    inner.api.register(messageFeedbackList, ({ sessionId }) => ({ feedback: currentFeedback(live(sessionId).events) }))
  })
}

export default { name, inject, Config, apply }
