// The shell's own minimal conversation view and composer (order 1000): any package that fills
// `conversation.main` / `conversation.composer` at a lower order replaces them. They keep the
// page usable (and testable) on their own: streamed text, tool calls, turn errors, a prompt box.
import { useLayoutEffect, useMemo, useRef, useState } from 'react'
import { matchKey, useCtx, useSessionFeed, useStore, useT, type SessionSlotProps } from '@dsh/client-runtime'
import { NS } from './messages.ts'
import { foldItems } from './fold.ts'
import { firstHalvesLoading, takeBootPreview } from './state.ts'

export function FallbackConversation(props: SessionSlotProps) {
  // The first screen's halves are on their way (one of them may fill this seat): no log of our
  // own yet, only the host's plain-text preview the static shell painted, moved over as it is.
  if (useStore(firstHalvesLoading)) return <KeptPreview sessionId={props.sessionId} />
  return <FallbackLog {...props} />
}

function KeptPreview({ sessionId }: { sessionId: string }) {
  const seat = useRef<HTMLDivElement>(null)
  useLayoutEffect(() => {
    const node = takeBootPreview(sessionId)
    if (node) seat.current?.appendChild(node)
  }, [sessionId])
  return <div ref={seat} className="kept-preview" aria-hidden="true" />
}

function FallbackLog({ sessionId, feed: settled }: SessionSlotProps) {
  const t = useT(NS)
  // Slot props carry the settled feed (no streamed deltas): this view shows the text as it
  // streams, so it follows every publish of the feed itself.
  const feed = useSessionFeed(sessionId) ?? settled
  // biome-ignore lint/correctness/useExhaustiveDependencies: feed.events grows in place (same array); feed.version is what changes when it does
  const items = useMemo(() => foldItems(feed.events, feed.events.length), [feed.version, feed.events])
  return (
    <div className="fallback-conversation" role="log" aria-live="polite" aria-busy={feed.status === 'running'}>
      {items.map((item) => (
        <div
          key={item.key}
          className={'msg msg-' + item.kind}
          data-kind={item.kind}
          data-streaming={item.streaming ? 'true' : undefined}
        >
          <div className="who">
            {item.kind === 'user'
              ? t('you')
              : item.kind === 'tool'
                ? t('tool', { name: item.name ?? '' })
                : item.kind === 'assistant'
                  ? t('assistant')
                  : ''}
          </div>
          <div className="body">
            {item.kind === 'error'
              ? t('turnFailed', { message: item.text })
              : item.kind === 'note'
                ? t('turnCancelled')
                : item.text}
          </div>
        </div>
      ))}
      {feed.status === 'running' ? <div className="msg msg-note running">{t('running')}</div> : null}
    </div>
  )
}

export function FallbackComposer({ sessionId, feed }: SessionSlotProps) {
  const ctx = useCtx()
  const t = useT(NS)
  const [text, setText] = useState('')
  const [error, setError] = useState<string>()
  const area = useRef<HTMLTextAreaElement>(null)
  const send = async () => {
    const value = text.trim()
    if (!value) return
    setText('')
    setError(undefined)
    try {
      await ctx.remote.call('sessions.prompt', { sessionId, text: value })
    } catch (e) {
      setText(value)
      setError((e as Error).message)
    }
  }
  const running = feed.status === 'running' || feed.status === 'waiting'
  return (
    <form
      className="fallback-composer"
      onSubmit={(e) => {
        e.preventDefault()
        void send()
      }}
    >
      <textarea
        ref={area}
        data-composer="true"
        value={text}
        rows={3}
        placeholder={t('composerPlaceholder')}
        aria-label={t('composerPlaceholder')}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.nativeEvent.isComposing) return
          const binding = matchKey(e, 'composer')
          if (binding === 'send') {
            e.preventDefault()
            void send()
          } else if (binding === 'stop' && running) {
            e.preventDefault()
            void ctx.remote.call('sessions.cancel', { sessionId }).catch(() => {})
          }
        }}
      />
      <div className="composer-actions">
        {feed.queued > 0 ? <span className="muted">{t('queued', { count: feed.queued })}</span> : null}
        {error ? (
          <span className="error" role="alert">
            {error}
          </span>
        ) : null}
        {running ? (
          <button type="button" onClick={() => void ctx.remote.call('sessions.cancel', { sessionId }).catch(() => {})}>
            {t('cancel')}
          </button>
        ) : null}
        <button type="submit" className="primary" disabled={!text.trim()}>
          {t('send')}
        </button>
      </div>
    </form>
  )
}
