// The images of a tool result (`read_image`, an MCP tool's image content) as thumbnails that open
// the viewer: the conversation's own ImageThumbs (@dsh/conversation-composer), so a result's image
// looks and opens like a message's. The fold already decided which blocks may be drawn (raster
// types, valid base64, under the size cap); the rest are counted. Loaded as its own chunk by
// cards.tsx, only when a result carries images.
import { useMemo } from 'react'
import type { ImageView } from '@dsh/conversation-model'
import { imageThumbs } from '@dsh/conversation-model/images'
import { ImageThumbs } from '@dsh/conversation-composer'
import type { Translate } from './strings.ts'

export default function ResultImages({
  callKey,
  images,
  t,
}: {
  callKey: string
  images: readonly ImageView[]
  t: Translate
}) {
  const { thumbs, hidden } = useMemo(() => imageThumbs(callKey, images), [callKey, images])
  return (
    <div className="dsh-tool-images" data-images={images.length}>
      <ImageThumbs images={thumbs} t={t} />
      {hidden > 0 ? <div className="dsh-muted">{t('images', { count: hidden })}</div> : null}
    </div>
  )
}
