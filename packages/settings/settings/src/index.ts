// @dsh/settings: the `ctx.settings` seam (Service Definition). Namespaced sections of one settings
// document, typed views validated by each plugin's schema, durable updates, change listeners and
// the `settings/changed` event. Storage belongs to providers (settings-file; MemorySettings here).
export * from './patch.ts'
export * from './service.ts'
export { checkSection, didYouMean, editDistance, formatProblem, unknownSection, type SettingsProblem } from './check.ts'
export { MemorySettings, type MemorySettingsConfig } from './memory.ts'
import { SettingsService } from './service.ts'

export const name = 'settings'
export default SettingsService
