// @dsh/ui-message-feedback/client: a "Feedback" section in the side panel for the latest finalized
// answer of the session (the assistant message that closed the last completed turn): Like /
// Dislike and an optional note, saved with messageFeedback.put (logged as feedback/message). The
// current rating is read from the session feed, so it follows other tabs and reloads.
import type { Context } from 'cordis'
import { useMemo, useState } from 'react'
import { useSessionFeed, useT, type SessionSlotProps } from '@dsh/client-runtime'
import { Button, IconButton, ThumbsDown, ThumbsUp } from '@dsh/client-design'
import { currentFeedback, messageFeedbackPut, type Rating } from '@dsh/message-feedback/contract'

export const NAMESPACE = 'messageFeedback'
export const name = '@dsh/ui-message-feedback'
export const inject = ['slots', 'locale', 'remote']

const en = {
  title: 'Feedback on the last answer',
  like: 'Like',
  dislike: 'Dislike',
  note: 'Note (optional)',
  save: 'Save note',
  saved: 'Saved',
  withdraw: 'Withdraw',
  failed: 'Not saved: {message}',
  likeAnswer: 'Like this answer',
  dislikeAnswer: 'Dislike this answer',
  liked: 'Liked (press to withdraw)',
  disliked: 'Disliked (press to withdraw)',
}
const zh: Record<keyof typeof en, string> = {
  title: '对上一条回答的反馈',
  like: '赞',
  dislike: '踩',
  note: '备注(可选)',
  save: '保存备注',
  saved: '已保存',
  withdraw: '撤回',
  failed: '未保存: {message}',
  likeAnswer: '赞这条回答',
  dislikeAnswer: '踩这条回答',
  liked: '已赞(再按一次撤回)',
  disliked: '已踩(再按一次撤回)',
}

/** The seq of the assistant message that closed the last completed turn. */
export function lastFinalAnswer(
  events: ReadonlyArray<{ seq: number; type: string; data: unknown }>,
): number | undefined {
  let last: number | undefined
  let candidate: number | undefined
  for (const e of events) {
    if (e.type === 'turn/start') candidate = undefined
    else if (e.type === 'assistant/message')
      candidate = (e.data as { interrupted?: boolean }).interrupted ? undefined : e.seq
    else if (e.type === 'turn/end' && candidate !== undefined) last = candidate
  }
  return last
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })

  function FeedbackSection({ sessionId, feed }: SessionSlotProps) {
    const t = useT(NAMESPACE)
    // biome-ignore lint/correctness/useExhaustiveDependencies: feed.withoutDeltas grows in place (same array); feed.version is what changes when it does
    const target = useMemo(() => lastFinalAnswer(feed.withoutDeltas), [feed.version, feed.withoutDeltas])
    // biome-ignore lint/correctness/useExhaustiveDependencies: feed.withoutDeltas grows in place (same array); feed.version is what changes when it does
    const current = useMemo(
      () =>
        target === undefined ? undefined : currentFeedback(feed.withoutDeltas).find((f) => f.messageSeq === target),
      [feed.version, feed.withoutDeltas, target],
    )
    const [note, setNote] = useState<{ seq: number; text: string } | undefined>(undefined)
    const [state, setState] = useState<{ kind: 'saved' | 'error'; text?: string } | undefined>(undefined)
    if (target === undefined) return null
    const noteText = note?.seq === target ? note.text : (current?.note ?? '')
    const put = async (rating: Rating, text = noteText) => {
      setState(undefined)
      try {
        await ctx.remote.call(messageFeedbackPut, {
          sessionId,
          messageSeq: target,
          rating,
          ...(text.trim() ? { note: text } : {}),
        })
        setState({ kind: 'saved' })
      } catch (error) {
        setState({ kind: 'error', text: (error as Error).message })
      }
    }
    return (
      <section className="panel-section" data-message-feedback={target} data-rating={current?.rating ?? 'none'}>
        <h3>{t('title')}</h3>
        <div style={{ display: 'flex', gap: 6, marginBottom: 6 }}>
          <Button
            size="sm"
            icon={ThumbsUp}
            aria-pressed={current?.rating === 'like'}
            data-feedback="like"
            onClick={() => void put('like')}
          >
            {t('like')}
          </Button>
          <Button
            size="sm"
            icon={ThumbsDown}
            aria-pressed={current?.rating === 'dislike'}
            data-feedback="dislike"
            onClick={() => void put('dislike')}
          >
            {t('dislike')}
          </Button>
          {current ? (
            <button type="button" data-feedback="none" onClick={() => void put('none', '')}>
              {t('withdraw')}
            </button>
          ) : null}
        </div>
        {current ? (
          <>
            <textarea
              aria-label={t('note')}
              placeholder={t('note')}
              rows={2}
              style={{ width: '100%' }}
              value={noteText}
              onChange={(e) => setNote({ seq: target, text: e.target.value })}
            />
            <button type="button" data-feedback="note" onClick={() => void put(current.rating)}>
              {t('save')}
            </button>
          </>
        ) : null}
        {state?.kind === 'saved' ? (
          <span className="muted" role="status">
            {' '}
            {t('saved')}
          </span>
        ) : null}
        {state?.kind === 'error' ? (
          <p className="error" role="alert">
            {t('failed', { message: state.text ?? '' })}
          </p>
        ) : null}
      </section>
    )
  }
  ctx.slots.register('panel.side', { id: 'ui-message-feedback', order: 50, component: FeedbackSection })

  /** Like and Dislike in any answer's action bar (ui-conversation's `conversation.message.actions`); pressed again, withdrawn. */
  function AnswerRating({ sessionId, node }: { sessionId: string; node: { seq: number } }) {
    const t = useT(NAMESPACE)
    const feed = useSessionFeed(sessionId, { deltas: false })
    // biome-ignore lint/correctness/useExhaustiveDependencies: feed.withoutDeltas grows in place (same array); feed.version is what changes when it does
    const rating = useMemo(
      () => (feed ? currentFeedback(feed.withoutDeltas).find((f) => f.messageSeq === node.seq)?.rating : undefined),
      [feed?.version, feed?.withoutDeltas, node.seq],
    )
    const [error, setError] = useState<string | undefined>(undefined)
    const put = (wanted: Rating) => {
      setError(undefined)
      ctx.remote
        .call(messageFeedbackPut, { sessionId, messageSeq: node.seq, rating: rating === wanted ? 'none' : wanted })
        .catch((e: unknown) => setError(t('failed', { message: (e as Error).message })))
    }
    return (
      <span
        className="dsh-answer-rating"
        style={{ display: 'inline-flex', gap: 2 }}
        data-answer-rating={rating ?? 'none'}
      >
        <IconButton
          label={rating === 'like' ? t('liked') : t('likeAnswer')}
          icon={ThumbsUp}
          size={14}
          aria-pressed={rating === 'like'}
          data-feedback="like"
          onClick={() => put('like')}
        />
        <IconButton
          label={rating === 'dislike' ? t('disliked') : t('dislikeAnswer')}
          icon={ThumbsDown}
          size={14}
          aria-pressed={rating === 'dislike'}
          data-feedback="dislike"
          onClick={() => put('dislike')}
        />
        {error ? (
          <span className="error" role="alert">
            {error}
          </span>
        ) : null}
      </span>
    )
  }
  ctx.slots.register('conversation.message.actions', {
    id: 'ui-message-feedback',
    order: 10,
    component: AnswerRating,
  })
}

export default { name, inject, apply }
