// What a view draws of a node's image blocks (a user message's prompt images, a tool result's
// images): the blocks the fold gave a `data:` URL become thumbnails named by type and position
// (`PNG 1`); the others (a type that is not a raster image, data over the cap, not base64) are
// only counted. The chat's user messages and the tool cards share it, so both draw the same set;
// `@dsh/conversation-model/images` exports it alone, so a half that needs only this does not bundle
// the whole model. `imageView` is the fold's rule for which blocks get a `data:` URL at all.
import type { ImageView } from './types.ts'

/** Base64 characters of one image block beyond which it is counted, not drawn (12 MiB decoded). */
export const MAX_IMAGE_DATA_CHARS = 16 * 1024 * 1024
/** Raster types a browser draws in an `<img>` (no SVG: a document, not pixels). */
const DRAWABLE = /^image\/(png|jpeg|gif|webp|avif|bmp)$/
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** The view of an image block (`{type: 'image', mediaType, data}` with base64 `data`). */
export function imageView(block: { mediaType?: unknown; data?: unknown }): ImageView {
  const mediaType = typeof block.mediaType === 'string' ? block.mediaType.toLowerCase() : ''
  const data = typeof block.data === 'string' ? block.data : ''
  const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0
  const bytes = Math.max(0, Math.floor((data.length * 3) / 4) - pad)
  const drawable =
    data.length > 0 &&
    data.length <= MAX_IMAGE_DATA_CHARS &&
    data.length % 4 === 0 &&
    DRAWABLE.test(mediaType) &&
    BASE64.test(data)
  return { mediaType, ...(drawable ? { src: `data:${mediaType};base64,${data}` } : {}), bytes }
}

/** One drawable image: a key unique in its list, a short name, and its `data:` URL. */
export interface ImageThumb {
  id: string
  name: string
  src: string
}

/** The drawable images of `images` (keys start with `key`) and how many cannot be drawn. */
export function imageThumbs(key: string, images: readonly ImageView[]): { thumbs: ImageThumb[]; hidden: number } {
  const thumbs: ImageThumb[] = []
  images.forEach((image, i) => {
    if (!image.src) return
    const type = image.mediaType.replace(/^image\//, '').toUpperCase()
    thumbs.push({ id: `${key}:image${i}`, name: `${type} ${i + 1}`, src: image.src })
  })
  return { thumbs, hidden: images.length - thumbs.length }
}
