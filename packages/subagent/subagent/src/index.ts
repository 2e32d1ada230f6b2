// @dsh/subagent: the `ctx.subagents` seam. One service API starts, lists, messages and interrupts
// child agents through named providers; `spawn` and `fork` (in-process children) are built in,
// other packages register out-of-process providers (`acp`, `sdk`, ...).
export * from './types.ts'
export {
  SubagentService,
  PROVIDER_NAME_PATTERN,
  SUBAGENT_EVENT_TYPES,
  MAX_REPORT_CHARS,
  type StartedSubagent,
  type SubagentServiceConfig,
} from './service.ts'
export { completedBoundary, inProcessProvider, outcomeOf, PARENT_MESSAGE_SOURCE } from './in-process.ts'
export {
  childEnv,
  inheritanceOf,
  inheritedDepth,
  inheritedModeFloor,
  looserThan,
  userLayers,
  writePolicyLayer,
  DEPTH_ENV,
  MAX_DEPTH_ENV,
  MODE_ENV,
  type ChildInheritance,
  type PolicyLayer,
} from './inherit.ts'
export { startLineProcess, type LineProcess, type LineProcessOptions } from './line-process.ts'
import { SubagentService } from './service.ts'

export const name = '@dsh/subagent'
export default SubagentService
