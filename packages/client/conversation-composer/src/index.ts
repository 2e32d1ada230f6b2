// @dsh/conversation-composer: the composer of `dsh web`'s conversation, as a library (no plugin,
// no host half). @dsh/ui-conversation puts it in the `conversation.composer` seat and bundles it
// into its browser half; the chat view's user messages use its image thumbnails.
export { Composer, type ComposerProps, type SendMode } from './composer.tsx'
export {
  IMAGES_CSS,
  ImageThumbs,
  imageUrl,
  joinImages,
  splitImages,
  UserText,
  type ImageRef,
  type ThumbImage,
} from './images.tsx'
export { COMPOSER_CSS } from './styles.ts'
export { en, zh, type ComposerKey, type Translate } from './strings.ts'
