// @dsh/ui-settings (host half): nothing runs on the host; the row makes the web host serve the
// browser half (`./client`): the Settings dialog (General, Models, Plugins). Its host methods
// live in @dsh/api-settings, @dsh/api-models and @dsh/api-plugins.
import Schema from 'schemastery'

export const name = '@dsh/ui-settings'
export type UiSettingsConfig = Record<string, never>
export const Config: Schema<UiSettingsConfig> = Schema.object({}) as Schema<UiSettingsConfig>
export function apply(): void {}

export default { name, Config, apply }
