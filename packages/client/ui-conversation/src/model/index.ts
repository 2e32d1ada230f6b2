// @dsh/ui-conversation/model: the React-free conversation view model (browser-safe).
export * from './types.ts'
export { ConversationModel, foldConversation, parseArguments } from './conversation.ts'
