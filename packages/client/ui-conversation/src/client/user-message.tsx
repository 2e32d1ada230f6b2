// A user message of the chat view: its bubble, Copy, and (when the plugin passes actions) edit
// and retry, which both resend the message (its text and its images) in a fork taken before the
// message's turn. CopyAction is shared with the answers.
import { memo, useEffect, useMemo, useRef, useState } from 'react'
import { imageThumbs, type UserNode } from '@dsh/conversation-model'
import { Check, Copy, IconButton, Pencil, RotateCcw } from '@dsh/client-design'
import {
  ImageThumbs,
  type ImageRef,
  joinImages,
  splitImages,
  type ThumbImage,
  UserText,
} from '@dsh/conversation-composer'
import type { Translate } from './strings.ts'

/**
 * What a user message offers besides Copy. Both start a branch: a copy of the session from
 * before the message's turn (`sessions.fork`) in which the text (as it was, or edited) is sent,
 * leaving this session as it is. Absent: only Copy.
 */
export interface MessageActions {
  /** Sends `text` in a fork of the session taken before `node`'s turn, and opens it. */
  resend(node: UserNode, text: string): Promise<void>
  /** Forks the session after an answer's turn (`beforeTurn`: the next turn; absent: the whole log) and opens the fork. */
  fork(beforeTurn: number | undefined): Promise<void>
}

/** Copies `text`; the button says "Copied" for a moment after the clipboard took it. */
export function CopyAction({ text, t, label }: { text: string; t: Translate; label: string }) {
  const [copied, setCopied] = useState(false)
  const copy = () => {
    void globalThis.navigator?.clipboard?.writeText(text).then(
      () => {
        setCopied(true)
        setTimeout(() => setCopied(false), 1500)
      },
      () => {},
    )
  }
  return (
    <IconButton
      label={copied ? t('copied') : label}
      icon={copied ? Check : Copy}
      size={14}
      data-action="copy"
      onClick={copy}
    />
  )
}

/**
 * An image a resent message carries: a token of its text (`token`), or one of its image blocks
 * (an ACP client's prompt image: `src`, a `data:` URL), stored when it is sent.
 */
export type ResendImage = ThumbImage & { token?: string }

/**
 * The token of an image to resend: a token image as it is; a block image stored first through
 * `POST /attachments` (the composer's path), since a web prompt is text and the host turns the
 * token back into pixels for the model.
 */
async function tokenOf(image: ResendImage): Promise<ImageRef> {
  if (image.token) return image as ImageRef
  const data = /^data:[^;,]+;base64,(.*)$/.exec(image.src ?? '')?.[1]
  if (!data) throw new Error(`the image ${image.name ?? image.id} has no data`)
  const response = await fetch('/attachments', {
    method: 'POST',
    body: JSON.stringify({ name: image.name ?? 'image', data }),
    headers: { 'content-type': 'application/json' },
    credentials: 'same-origin',
  })
  const body = (await response.json().catch(() => ({}))) as { token?: string; error?: { message?: string } }
  if (!response.ok || !body.token) throw new Error(body.error?.message ?? `HTTP ${response.status}`)
  return { ...image, token: body.token }
}

/** The text a message is resent with: `text` after the tokens of `images` (block images stored first). */
export async function resendText(text: string, images: readonly ResendImage[]): Promise<string> {
  return joinImages(text, await Promise.all(images.map(tokenOf)))
}

/**
 * The inline editor of a user message: Enter sends (as a branch), Shift+Enter breaks the line, Esc
 * cancels. The message's images (its image blocks, then the tokens of its text) are thumbnails
 * above the field (each with Remove), the field holds the text without the tokens, and the images
 * go back in front of the text when it is sent.
 */
