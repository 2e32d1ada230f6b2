// @dsh/ui-message-feedback (host half): nothing runs on the host; the row makes the web host serve
// the browser half (`./client`): like/dislike with a note on the latest answer of a session,
// through @dsh/message-feedback's methods.
import Schema from 'schemastery'

export const name = '@dsh/ui-message-feedback'
export type UiMessageFeedbackConfig = Record<string, never>
export const Config: Schema<UiMessageFeedbackConfig> = Schema.object({}) as Schema<UiMessageFeedbackConfig>
export function apply(): void {}

export default { name, Config, apply }
