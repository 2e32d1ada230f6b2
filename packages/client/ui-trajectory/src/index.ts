// @dsh/ui-trajectory (host half): serves `trajectory.prices` (the configured model prices) so the
// browser half can show costs; the row also makes the host serve the browser half (`./client`),
// the trajectory view of a session derived from its log.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/api-gateway'
import { PriceSchema, trajectoryPrices } from './contract.ts'
import type { Price } from './model.ts'

export * from './model.ts'
export { trajectoryPrices, PriceSchema } from './contract.ts'

export const name = '@dsh/ui-trajectory'

export interface UiTrajectoryConfig {
  /** USD per million tokens, keyed "provider/model" or "model". */
  prices: Record<string, Price>
}

export const Config: Schema<Partial<UiTrajectoryConfig>, UiTrajectoryConfig> = Schema.object({
  prices: Schema.dict(PriceSchema)
    .default({})
    .description(
      'Model prices (USD per million tokens) keyed "provider/model" or "model"; a model without one shows no cost.',
    ),
}) as Schema<Partial<UiTrajectoryConfig>, UiTrajectoryConfig>

export function apply(ctx: Context, config: Partial<UiTrajectoryConfig> = {}): void {
  const prices = { ...(config.prices ?? {}) }
  ctx.inject(['api'], (inner) => {
    inner.api.register(trajectoryPrices, () => ({ prices }))
  })
}

export default { name, Config, apply }
