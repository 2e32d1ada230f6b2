// @dsh/ui-schedule (host half): nothing runs on the host. The row makes the web host serve the
// browser half (`./client`): the Scheduled tasks dialog over the `scheduleTasks.*` methods of the
// schedule-tasks row (@dsh/schedule/tasks).
import Schema from 'schemastery'

export const name = '@dsh/ui-schedule'
export type UiScheduleConfig = Record<string, never>
export const Config: Schema<UiScheduleConfig> = Schema.object({}) as Schema<UiScheduleConfig>
export function apply(): void {}

export default { name, Config, apply }
