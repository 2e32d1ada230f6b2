// @dsh/llm-retry: provider retry policy applied at step boundaries. The plugin answers the agent
// loop's `agent/request-error` waterfall; it never wraps ctx.llm.stream(), so every adapter call
// stays one provider attempt and every retry is a fresh step in the log.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { retryPolicySchema, type LlmError, type RetryPolicy } from '@dsh/llm'
import type { RequestErrorDecision, RequestErrorPayload } from '@dsh/agent'

export const name = 'llm-retry'

export interface Config extends RetryPolicy {
  /** Per-route policies, matched exactly on the provider route; an entry replaces the default policy. */
  providers: { [route: string]: RetryPolicy }
  /** A server Retry-After longer than this fails the step instead of blocking the agent. */
  maxRetryAfterMs: number
  /** Source of randomness for jitter, in [0, 1). Tests only; not settable from YAML. */
  random?: () => number
}

export const Config: Schema<Partial<Config>, Config> = Schema.intersect([
  retryPolicySchema,
  Schema.object({
    providers: Schema.dict(retryPolicySchema)
      .default({})
      .description('Policies per provider route (exact match), replacing the default.'),
    maxRetryAfterMs: Schema.natural()
      .default(60_000)
      .description('Longest server Retry-After honoured; a longer one fails the step.'),
    random: Schema.function().description('Jitter randomness in [0, 1) (tests).'),
  }),
]) as unknown as Schema<Partial<Config>, Config>

/**
 * The delay before retry number `attempt` (1-based): `initialDelayMs * 2^(attempt-1)` capped at
 * `maxDelayMs`, spread by `jitter` (0.1 = plus or minus 10%), and never shorter than the
 * server's `retryAfterMs`.
 */
export function backoffDelay(
  policy: RetryPolicy,
  attempt: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, attempt - 1)
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** exponent)
  const spread = policy.jitter * (2 * random() - 1)
  const jittered = Math.max(0, Math.round(base * (1 + spread)))
  return retryAfterMs !== undefined && retryAfterMs > jittered ? Math.round(retryAfterMs) : jittered
}

/** The route a failed request went to: the error's, else the agent's selection. */
export function routeOf(payload: RequestErrorPayload): string {
  return payload.error.provider ?? payload.agent.model.provider
}

export type Decision = { retry: true; delayMs: number } | { retry: false; why: 'code' | 'exhausted' | 'retry-after' }

/** The pure decision for one failure under `config` (no logging, no waterfall). */
export function decide(
  config: Config,
  route: string,
  error: Pick<LlmError, 'code' | 'retryAfterMs'>,
  attempt: number,
): Decision {
  const policy = config.providers[route] ?? config
  if (!policy.codes.includes(error.code)) return { retry: false, why: 'code' }
  if (attempt > policy.maxRetries) return { retry: false, why: 'exhausted' }
  if (error.retryAfterMs !== undefined && error.retryAfterMs > config.maxRetryAfterMs)
    return { retry: false, why: 'retry-after' }
  return { retry: true, delayMs: backoffDelay(policy, attempt, error.retryAfterMs, config.random) }
}

export function apply(ctx: Context, config: Config): void {
  const logger = ctx.logger('llm-retry')
  ctx.on('agent/request-error', async (payload: RequestErrorPayload, next: () => Promise<RequestErrorDecision>) => {
    const { error, attempt, agent, turn, step } = payload
    const route = routeOf(payload)
    const decision = decide(config, route, error, attempt)
    const where = `agent ${agent.id} turn ${turn} step ${step}`
    if (decision.retry) {
      const policy = config.providers[route] ?? config
      logger.info(
        'retry %d/%d of %s in %dms after %s: %s (%s)',
        attempt,
        policy.maxRetries,
        route,
        decision.delayMs,
        error.code,
        error.message,
        where,
      )
      return { action: 'retry', delayMs: decision.delayMs }
    }
    if (decision.why === 'exhausted') {
      logger.warn('giving up on %s after %d attempts: %s: %s (%s)', route, attempt, error.code, error.message, where)
    } else if (decision.why === 'retry-after') {
      logger.warn(
        'not retrying %s: the server asked to wait %dms, over maxRetryAfterMs (%s)',
        route,
        error.retryAfterMs,
        where,
      )
    }
    return next()
  })
}
