// @dsh/ui-input-trigger (host half): nothing runs on the host; the row makes the web host serve
// the browser half (`./client`), `ctx.inputTriggers`: the `/` and `@` menus of the composer.
import Schema from 'schemastery'

export * from './shared.ts'

export const name = '@dsh/ui-input-trigger'
export type UiInputTriggerConfig = Record<string, never>
export const Config: Schema<UiInputTriggerConfig> = Schema.object({}) as Schema<UiInputTriggerConfig>
export function apply(): void {}

export default { name, Config, apply }
