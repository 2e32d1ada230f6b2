// What a view draws of a node's image blocks (a user message's prompt images, a tool result's
// images): the blocks the fold gave a `data:` URL become thumbnails named by type and position
// (`PNG 1`); the others (a type that is not a raster image, data over the cap, not base64) are
// only counted. The chat's user messages and the tool cards share it, so both draw the same set;
// `@dsh/conversation-model/images` exports it alone, so a half that needs only this does not bundle
// the whole model.
import type { ImageView } from './types.ts'

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
