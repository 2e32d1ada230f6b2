// @dsh/ui-deliverables (host half): nothing runs on the host; the row makes the web host serve
// the browser half (`./client`): the files the last turn produced, with their diffs.
import Schema from 'schemastery'

export { lastTurnDeliverables, diffLines, type Deliverable, type FileChange } from './deliverables.ts'

export const name = '@dsh/ui-deliverables'
export type UiDeliverablesConfig = Record<string, never>
export const Config: Schema<UiDeliverablesConfig> = Schema.object({}) as Schema<UiDeliverablesConfig>
export function apply(): void {}

export default { name, Config, apply }
