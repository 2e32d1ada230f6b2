// @dsh/ui-commands (host half): nothing runs on the host; the row makes the web host serve the
// browser half (`./client`): the `/` command menu of the composer, running commands without a
// model turn (commands.list / commands.execute).
import Schema from 'schemastery'

export { matchCommands, commandOfLine } from './commands.ts'

export const name = '@dsh/ui-commands'
export type UiCommandsConfig = Record<string, never>
export const Config: Schema<UiCommandsConfig> = Schema.object({}) as Schema<UiCommandsConfig>
export function apply(): void {}

export default { name, Config, apply }
