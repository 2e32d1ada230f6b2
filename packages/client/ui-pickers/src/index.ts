// @dsh/ui-pickers (host half): nothing runs on the host; the row makes the web host serve the
// browser half (`./client`): the model/effort and permission-mode pickers of a session.
import Schema from 'schemastery'

export const name = '@dsh/ui-pickers'
export type UiPickersConfig = Record<string, never>
export const Config: Schema<UiPickersConfig> = Schema.object({}) as Schema<UiPickersConfig>
export function apply(): void {}

export default { name, Config, apply }
