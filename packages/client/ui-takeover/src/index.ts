// @dsh/ui-takeover (host half): nothing runs on the host; the row makes the web host serve the
// browser half (`./client`): the approval and question forms that replace the composer. The
// host side of answering is @dsh/api-gateway's approvals.respond / questions.respond.
import Schema from 'schemastery'

export const name = '@dsh/ui-takeover'
export type UiTakeoverConfig = Record<string, never>
export const Config: Schema<UiTakeoverConfig> = Schema.object({}) as Schema<UiTakeoverConfig>
export function apply(): void {}

export default { name, Config, apply }
