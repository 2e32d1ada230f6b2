// Browser-safe contracts of the models methods (no node imports); a client imports them from
// `@dsh/api-models/contract`. A key goes in (models.setKey, models.addEndpoint) and never comes out.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export type ProviderKind = 'deepseek' | 'pi-ai' | 'openai-compatible'

export interface WireProvider {
  /** The route name of `ctx.llm` (what a model selection names as `provider`). */
  id: string
  label: string
  kind: ProviderKind
  /** The credential holding its key; absent for a keyless endpoint. */
  keyName?: string
  /** Whether that credential has a value in some layer (the value itself is never sent). */
  keyConfigured?: boolean
  /** Registered on `ctx.llm` now (a request may name it). */
  routed: boolean
  /** Defined through this API (stored in the `llm-routes` settings section): removable here. */
  managed: boolean
  baseURL?: string
  /** Models configured on the route (managed endpoints); discovery lists the provider's own. */
  models?: string[]
}

const ProviderSchema: Schema<WireProvider> = Schema.object({
  id: Schema.string().required(),
  label: Schema.string().required(),
  kind: Schema.union(['deepseek', 'pi-ai', 'openai-compatible'] as const).required(),
  keyName: Schema.string(),
  keyConfigured: Schema.boolean(),
  routed: Schema.boolean().required(),
  managed: Schema.boolean().required(),
  baseURL: Schema.string(),
  models: Schema.array(Schema.string()),
}) as Schema<WireProvider>

const ROUTE_NAME = Schema.string()
  .pattern(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/)
  .max(64)
  .required()

export const modelsCatalog = defineMethod('models.catalog', {
  params: Schema.object({}) as Schema<Record<string, never>>,
  result: Schema.object({ providers: Schema.array(ProviderSchema).required() }) as Schema<{
    providers: WireProvider[]
  }>,
  description:
    'Every provider a key can be set for (DeepSeek, each pi-ai provider, declared endpoints): route, key name and whether it is set, routed or not.',
})

export interface SetKeyResult {
  provider: WireProvider
  /** The provider accepted the key (a models listing answered); false when it could not be checked. */
  verified: boolean
  /** Why it was not verified (network, no check for that protocol). */
  note?: string
}

export const modelsSetKey = defineMethod('models.setKey', {
  params: Schema.object({ provider: ROUTE_NAME, value: Schema.string().min(1).max(4096).required() }) as Schema<{
    provider: string
    value: string
  }>,
  result: Schema.object({
    provider: ProviderSchema.required(),
    verified: Schema.boolean().required(),
    note: Schema.string(),
  }) as Schema<SetKeyResult>,
  loopbackOnly: true,
  description:
    'Checks a key with the provider, then stores it through ctx.credentials (a rejected key is not stored: 400 KEY_REJECTED). A pi-ai provider gets its route too.',
})

export const modelsForgetKey = defineMethod('models.forgetKey', {
  params: Schema.object({ provider: ROUTE_NAME }) as Schema<{ provider: string }>,
  result: Schema.object({ provider: ProviderSchema.required() }) as Schema<{ provider: WireProvider }>,
  loopbackOnly: true,
  description: "Removes a provider's key from the writable credentials layer (a key set in the environment stays).",
})

export interface EndpointModel {
  id: string
  contextWindow?: number
}

export interface AddEndpointParams {
  name: string
  baseURL: string
  /** Stored as the credential `<NAME>_API_KEY`; absent: a keyless endpoint. */
  apiKey?: string
  models: EndpointModel[]
}

export const modelsAddEndpoint = defineMethod('models.addEndpoint', {
  params: Schema.object({
    name: ROUTE_NAME,
    baseURL: Schema.string().min(1).required(),
    apiKey: Schema.string().max(4096),
    models: Schema.array(
      Schema.object({ id: Schema.string().min(1).required(), contextWindow: Schema.natural().min(1) }),
    )
      .min(1)
      .required(),
  }) as Schema<AddEndpointParams>,
  result: Schema.object({ provider: ProviderSchema.required() }) as Schema<{ provider: WireProvider }>,
  loopbackOnly: true,
  description:
    'Declares an OpenAI-compatible endpoint with its models as a route of ctx.llm, live (stored in the llm-routes settings section).',
})

export const modelsRemoveProvider = defineMethod('models.removeProvider', {
  params: Schema.object({ name: ROUTE_NAME }) as Schema<{ name: string }>,
  result: Schema.object({ removed: Schema.boolean().required() }) as Schema<{ removed: boolean }>,
  loopbackOnly: true,
  description: 'Removes a route defined through this API (its stored key stays in the credentials).',
})

export const modelsDiscover = defineMethod('models.discover', {
  params: Schema.object({
    provider: Schema.string(),
    baseURL: Schema.string(),
    apiKey: Schema.string().max(4096),
  }) as Schema<{ provider?: string; baseURL?: string; apiKey?: string }>,
  result: Schema.object({ models: Schema.array(Schema.string()).required() }) as Schema<{ models: string[] }>,
  loopbackOnly: true,
  description: 'Asks a provider (by route) or an endpoint (by baseURL) for its model ids (GET <base>/models).',
})