function EditForm({
  text,
  blocks,
  t,
  busy,
  onSend,
  onCancel,
}: {
  text: string
  blocks: readonly ThumbImage[]
  t: Translate
  busy: boolean
  onSend: (text: string, images: readonly ResendImage[]) => void
  onCancel: () => void
}) {
  // Split once, when the editor opens: what is edited from then on is the user's.
  const [initial] = useState(() => splitImages(text))
  const [images, setImages] = useState<readonly ResendImage[]>(() => [...blocks, ...initial.images])
  const [value, setValue] = useState(initial.text)
  const area = useRef<HTMLTextAreaElement>(null)
  useEffect(() => {
    const el = area.current
    if (!el) return
    el.focus()
    el.setSelectionRange(el.value.length, el.value.length)
  }, [])
  const empty = !value.trim() && !images.length
  const send = () => {
    if (!empty && !busy) onSend(value, images)
  }
  return (
    <form
      className="dsh-msg-edit"
      data-edit="true"
      onSubmit={(e) => {
        e.preventDefault()
        send()
      }}
    >
      <ImageThumbs
        images={images}
        t={t}
        className="dsh-msg-edit-images"
        onRemove={(index) => setImages((list) => list.filter((_, i) => i !== index))}
      />
      <textarea
        ref={area}
        className="dsh-msg-edit-input"
        aria-label={t('message.editLabel')}
        value={value}
        rows={Math.min(10, Math.max(2, value.split('\n').length))}
        onChange={(e) => setValue(e.target.value)}
        onKeyDown={(e) => {
          if (e.nativeEvent.isComposing) return
          if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
            e.preventDefault()
            send()
          } else if (e.key === 'Escape') {
            e.preventDefault()
            e.stopPropagation()
            onCancel()
          }
        }}
      />
      <div className="dsh-msg-edit-bar">
        <span className="dsh-msg-meta">{t('message.branchHint')}</span>
        <button type="button" className="dsh-button" onClick={onCancel}>
          {t('message.cancel')}
        </button>
        <button type="submit" className="dsh-button dsh-button-primary" disabled={busy || empty}>
          {t('message.send')}
        </button>
      </div>
    </form>
  )
}

export const UserMessage = memo(function UserMessage({
  node,
  t,
  actions,
}: {
  node: UserNode
  t: Translate
  /** Present when the message opened its turn (a fork before that turn starts with it). */
  actions?: MessageActions
}) {
  const [editing, setEditing] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const blocks = useMemo(() => imageThumbs(node.key, node.images), [node.key, node.images])
  const resend = (text: string, images: readonly ResendImage[]) => {
    if (!actions || busy) return
    setBusy(true)
    setError(undefined)
    resendText(text, images)
      .then((full) => actions.resend(node, full))
      .then(
        () => {
          setBusy(false)
          setEditing(false)
        },
        (e: unknown) => {
          setBusy(false)
          setError(t('message.failed', { message: (e as Error)?.message ?? String(e) }))
        },
      )
  }
  return (
    <div className="dsh-msg dsh-msg-user" data-node="user" data-seq={node.seq} data-busy={busy || undefined}>
      {editing ? (
        <EditForm
          text={node.text}
          blocks={blocks.thumbs}
          t={t}
          busy={busy}
          onSend={resend}
          onCancel={() => setEditing(false)}
        />
      ) : (
        // biome-ignore lint/a11y/useSemanticElements: a message bubble, not a form control group, so <fieldset> would be wrong; role=group only lets the bubble carry its 'You' label (a plain div may not)
        <div className="dsh-msg-bubble" role="group" aria-label={t('you')}>
          <UserText text={node.text} t={t} blocks={blocks.thumbs} />
          {blocks.hidden > 0 ? <div className="dsh-msg-meta">{t('images', { count: blocks.hidden })}</div> : null}
        </div>
      )}
      {editing ? null : (
        <div className="dsh-msg-actions" data-actions="user">
          <CopyAction text={node.text} t={t} label={t('message.copy')} />
          {actions ? (
            <>
              <IconButton
                label={t('message.edit')}
                icon={Pencil}
                size={14}
                data-action="edit"
                disabled={busy}
                onClick={() => setEditing(true)}
              />
              <IconButton
                label={t('message.retry')}
                icon={RotateCcw}
                size={14}
                data-action="retry"
                disabled={busy}
                // The text as it is (its tokens included) after the message's image blocks.
                onClick={() => resend(node.text, blocks.thumbs)}
              />
            </>
          ) : null}
        </div>
      )}
      {error ? (
        <div className="dsh-msg-meta dsh-msg-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  )
})
