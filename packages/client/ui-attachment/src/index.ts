// @dsh/ui-attachment (host half): nothing runs on the host; the row makes the web host serve the
// browser half (`./client`): paste or drop an image into the composer. Storage and the upload
// route are @dsh/attachment-local's; sending images to models is @dsh/attachment's.
import Schema from 'schemastery'

export const name = '@dsh/ui-attachment'
export type UiAttachmentConfig = Record<string, never>
export const Config: Schema<UiAttachmentConfig> = Schema.object({}) as Schema<UiAttachmentConfig>
export function apply(): void {}

export default { name, Config, apply }
