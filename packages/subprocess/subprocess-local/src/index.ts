// @dsh/subprocess-local: the local provider of `ctx.subprocess`.
export { LocalSubprocessService, type LocalSubprocessConfig } from './local.ts'
export { OutputRetention } from './retention.ts'
import { LocalSubprocessService } from './local.ts'

export const name = 'subprocess-local'
export default LocalSubprocessService
