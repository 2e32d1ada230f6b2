// The one host method of the trajectory view: the configured model prices (browser-safe).
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'
import type { Price } from './model.ts'

export const PriceSchema: Schema<Price> = Schema.object({
  input: Schema.number().min(0).required().description('USD per million input (cache-miss) tokens.'),
  output: Schema.number().min(0).required().description('USD per million output tokens (reasoning included).'),
  cacheRead: Schema.number().min(0).description('USD per million cache-hit tokens; default: input.'),
  cacheWrite: Schema.number().min(0).description('USD per million cache-write tokens; default: input.'),
}) as Schema<Price>

export const trajectoryPrices = defineMethod('trajectory.prices', {
  description: 'Model prices (USD per million tokens) keyed "provider/model" or "model", for the trajectory view.',
  params: Schema.object({}),
  result: Schema.object({ prices: Schema.dict(PriceSchema).required() }) as Schema<{ prices: Record<string, Price> }>,
})
