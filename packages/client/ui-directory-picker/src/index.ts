// @dsh/ui-directory-picker (host half): nothing runs on the host; the row makes the web host serve
// the browser half (`./client`): browse the host's folders and add one as a workspace, through
// @dsh/directory-picker (host.listDirectory) and @dsh/workspace (workspaces.create).
import Schema from 'schemastery'

export const name = '@dsh/ui-directory-picker'
export type UiDirectoryPickerConfig = Record<string, never>
export const Config: Schema<UiDirectoryPickerConfig> = Schema.object({}) as Schema<UiDirectoryPickerConfig>
export function apply(): void {}

export default { name, Config, apply }
