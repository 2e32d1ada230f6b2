// @dsh/permission-presets: `ctx.permissionPresets`, named bundles of sandbox mode + approval policy.
import { PermissionPresetService } from './service.ts'

export * from './service.ts'
export * as PresetAnswerer from './answerer.ts'

export default PermissionPresetService
