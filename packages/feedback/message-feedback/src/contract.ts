// The message-feedback methods of the web host (browser-safe).
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export type Rating = 'like' | 'dislike' | 'none'
export interface MessageFeedback {
  messageSeq: number
  rating: Rating
  note?: string
  time: number
}

const FeedbackSchema = Schema.object({
  messageSeq: Schema.natural().required(),
  rating: Schema.union(['like', 'dislike', 'none'] as const).required(),
  note: Schema.string(),
  time: Schema.number().required(),
}) as Schema<MessageFeedback>

export const messageFeedbackPut = defineMethod('messageFeedback.put', {
  description:
    'Rates one finalized assistant message (the seq of its assistant/message event); logged as feedback/message. rating "none" withdraws an earlier one.',
  params: Schema.object({
    sessionId: Schema.string().min(1).required(),
    messageSeq: Schema.natural().required(),
    rating: Schema.union(['like', 'dislike', 'none'] as const).required(),
    note: Schema.string().max(4000),
  }),
  result: Schema.object({ feedback: FeedbackSchema.required(), seq: Schema.natural().required() }),
})

export const messageFeedbackList = defineMethod('messageFeedback.list', {
  description: 'The current rating of every rated message of a session (the latest feedback/message per message).',
  params: Schema.object({ sessionId: Schema.string().min(1).required() }),
  result: Schema.object({ feedback: Schema.array(FeedbackSchema).required() }),
})

/** The current rating per message (latest event wins; "none" removes it). */
export function currentFeedback(
  events: ReadonlyArray<{ type: string; time: number; data: unknown }>,
): MessageFeedback[] {
  const latest = new Map<number, MessageFeedback>()
  for (const e of events) {
    if (e.type !== 'feedback/message') continue
    const d = e.data as { messageSeq: number; rating: Rating; note?: string }
    if (d.rating === 'none') latest.delete(d.messageSeq)
    else
      latest.set(d.messageSeq, {
        messageSeq: d.messageSeq,
        rating: d.rating,
        ...(d.note ? { note: d.note } : {}),
        time: e.time,
      })
  }
  return [...latest.values()].sort((a, b) => a.messageSeq - b.messageSeq)
}
