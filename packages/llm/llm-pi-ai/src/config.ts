// Config of @dsh/llm-pi-ai: a dict of routes. The schema checks shapes; `checkRoutes` checks what
// needs the installed pi-ai catalog (provider ids, inherited models) and names the route and field.
import Schema from 'schemastery'

/** Default response byte cap (256 MiB): far above the framing of the largest real answer. */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
/** Default overall request deadline: one hour. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 3_600_000

/** The route kind for an endpoint pi-ai does not ship, declared outright. */
export const OPENAI_COMPATIBLE = 'openai-compatible'

/** Wire protocols (pi-ai API ids) a route may select with `api`. */
export const CHAT_APIS = [
  'openai-completions',
  'openai-responses',
  'azure-openai-responses',
  'openai-codex-responses',
  'anthropic-messages',
  'google-generative-ai',
  'google-vertex',
  'mistral-conversations',
  'bedrock-converse-stream',
  'pi-messages',
] as const
export type ChatApi = (typeof CHAT_APIS)[number]

export interface RouteModel {
  id: string
  displayName?: string
  /** Required for a model the pi-ai catalog does not know. */
  contextWindow?: number
  maxOutputTokens?: number
  reasoning?: boolean
  supportsImages?: boolean
  supportsTools?: boolean
}

export interface RouteConfig {
  /** A pi-ai provider id, or `openai-compatible`. Default: the route name when it is a pi-ai provider id. */
  provider?: string
  /** Wire protocol override; default the catalog's (`openai-completions` for `openai-compatible`). */
  api?: ChatApi
  /** Endpoint override (required for `openai-compatible`). */
  baseURL?: string
  /** Credential name holding the key, read from ctx.credentials, else process.env. */
  apiKeyEnv?: string
  /** Added to (or overriding, by id) the inherited catalog. */
  models: RouteModel[]
  /** Extra HTTP headers on every request of the route. */
  headers: { [name: string]: string }
  /** pi-ai `compat` flags merged into every model of the route (e.g. `supportsDeveloperRole: false`). */
  compat: { [flag: string]: unknown }
  /** Output limit when the request names none; default the model's own limit. */
  maxTokens?: number
  /** Longest wait for the next stream event (keep-alive comments are not events) before `TIMEOUT`. */
  streamIdleTimeoutMs: number
  /** Body bytes read from one response before `RESPONSE_TOO_LARGE`. */
  maxResponseBytes: number
  /** Wall-clock bound on one whole request before `DEADLINE_EXCEEDED`; 0 disables. */
  requestTimeoutMs: number
}

export interface Config {
  routes: { [route: string]: RouteConfig }
}

const modelSchema: Schema<RouteModel> = Schema.object({
  id: Schema.string().required(),
  displayName: Schema.string(),
  contextWindow: Schema.natural().min(1),
  maxOutputTokens: Schema.natural().min(1),
  reasoning: Schema.boolean(),
  supportsImages: Schema.boolean(),
  supportsTools: Schema.boolean(),
}) as Schema<RouteModel>

export const RouteConfig: Schema<Partial<RouteConfig>, RouteConfig> = Schema.object({
  provider: Schema.string().description(
    'pi-ai provider id, or `openai-compatible`. Default: the route name if pi-ai ships it.',
  ),
  api: Schema.union(CHAT_APIS.map((api) => Schema.const(api))).description('Wire protocol override.'),
  baseURL: Schema.string().description('Endpoint override; required for `openai-compatible`.'),
  apiKeyEnv: Schema.string()
    .pattern(/^[A-Za-z_][A-Za-z0-9_]*$/)
    .description('Credential name holding the API key.'),
  models: Schema.array(modelSchema).default([]).description('Models added to or overriding the inherited catalog.'),
  headers: Schema.dict(Schema.string()).default({}).description('Extra HTTP headers.'),
  compat: Schema.dict(Schema.any()).default({}).description('pi-ai compat flags for every model of the route.'),
  maxTokens: Schema.natural().min(1).description('Output limit when the request names none.'),
  streamIdleTimeoutMs: Schema.natural()
    .min(1)
    .default(300_000)
    .description(
      'Longest wait for progress (text, reasoning, a tool call or the end; keep-alive comments and empty chunks do not count) before TIMEOUT.',
    ),
  maxResponseBytes: Schema.natural()
    .min(1)
    .default(DEFAULT_MAX_RESPONSE_BYTES)
    .description('Body bytes read from one response before RESPONSE_TOO_LARGE (not retried by default).'),
  requestTimeoutMs: Schema.natural()
    .default(DEFAULT_REQUEST_TIMEOUT_MS)
    .description('Wall-clock bound on one request before DEADLINE_EXCEEDED (not retried by default); 0 disables.'),
}) as Schema<Partial<RouteConfig>, RouteConfig>

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  routes: Schema.dict(RouteConfig)
    .default({})
    .description('Routes registered on ctx.llm, keyed by route name. Empty: dormant.'),
}) as Schema<Partial<Config>, Config>

