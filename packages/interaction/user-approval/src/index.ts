// @dsh/user-approval: the channel-neutral approval seam `ctx.approval`. A consumer asks for
// approval of exactly one action; a channel (ACP, SDK, TUI, web, a headless policy) registers an
// answerer that decides it. Every path without an explicit decision fails closed.
import { ApprovalService } from './service.ts'

export * from './types.ts'
export { ApprovalConfig, ApprovalService, actionKey, canonicalJson, isAllowed } from './service.ts'
export { DEFAULT_POLICY_HINT, policyAnswerer, type PolicyAnswererOptions } from './policy.ts'
export { describeOutcome } from './describe.ts'

export default ApprovalService
