// The composer: a multi-line input. Enter sends, Shift+Enter breaks the line, Esc cancels the
// running turn, ↑/↓ walk the history of sent prompts (when the caret is on the first/last line).
// While a turn runs, Enter queues the message (the default) and the Steer button hands it to
// the running turn. A takeover (approval, question) replaces it through `takeover`.
// Image tokens that reach the input (an attach, paste or drop of @dsh/ui-attachment inserts
// them) are taken out of the text and shown as thumbnails above it, each removable; a message is
// sent with the tokens first, then the text. History and drafts hold the whole message.
import { useRef, useState, type KeyboardEvent, type ReactNode } from 'react'
import { matchKey } from '@dsh/client-runtime'
import { ImageThumbs, joinImages, splitImages, type ImageRef } from './images.tsx'
import type { Translate } from './strings.ts'

export type SendMode = 'queue' | 'steer'

export interface ComposerProps {
  t: Translate
  /** A turn is running: sends queue (or steer), the Stop button shows. */
  running: boolean
  /** The session refuses prompts (archived); the input is read-only. */
  disabled?: boolean
  /** Sends a prompt; a rejection is shown under the input and the text is kept. */
  onSend: (text: string, mode: SendMode) => Promise<unknown> | unknown
  onCancel: () => void
  /** Prompts sent before, oldest first (↑ walks back from the newest). */
  history: readonly string[]
  /** Rendered instead of the input (an approval or a question). */
  takeover?: ReactNode
  /** Extra controls beside the buttons (model and permission pickers). */
  tools?: ReactNode
  autoFocus?: boolean
  /** Text to start with (a draft kept while a takeover replaced the composer). */
  initialText?: string
  /** Called with the text as it changes (to keep the draft). */
  onDraftChange?: (text: string) => void
}

export function Composer({
  t,
  running,
  disabled = false,
  onSend,
  onCancel,
  history,
  takeover,
  tools,
  autoFocus,
  initialText = '',
  onDraftChange,
}: ComposerProps) {
  const [initial] = useState(() => splitImages(initialText))
  const [text, setTextState] = useState(initial.text)
  const [images, setImagesState] = useState<readonly ImageRef[]>(initial.images)
  const setMessage = (value: string, attached: readonly ImageRef[]) => {
    setTextState(value)
    setImagesState(attached)
    onDraftChange?.(joinImages(value, attached))
  }
  const [error, setError] = useState<string | undefined>(undefined)
  const [sending, setSending] = useState(false)
  // Index into history while browsing (history.length = the draft).
  const cursor = useRef<number | undefined>(undefined)
  const draft = useRef('')
  const input = useRef<HTMLTextAreaElement>(null)

  const send = async (mode: SendMode) => {
    if ((!text.trim() && !images.length) || disabled || sending) return
    const value = joinImages(text, images)
    setSending(true)
    setError(undefined)
    try {
      await onSend(value, mode)
      setMessage('', [])
      cursor.current = undefined
    } catch (e) {
      setError(t('composer.failed', { message: e instanceof Error ? e.message : String(e) }))
    } finally {
      setSending(false)
      input.current?.focus()
    }
  }

  const recall = (index: number) => {
    cursor.current = index
    const recalled = splitImages(index >= history.length ? draft.current : history[index])
    setMessage(recalled.text, recalled.images)
    requestAnimationFrame(() => {
      const el = input.current
      if (el) el.selectionStart = el.selectionEnd = recalled.text.length
    })
  }

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.nativeEvent.isComposing) return
    const el = event.currentTarget
    // What the key means comes from the page's one table of bindings (the shortcuts sheet lists it).
    const binding = matchKey(event, 'composer')
    if (binding === 'send') {
      event.preventDefault()
      void send('queue')
      return
    }
    if (binding === 'stop' && running) {
      event.preventDefault()
      onCancel()
      return
    }
    if (binding === 'historyPrev' && history.length > 0 && !el.value.slice(0, el.selectionStart).includes('\n')) {
      const at = cursor.current ?? history.length
      if (at === 0) return
      if (cursor.current === undefined) draft.current = joinImages(el.value, images)
      event.preventDefault()
      recall(at - 1)
      return
    }
    if (binding === 'historyNext' && cursor.current !== undefined && !el.value.slice(el.selectionEnd).includes('\n')) {
      event.preventDefault()
      const next = cursor.current + 1
      if (next >= history.length) {
        recall(history.length)
        cursor.current = undefined
      } else recall(next)
    }
  }

  if (takeover) return <div className="dsh-composer dsh-composer-takeover">{takeover}</div>

  const empty = !text.trim() && !images.length
  return (
    <form
      className="dsh-composer"
      onSubmit={(e) => {
        e.preventDefault()
        void send('queue')
      }}
    >
      <ImageThumbs
        images={images}
        t={t}
        className="dsh-composer-images"
        onRemove={(index) => {
          setMessage(
            text,
            images.filter((_, i) => i !== index),
          )
          input.current?.focus()
        }}
      />
      <textarea
        ref={input}
        className="dsh-composer-input"
        data-composer="true"
        aria-label={t('composer.label')}
        placeholder={
          disabled ? t('composer.disabled') : running ? t('composer.placeholderRunning') : t('composer.placeholder')
        }
        value={text}
        readOnly={disabled}
        rows={Math.min(10, Math.max(2, text.split('\n').length))}
        // biome-ignore lint/a11y/noAutofocus: the host decides (autoFocus prop): the composer of a freshly opened session takes the focus so typing starts at once
        autoFocus={autoFocus}
        onChange={(e) => {
          const el = e.target
          // A token that reached the input (attach, paste, drop) becomes a thumbnail.
          const typed = splitImages(el.value, el.selectionStart ?? el.value.length)
          setMessage(typed.text, typed.images.length ? [...images, ...typed.images] : images)
          if (typed.images.length) {
            const caret = typed.caret
            requestAnimationFrame(() => {
              if (input.current) input.current.selectionStart = input.current.selectionEnd = caret
            })
          }
          if (
            cursor.current !== undefined &&
            cursor.current < history.length &&
            joinImages(typed.text, images) !== history[cursor.current]
          )
            cursor.current = undefined
        }}
        onKeyDown={onKeyDown}
      />
      {error ? (
        <div className="dsh-composer-error" role="alert">
          {error}
        </div>
      ) : null}
      <div className="dsh-composer-bar">
        <div className="dsh-composer-tools">{tools}</div>
        <span className="dsh-composer-hint">{t('composer.hint')}</span>
        {running ? (
          <>
            <button
              type="button"
              className="dsh-button"
              disabled={empty || disabled}
              title={t('composer.steerHint')}
              onClick={() => void send('steer')}
            >
              {t('composer.steer')}
            </button>
            <button type="submit" className="dsh-button" disabled={empty || disabled}>
              {t('composer.queue')}
            </button>
            <button
              type="button"
              className="dsh-button dsh-button-danger"
              title={t('composer.stopHint')}
              onClick={onCancel}
            >
              {t('composer.stop')}
            </button>
          </>
        ) : (
          <button type="submit" className="dsh-button dsh-button-primary" disabled={empty || disabled || sending}>
            {t('composer.send')}
          </button>
        )}
      </div>
    </form>
  )
}
