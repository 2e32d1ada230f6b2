// @dsh/settings-file: the `ctx.settings` provider over one `$DSH_HOME/settings.yaml`, with hot
// reload, a writer lock, and atomic comment-preserving updates.
export { FileSettings, Config, resolveSettingsPath, type FileSettingsConfig } from './file.ts'
export { parseSettings, type DocumentProblem } from './document.ts'
import { FileSettings } from './file.ts'

export const name = 'settings-file'
export default FileSettings