/** Thrown for a route the installed pi-ai cannot serve; the message names `routes.<route>.<field>`. */
export class RouteConfigError extends Error {
  override name = 'RouteConfigError'
  constructor(
    readonly route: string,
    readonly field: string,
    detail: string,
  ) {
    super(`llm-pi-ai: routes.${route}${field ? `.${field}` : ''}: ${detail}`)
  }
}

/** The parts of the pi-ai catalog the checks need. */
export interface CatalogView {
  providerIds: readonly string[]
  modelIds(provider: string): readonly string[]
}

/** The pi-ai provider a route resolves to (or `openai-compatible`). */
export function routeKind(route: string, config: RouteConfig, knownProviders: readonly string[]): string {
  if (config.provider) return config.provider
  return knownProviders.includes(route) ? route : OPENAI_COMPATIBLE
}

/** Checks every route against the catalog; throws the first problem as a RouteConfigError. */
export function checkRoutes(config: Config, catalog: CatalogView | undefined): void {
  for (const [route, row] of Object.entries(config.routes)) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._:-]*$/.test(route)) {
      throw new RouteConfigError(
        route,
        '',
        'a route name is letters, digits and . _ : - (it is the `provider` of requests)',
      )
    }
    const kind = routeKind(route, row, catalog?.providerIds ?? [])
    const seen = new Set<string>()
    for (const [i, model] of row.models.entries()) {
      if (seen.has(model.id)) throw new RouteConfigError(route, `models[${i}].id`, `duplicate model id '${model.id}'`)
      seen.add(model.id)
    }
    if (row.baseURL !== undefined) {
      let url: URL | undefined
      try {
        url = new URL(row.baseURL)
      } catch {
        url = undefined
      }
      if (!url || !/^https?:$/.test(url.protocol))
        throw new RouteConfigError(route, 'baseURL', `'${row.baseURL}' is not an http(s) URL`)
    }
    if (kind === OPENAI_COMPATIBLE) {
      if (!row.baseURL)
        throw new RouteConfigError(
          route,
          'baseURL',
          'an openai-compatible route needs its endpoint (e.g. http://127.0.0.1:11434/v1)',
        )
      if (row.models.length === 0)
        throw new RouteConfigError(
          route,
          'models',
          'an openai-compatible route needs at least one model with its contextWindow',
        )
      for (const [i, model] of row.models.entries()) {
        if (model.contextWindow === undefined)
          throw new RouteConfigError(route, `models[${i}].contextWindow`, `model '${model.id}' needs a contextWindow`)
      }
      continue
    }
    if (!catalog?.providerIds.includes(kind)) {
      const known = catalog ? catalog.providerIds.join(', ') : '(catalog not loaded)'
      throw new RouteConfigError(
        route,
        'provider',
        `'${kind}' is not a provider of the installed @earendil-works/pi-ai; known: ${OPENAI_COMPATIBLE}, ${known}`,
      )
    }
    const inherited = new Set(catalog.modelIds(kind))
    for (const [i, model] of row.models.entries()) {
      if (!inherited.has(model.id) && model.contextWindow === undefined) {
        throw new RouteConfigError(
          route,
          `models[${i}].contextWindow`,
          `model '${model.id}' is not in the ${kind} catalog, so it needs a contextWindow`,
        )
      }
    }
  }
}
