// @dsh/ui-tool (host half): nothing runs on the host; the row makes the web host serve the
// browser half (`./client`), which renders each tool call as a card.
import Schema from 'schemastery'

export const name = '@dsh/ui-tool'
export type UiToolConfig = Record<string, never>
export const Config: Schema<UiToolConfig> = Schema.object({}) as Schema<UiToolConfig>
export function apply(): void {}

export default { name, Config, apply }
