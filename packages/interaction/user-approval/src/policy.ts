// Non-interactive answerers that decide by `approval/policy` instead of asking a human.
import type { ApprovalAnswer, ApprovalAnswerer, ApprovalPolicy, ApprovalRequest } from './types.ts'
import { APPROVAL_POLICIES } from './types.ts'

export interface PolicyAnswererOptions {
  /** Answerer name. Default `policy`. */
  name?: string
  /** Appended to the rejection reason of `ask`/`on-failure`: how the user can change the policy. */
  hint?: string
  /** Restrict to some requests (e.g. sessions no interactive client owns). */
  accepts?(request: ApprovalRequest): boolean
}

export const DEFAULT_POLICY_HINT =
  'Rerun with `--permission-mode danger-full-access` (or set DSH_PERMISSION_MODE) to allow such actions without asking, or use an interactive surface.'

/**
 * An answerer for runs with no human: `never` allows once, `reject` rejects, and `ask`/`on-failure`
 * reject with a reason saying that no interactive approver exists. `policy` may be a function so
 * the policy is looked up per request (e.g. from the session's permission preset).
 */
export function policyAnswerer(
  policy: ApprovalPolicy | ((request: ApprovalRequest) => ApprovalPolicy),
  options: PolicyAnswererOptions = {},
): ApprovalAnswerer {
  const hint = options.hint ?? DEFAULT_POLICY_HINT
  return {
    name: options.name ?? 'policy',
    ...(options.accepts ? { accepts: options.accepts } : {}),
    answer(request): ApprovalAnswer {
      const current = typeof policy === 'function' ? policy(request) : policy
      if (!APPROVAL_POLICIES.includes(current)) {
        throw new Error(`unknown approval policy ${JSON.stringify(current)} (valid: ${APPROVAL_POLICIES.join(', ')})`)
      }
      if (current === 'never') {
        return request.options.includes('allowed-once')
          ? { decision: 'allowed-once', reason: 'approval policy "never": actions are allowed without asking' }
          : {
              decision: 'rejected',
              reason: 'approval policy "never" allows only once, and this request does not offer allowed-once',
            }
      }
      if (current === 'reject')
        return {
          decision: 'rejected',
          reason: 'approval policy "reject": actions that need approval are refused in this run',
        }
      return {
        decision: 'rejected',
        reason: `approval policy "${current}" needs a human, but this run has no interactive approver. ${hint}`.trim(),
        noHuman: true,
      }
    },
  }
}
