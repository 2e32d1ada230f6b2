// How a turn ended, in a sentence a person reads: one wording for every face (the one-shot's
// stderr line, the TUI transcript, the ACP stop message, the goal driver's pause note, a
// subagent's error), instead of each gluing the raw reason in (`the turn ended error: ...`).
import type { TurnEndReason } from './types.ts'

const ENDINGS: Record<TurnEndReason, string> = {
  completed: 'completed',
  cancelled: 'was cancelled',
  error: 'failed',
  'max-tokens': 'stopped at the output token limit',
  blocked: 'was blocked',
  interrupted: 'was interrupted',
}

/**
 * `the turn failed: MISSING_CREDENTIAL: DEEPSEEK_API_KEY is not set ...`. `subject` names whose
 * turn it was (`the child's turn`); an unknown reason is shown as `ended (<reason>)`.
 */
export function describeTurnEnd(
  reason: string,
  error?: { code?: string; message?: string } | null,
  subject = 'the turn',
): string {
  const ending = ENDINGS[reason as TurnEndReason] ?? `ended (${reason})`
  const detail = error ? [error.code, error.message].filter(Boolean).join(': ') : ''
  return `${subject} ${ending}${detail ? `: ${detail}` : ''}`
}
