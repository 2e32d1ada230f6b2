// @dsh/ui-model-selection (host half): nothing runs on the host; the row makes the web host serve
// the browser half (`./client`): the model picker in the composer.
import Schema from 'schemastery'

export const name = '@dsh/ui-model-selection'
export type UiModelSelectionConfig = Record<string, never>
export const Config: Schema<UiModelSelectionConfig> = Schema.object({}) as Schema<UiModelSelectionConfig>
export function apply(): void {}

export default { name, Config, apply }
