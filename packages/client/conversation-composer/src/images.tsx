// Images in the conversation. A message typed here carries an image as a token in its text
// (`[image sha256:<hex> <name>]`, written by @dsh/ui-attachment after `POST /attachments`; the
// host's @dsh/attachment turns it into pixels for the model). Here the tokens are taken out of
// the text and shown as thumbnails (served by `GET /attachments/<id>`). A message from another
// surface (an ACP client's prompt) or a tool result may instead carry image blocks; the
// conversation model gives those a `data:` URL (`src`), drawn by the same thumbnails. A thumbnail
// opens the image in a dialog (focus kept inside, Escape or the close button closes it, focus
// goes back).
import { useMemo, useRef, useState } from 'react'
import { Dialog, IconButton, X } from '@dsh/client-design'
import type { Translate } from './strings.ts'

/** What a thumbnail draws. */
export interface ThumbImage {
  /** `sha256:<hex>` of a stored attachment, or (with `src`) a key unique in its list. */
  id: string
  name?: string
  /** Where the pixels are (e.g. a `data:` URL); absent: the stored attachment `id`. */
  src?: string
}

/** An image token of a message's text. */
export interface ImageRef extends ThumbImage {
  /** The token as it appears in the text. */
  token: string
}

const TOKEN = /\[image (sha256:[0-9a-f]{64})(?: ([^\]\n]*))?\]/g

/**
 * The image tokens of `text` and the text without them (one space after each token goes with
 * it). `caret`, a position in `text`, is mapped to the same place in the stripped text.
 */
export function splitImages(text: string, caret = text.length): { text: string; images: ImageRef[]; caret: number } {
  const images: ImageRef[] = []
  let out = ''
  let at = 0
  let mapped = caret
  for (const m of text.matchAll(TOKEN)) {
    const start = m.index
    let end = start + m[0].length
    if (text[end] === ' ') end++
    out += text.slice(at, start)
    if (caret >= end) mapped -= end - start
    else if (caret > start) mapped -= caret - start
    images.push({ id: m[1], ...(m[2] ? { name: m[2] } : {}), token: m[0] })
    at = end
  }
  if (!images.length) return { text, images, caret }
  return { text: out + text.slice(at), images, caret: mapped }
}

/** The text a message is sent with: the image tokens first (a model reads the images before the question), then the text. */
export function joinImages(text: string, images: readonly ImageRef[]): string {
  if (!images.length) return text
  const tokens = images.map((i) => i.token).join(' ')
  return text ? `${tokens} ${text}` : tokens
}

/** Where the host serves a stored image. */
export const imageUrl = (id: string): string => `/attachments/${encodeURIComponent(id)}`

const srcOf = (image: ThumbImage): string => image.src ?? imageUrl(image.id)
const labelOf = (image: ThumbImage, t: Translate): string => image.name || t('image.unnamed')

/**
 * A row of thumbnails; each opens the image in the viewer. With `onRemove` (the composer) each
 * also has a Remove button.
 */
export function ImageThumbs({
  images,
  t,
  onRemove,
  className,
}: {
  images: readonly ThumbImage[]
  t: Translate
  onRemove?: (index: number) => void
  className?: string
}) {
  const [open, setOpen] = useState<ThumbImage | undefined>(undefined)
  // The thumbnail that opened the viewer gets the focus back when it closes (the dialog has no
  // trigger of its own to return it to).
  const opener = useRef<HTMLElement | null>(null)
  const close = () => {
    setOpen(undefined)
    requestAnimationFrame(() => opener.current?.isConnected && opener.current.focus())
  }
  if (!images.length) return null
  return (
    <>
      <ul className={`dsh-image-thumbs${className ? ` ${className}` : ''}`} aria-label={t('image.list')}>
        {images.map((image, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: the same image may be attached twice; the position is its identity
          <li key={`${image.id}:${i}`} className="dsh-image-thumb" data-image={image.id}>
            <button
              type="button"
              className="dsh-image-open"
              aria-label={t('image.open', { name: labelOf(image, t) })}
              title={labelOf(image, t)}
              onClick={(e) => {
                opener.current = e.currentTarget
                setOpen(image)
              }}
            >
              <img src={srcOf(image)} alt="" loading="lazy" decoding="async" />
            </button>
            {onRemove ? (
              <IconButton
                className="dsh-image-remove"
                label={t('image.remove', { name: labelOf(image, t) })}
                icon={X}
                size={12}
                tooltip={false}
                data-action="remove-image"
                onClick={() => onRemove(i)}
              />
            ) : null}
          </li>
        ))}
      </ul>
      {open ? (
        <Dialog
          open
          onOpenChange={(next) => next || close()}
          title={labelOf(open, t)}
          size="lg"
          className="dsh-image-viewer"
          testId="image-viewer"
          closeLabel={t('image.close')}
        >
          <img className="dsh-image-full" src={srcOf(open)} alt={labelOf(open, t)} />
        </Dialog>
      ) : null}
    </>
  )
}

/**
 * A user message's text: its images as thumbnails (the message's own image blocks, `blocks`,
 * then the tokens of its text), then the text without the tokens.
 */
export function UserText({ text, t, blocks }: { text: string; t: Translate; blocks?: readonly ThumbImage[] }) {
  const split = useMemo(() => splitImages(text), [text])
  const images = useMemo(() => (blocks?.length ? [...blocks, ...split.images] : split.images), [blocks, split.images])
  if (!images.length) return text
  return (
    <>
      <ImageThumbs images={images} t={t} />
      {split.text.trim() ? split.text : null}
    </>
  )
}

export const IMAGES_CSS = `
.dsh-image-thumbs{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:var(--dsh-space-2);}
.dsh-image-thumb{position:relative;}
.dsh-image-open{display:block;padding:0;border:1px solid var(--dsh-color-border);border-radius:var(--dsh-radius-md);background:var(--dsh-color-bg-subtle);cursor:zoom-in;overflow:hidden;width:64px;height:64px;}
.dsh-image-open img{display:block;width:100%;height:100%;object-fit:cover;}
.dsh-image-open:focus-visible{outline:2px solid var(--dsh-color-focus);outline-offset:2px;}
.dsh-msg-bubble .dsh-image-thumbs{margin-bottom:6px;justify-content:flex-end;}
.dsh-msg-bubble .dsh-image-open{width:96px;height:96px;}
.dsh-composer-images{margin:2px 2px 6px;}
.dsh-image-remove.dsh-icon-btn{position:absolute;top:-8px;right:-8px;width:24px;height:24px;border-radius:50%;padding:0;background:var(--dsh-color-surface-raised);border:1px solid var(--dsh-color-border-strong);color:var(--dsh-color-fg);box-shadow:var(--dsh-shadow-1);}
.dsh-image-viewer .dsh-dialog-body{display:flex;justify-content:center;}
.dsh-image-full{max-width:100%;max-height:70vh;object-fit:contain;border-radius:var(--dsh-radius-md);}
`
