// @dsh/ui-conversation (host half): nothing runs on the host. The row exists so the web host
// serves this package's browser half (`./client`); disabling the row removes the chat view and
// composer from the page. The conversation view model is `@dsh/conversation-model`.
import Schema from 'schemastery'

export const name = '@dsh/ui-conversation'
export type UiConversationConfig = Record<string, never>
export const Config: Schema<UiConversationConfig> = Schema.object({}) as Schema<UiConversationConfig>
export function apply(): void {}

export default { name, Config, apply }
