// @dsh/ui-reference (host half): nothing runs on the host; the row makes the web host serve the
// browser half (`./client`): the `@` mentions of the composer (workspace files through
// @dsh/file-reference's files.search, other sessions from the catalog).
import Schema from 'schemastery'

export const name = '@dsh/ui-reference'
export type UiReferenceConfig = Record<string, never>
export const Config: Schema<UiReferenceConfig> = Schema.object({}) as Schema<UiReferenceConfig>
export function apply(): void {}

export default { name, Config, apply }
