// @dsh/conversation-model: the React-free conversation view model (browser-safe, no DOM): a
// fold of the session log and stream frames into view nodes. A library, not a plugin.
export * from './types.ts'
export { imageView, MAX_IMAGE_DATA_CHARS } from './images.ts'
export { imageThumbs, type ImageThumb } from './images.ts'
export {
  ConversationModel,
  foldConversation,
  parseArguments,
  PREVIEW_CHARS,
  type ConversationModelOptions,
} from './conversation.ts'
