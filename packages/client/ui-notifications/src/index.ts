// @dsh/ui-notifications (host half): nothing runs on the host. The row makes the web host serve
// the browser half (`./client`): the Notifications switch of the sidebar footer and the browser
// notifications it shows for the `notifications/attention` host events of
// @dsh/desktop-notifications.
import Schema from 'schemastery'

export const name = '@dsh/ui-notifications'
export type UiNotificationsConfig = Record<string, never>
export const Config: Schema<UiNotificationsConfig> = Schema.object({}) as Schema<UiNotificationsConfig>
export function apply(): void {}

export default { name, Config, apply }
