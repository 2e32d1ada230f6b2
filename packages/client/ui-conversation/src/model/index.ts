// @dsh/ui-conversation/model: the React-free conversation view model (browser-safe).
export * from './types.ts'
export {
  ConversationModel,
  foldConversation,
  parseArguments,
  PREVIEW_CHARS,
  type ConversationModelOptions,
} from './conversation.ts'
