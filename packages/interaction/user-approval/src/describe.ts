// A sentence for the model about an outcome that did not allow the action, so a refusal is
// something it can read and act on rather than a bare error code.
import type { ApprovalOutcome } from './types.ts'

/** Model-facing text for an outcome; `what` names the action ("running `rm -rf build`"). */
export function describeOutcome(outcome: ApprovalOutcome, what: string): string {
  const reason = outcome.reason ? ` Reason: ${outcome.reason}` : ''
  const message = outcome.message ? ` The user said: ${outcome.message}` : ''
  // A policy refused because no person could be asked: say so, never that someone refused
  // (`unavailable` already says that nobody is available).
  if (outcome.noHuman && outcome.decision === 'rejected')
    return `Approval for ${what} was refused (no one to ask): it needs a person's approval and nobody can be asked in this run; it was not done. Do not retry the same action; choose another approach.${reason}`
  switch (outcome.decision) {
    case 'allowed-once':
      return `The user approved ${what} once.${message}`
    case 'allowed-always':
      return `The user approved ${what} for the rest of this session.${message}`
    case 'rejected':
      return `Approval for ${what} was rejected; it was not done. Do not retry the same action; choose another approach or ask the user.${reason}${message}`
    case 'cancelled':
      return `Approval for ${what} was cancelled; it was not done.${reason}`
    case 'unavailable':
      return `Approval for ${what} could not be obtained (nobody is available to approve); it was not done.${reason}`
  }
}
