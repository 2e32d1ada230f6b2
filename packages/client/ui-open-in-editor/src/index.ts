// @dsh/ui-open-in-editor (host half): nothing runs on the host. The row makes the web host serve
// the browser half (`./client`): an "Open in editor" action on each workspace of the sidebar,
// calling `host.openPath` (loopback-only), which the open-in-editor row registers.
import Schema from 'schemastery'

export const name = '@dsh/ui-open-in-editor'
export type UiOpenInEditorConfig = Record<string, never>
export const Config: Schema<UiOpenInEditorConfig> = Schema.object({}) as Schema<UiOpenInEditorConfig>
export function apply(): void {}

export default { name, Config, apply }
