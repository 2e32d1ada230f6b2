// The retry policy vocabulary shared by retry plugins and the profiles that configure them.
// Only the shape and its defaults live here; the policy itself is applied by `@dsh/llm-retry`.
import Schema from 'schemastery'
import { LLM_ERROR_CODES, type LlmErrorCode } from './types.ts'

export interface RetryPolicy {
  /** Attempts after the first one; 0 disables retries. */
  maxRetries: number
  /** Delay before the first retry; doubles on each further retry. */
  initialDelayMs: number
  /** Upper bound of any single delay (a longer server Retry-After still wins). */
  maxDelayMs: number
  /** Random spread applied to each delay, as a fraction (0.1 = plus or minus 10%). */
  jitter: number
  /** Error codes that are retried; every other code fails the step at once. */
  codes: LlmErrorCode[]
}

export const DEFAULT_RETRY_CODES: readonly LlmErrorCode[] = [
  'EMPTY_RESPONSE',
  'RATE_LIMIT',
  'SERVER',
  'TIMEOUT',
  'TRANSPORT',
]

export const defaultRetryPolicy = (): RetryPolicy => ({
  maxRetries: 5,
  initialDelayMs: 500,
  maxDelayMs: 10_000,
  jitter: 0.1,
  codes: [...DEFAULT_RETRY_CODES],
})

export const retryPolicySchema: Schema<Partial<RetryPolicy>, RetryPolicy> = Schema.object({
  maxRetries: Schema.natural().default(5).description('Retries after the first attempt.'),
  initialDelayMs: Schema.natural().default(500).description('First backoff delay in milliseconds.'),
  maxDelayMs: Schema.natural().default(10_000).description('Largest backoff delay in milliseconds.'),
  jitter: Schema.number().min(0).max(1).default(0.1).description('Random spread of each delay, as a fraction.'),
  codes: Schema.array(Schema.union([...LLM_ERROR_CODES]))
    .default([...DEFAULT_RETRY_CODES])
    .description('LlmError codes that are retried.'),
}) as Schema<Partial<RetryPolicy>, RetryPolicy>
