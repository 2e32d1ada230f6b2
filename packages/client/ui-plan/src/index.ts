// @dsh/ui-plan (host half): nothing runs on the host; the row makes the web host serve the browser
// half (`./client`): the plan-mode chip in the composer. Plan behaviour is `@dsh/plan-mode`'s.
import Schema from 'schemastery'

export const name = '@dsh/ui-plan'
export type UiPlanConfig = Record<string, never>
export const Config: Schema<UiPlanConfig> = Schema.object({}) as Schema<UiPlanConfig>
export function apply(): void {}

export default { name, Config, apply }
