// @dsh/llm-deepseek: the DeepSeek chat-completions adapter, registered on ctx.llm as a route.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { ModelInfo, ReasoningEffort } from '@dsh/llm'
import type {} from '@dsh/credentials'
import { userAgent } from '@dsh/brand'
import { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_REQUEST_TIMEOUT_MS, DeepSeekAdapter, type KeySource } from './adapter.ts'
import { defaultEffortTable, type EffortTable } from './wire.ts'
import { plainService } from '@dsh/plain-service'

export * from './adapter.ts'
export * from './errors.ts'
export * from './wire.ts'
export * from './body.ts'

export const name = 'llm-deepseek'
export const inject = ['llm']

export const PUBLIC_BASE_URL = 'https://api.deepseek.com'
export const DEFAULT_ROUTE = 'deepseek-official'

export interface ModelEntry {
  id: string
  displayName?: string
  contextWindow: number
  maxOutputTokens?: number
  reasoning?: boolean
  supportsImages?: boolean
  supportsTools?: boolean
}

export interface Config {
  provider: string
  apiKeyEnv: string
  baseURL?: string
  models: ModelEntry[]
  strictModels: boolean
  maxTokens?: number
  streamIdleTimeoutMs: number
  maxResponseBytes: number
  requestTimeoutMs: number
  reasoningEffort: EffortTable
  headers: { [name: string]: string }
}

const defaultModels = (): ModelEntry[] => [
  {
    id: 'deepseek-v4-flash',
    displayName: 'DeepSeek V4 Flash',
    contextWindow: 1_048_576,
    maxOutputTokens: 393_216,
    reasoning: true,
    supportsTools: true,
  },
  {
    id: 'deepseek-v4-pro',
    displayName: 'DeepSeek V4 Pro',
    contextWindow: 1_048_576,
    maxOutputTokens: 393_216,
    reasoning: true,
    supportsTools: true,
  },
]

const modelSchema: Schema<ModelEntry> = Schema.object({
  id: Schema.string().required(),
  displayName: Schema.string(),
  contextWindow: Schema.natural().required(),
  maxOutputTokens: Schema.natural(),
  reasoning: Schema.boolean(),
  supportsImages: Schema.boolean(),
  supportsTools: Schema.boolean(),
}) as Schema<ModelEntry>

const effortParams = (effort: ReasoningEffort) =>
  Schema.dict(Schema.any())
    .default(defaultEffortTable()[effort])
    .description(`Body fields sent for reasoning effort \`${effort}\`.`)

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  provider: Schema.string().default(DEFAULT_ROUTE).description('Route name registered on ctx.llm.'),
  apiKeyEnv: Schema.string().default('DEEPSEEK_API_KEY').description('Environment variable holding the API key.'),
  baseURL: Schema.string().description(
    'API root (`/chat/completions` is appended). Default: $DEEPSEEK_BASE_URL, else the public API.',
  ),
  models: Schema.array(modelSchema).default(defaultModels()).description('Model catalog of the route.'),
  strictModels: Schema.boolean().default(true).description('Reject a model outside `models` before any network I/O.'),
  maxTokens: Schema.natural().description('`max_tokens` when the request names none.'),
  streamIdleTimeoutMs: Schema.natural()
    .min(1)
    .default(300_000)
    .description(
      'Longest wait for progress (headers, or an event with content, reasoning, a tool call, usage or a finish; keep-alive comments and empty chunks do not count) before TIMEOUT.',
    ),
  maxResponseBytes: Schema.natural()
    .min(1)
    .default(DEFAULT_MAX_RESPONSE_BYTES)
    .description('Body bytes read from one response before RESPONSE_TOO_LARGE (not retried by default).'),
  requestTimeoutMs: Schema.natural()
    .default(DEFAULT_REQUEST_TIMEOUT_MS)
    .description(
      'Wall-clock bound on one whole request before DEADLINE_EXCEEDED (not retried by default); 0 disables.',
    ),
  reasoningEffort: Schema.object({
    off: effortParams('off'),
    low: effortParams('low'),
    high: effortParams('high'),
    max: effortParams('max'),
  })
    .default(defaultEffortTable())
    .description('Request fields per reasoning effort.'),
  headers: Schema.dict(Schema.string()).default({}).description('Extra HTTP headers on every request.'),
}) as Schema<Partial<Config>, Config>

/** The explicit defaulting step for the endpoint: config, else `$DEEPSEEK_BASE_URL`, else the public API. */
export function resolveBaseURL(config: Pick<Config, 'baseURL'>, env: NodeJS.ProcessEnv = process.env): string {
  return config.baseURL || env.DEEPSEEK_BASE_URL || PUBLIC_BASE_URL
}

/**
 * The environment variable named by `apiKeyEnv`, read at request time (so a key exported after
 * boot is seen).
 */
export const envKeySource =
  (apiKeyEnv: string, env: NodeJS.ProcessEnv = process.env): KeySource =>
  () =>
    env[apiKeyEnv]

export function createAdapter(config: Config, getKey: KeySource = envKeySource(config.apiKeyEnv)): DeepSeekAdapter {
  return new DeepSeekAdapter({
    provider: config.provider,
    baseURL: resolveBaseURL(config),
    apiKeyEnv: config.apiKeyEnv,
    getKey,
    models: config.models.map((m): ModelInfo => ({ ...m, provider: config.provider })),
    strictModels: config.strictModels,
    maxTokens: config.maxTokens,
    streamIdleTimeoutMs: config.streamIdleTimeoutMs,
    maxResponseBytes: config.maxResponseBytes,
    requestTimeoutMs: config.requestTimeoutMs,
    efforts: config.reasoningEffort,
    headers: config.headers,
    userAgent: userAgent(),
  })
}

/**
 * The key through `ctx.credentials` (@dsh/credentials) when a credentials row is mounted: the
 * inherited environment, the project and home `.env` files, then `$DSH_HOME/.credentials.yaml`.
 * Without one, the environment alone.
 */
export function credentialsKeySource(ctx: Context, apiKeyEnv: string): KeySource {
  const fromEnv = envKeySource(apiKeyEnv)
  // Looked up once and again only after Cordis reports that `credentials` changed (a lookup per
  // request built a tracing proxy each time).
  let cached: { value: Context['credentials'] | undefined } | undefined
  ctx.on('internal/service', (name) => {
    if (name === 'credentials') cached = undefined
  })
  return async () => {
    const credentials = (cached ??= { value: ctx.get('credentials') ?? undefined }).value
    return credentials ? await credentials.get(apiKeyEnv) : fromEnv()
  }
}

export function apply(ctx: Context, config: Config): void {
  const source = credentialsKeySource(ctx, config.apiKeyEnv)
  // `llm` is a required inject (a change restarts this plugin): its plain object is read once
  // instead of through the context per request (an Error and tracing proxies per read).
  // `registerAdapter` below still goes through the context, which binds it to this plugin.
  const llm = plainService(ctx.llm)
  // The key sent is remembered by ctx.llm, which scrubs it from every error it passes on.
  const getKey: KeySource = async () => {
    const key = await source()
    llm.rememberSecret(key)
    return key
  }
  ctx.llm.registerAdapter(createAdapter(config, getKey))
}
