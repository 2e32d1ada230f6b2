// Loading pi-ai on demand (a dormant plugin imports none of it) and building one pi-ai Provider
// plus model table per route.
import type { Api, Model, Provider, ProviderStreams } from '@earendil-works/pi-ai'
import type { ModelInfo } from '@dsh/llm'
import { OPENAI_COMPATIBLE, routeKind, type CatalogView, type ChatApi, type RouteConfig } from './config.ts'

export type PiRoot = typeof import('@earendil-works/pi-ai')
type PiAll = typeof import('@earendil-works/pi-ai/providers/all')

export interface PiCatalog extends CatalogView {
  root: PiRoot
  /** A freshly constructed built-in provider. */
  builtin(id: string): Provider
}

let loading: Promise<PiCatalog> | undefined

/** The installed pi-ai and its built-in catalog, imported once per process. */
export function loadCatalog(): Promise<PiCatalog> {
  loading ??= (async () => {
    const [root, all] = (await Promise.all([
      import('@earendil-works/pi-ai'),
      import('@earendil-works/pi-ai/providers/all'),
    ])) as [PiRoot, PiAll]
    const providers = new Map(all.builtinProviders().map((p) => [p.id, p]))
    const providerIds = [...providers.keys()].sort()
    return {
      root,
      providerIds,
      modelIds: (id) =>
        providers
          .get(id)
          ?.getModels()
          .map((m) => m.id) ?? [],
      builtin: (id) => {
        const fresh = all.builtinProviders().find((p) => p.id === id)
        if (!fresh) throw new Error(`llm-pi-ai: pi-ai has no provider '${id}'`)
        return fresh
      },
    }
  })()
  return loading
}

/** Just the pi-ai root module, for routes that need no built-in provider. */
export function loadRoot(): Promise<PiRoot> {
  return import('@earendil-works/pi-ai') as Promise<PiRoot>
}

type LazyModule = Promise<{ [name: string]: unknown }>
/**
 * pi-ai's lazy stream module and factory name per wire protocol. Each import is a literal so
 * bundlers (scripts/prelink.mjs) resolve it; a computed specifier would stay bare and fail to
 * resolve from the bundle's directory.
 */
const LAZY_API: { [api in ChatApi]: [load: () => LazyModule, factory: string] } = {
  'openai-completions': [() => import('@earendil-works/pi-ai/api/openai-completions.lazy'), 'openAICompletionsApi'],
  'openai-responses': [() => import('@earendil-works/pi-ai/api/openai-responses.lazy'), 'openAIResponsesApi'],
  'azure-openai-responses': [
    () => import('@earendil-works/pi-ai/api/azure-openai-responses.lazy'),
    'azureOpenAIResponsesApi',
  ],
  'openai-codex-responses': [
    () => import('@earendil-works/pi-ai/api/openai-codex-responses.lazy'),
    'openAICodexResponsesApi',
  ],
  'anthropic-messages': [() => import('@earendil-works/pi-ai/api/anthropic-messages.lazy'), 'anthropicMessagesApi'],
  'google-generative-ai': [
    () => import('@earendil-works/pi-ai/api/google-generative-ai.lazy'),
    'googleGenerativeAIApi',
  ],
  'google-vertex': [() => import('@earendil-works/pi-ai/api/google-vertex.lazy'), 'googleVertexApi'],
  'mistral-conversations': [
    () => import('@earendil-works/pi-ai/api/mistral-conversations.lazy'),
    'mistralConversationsApi',
  ],
  'bedrock-converse-stream': [
    () => import('@earendil-works/pi-ai/api/bedrock-converse-stream.lazy'),
    'bedrockConverseStreamApi',
  ],
  'pi-messages': [() => import('@earendil-works/pi-ai/api/pi-messages.lazy'), 'piMessagesApi'],
}

/** pi-ai's lazy stream implementation of one wire protocol (its SDK loads on the first request). */
export async function lazyApi(api: ChatApi): Promise<ProviderStreams> {
  const [load, name] = LAZY_API[api]
  const factory = (await load())[name]
  if (typeof factory !== 'function') throw new Error(`llm-pi-ai: pi-ai has no lazy implementation for '${api}'`)
  return (factory as () => ProviderStreams)()
}

export interface RouteRuntime {
  route: string
  /** The pi-ai provider id, or `openai-compatible`. */
  kind: string
  provider: Provider
  models: Map<string, Model<Api>>
  infos: ModelInfo[]
  /** Keyless: an openai-compatible route without `apiKeyEnv`. */
  keyless: boolean
}

const ZERO_COST = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }

/** Builds the pi-ai provider and the model table of one route. */
export async function buildRoute(
  route: string,
  row: RouteConfig,
  catalog: PiCatalog | undefined,
  root: PiRoot,
): Promise<RouteRuntime> {
  const kind = routeKind(route, row, catalog?.providerIds ?? [])
  const base = kind === OPENAI_COMPATIBLE ? undefined : catalog!.builtin(kind)
  const defaultApi: ChatApi = row.api ?? 'openai-completions'
  let provider: Provider
  if (!base) {
    provider = root.createProvider({
      id: route,
      name: route,
      baseUrl: row.baseURL,
      // Keys are resolved by the adapter (ctx.credentials / env) and passed per request.
      auth: { apiKey: { name: `${route} API key`, resolve: async () => ({ auth: {} }) } },
      models: [],
      api: await lazyApi(defaultApi),
    })
  } else if (row.api) {
    // Same identity and auth, another wire protocol for every model of the route.
    provider = root.createProvider({
      id: base.id,
      name: base.name,
      baseUrl: base.baseUrl,
      headers: base.headers,
      auth: base.auth,
      models: [],
      api: await lazyApi(row.api),
    })
  } else {
    provider = base
  }

  const models = new Map<string, Model<Api>>()
  const inherited = base ? base.getModels() : []
  for (const model of inherited) models.set(model.id, model)
  const template: Model<Api> | undefined = inherited[0]
  for (const entry of row.models) {
    const known = models.get(entry.id)
    const from: Model<Api> = known ?? {
      id: entry.id,
      name: entry.id,
      api: template?.api ?? defaultApi,
      provider: base ? base.id : route,
      baseUrl: template?.baseUrl ?? base?.baseUrl ?? row.baseURL ?? '',
      reasoning: false,
      input: ['text'],
      cost: ZERO_COST,
      contextWindow: entry.contextWindow ?? 0,
      maxTokens: entry.maxOutputTokens ?? entry.contextWindow ?? 0,
      ...(template?.compat ? { compat: template.compat } : {}),
    }
    models.set(entry.id, {
      ...from,
      ...(entry.displayName !== undefined ? { name: entry.displayName } : {}),
      ...(entry.contextWindow !== undefined ? { contextWindow: entry.contextWindow } : {}),
      ...(entry.maxOutputTokens !== undefined ? { maxTokens: entry.maxOutputTokens } : {}),
      ...(entry.reasoning !== undefined ? { reasoning: entry.reasoning } : {}),
      ...(entry.supportsImages !== undefined ? { input: entry.supportsImages ? ['text', 'image'] : ['text'] } : {}),
    })
  }
  // Route-wide overrides, field by field.
  const compat = Object.keys(row.compat).length ? row.compat : undefined
  for (const [id, model] of models) {
    models.set(id, {
      ...model,
      ...(row.api ? { api: row.api } : {}),
      ...(row.baseURL ? { baseUrl: row.baseURL } : {}),
      // Flags of another wire protocol do not apply once `api` is overridden.
      ...(compat || row.api ? { compat: { ...(row.api ? {} : model.compat), ...compat } as Model<Api>['compat'] } : {}),
    })
  }
  const configured = new Map(row.models.map((m) => [m.id, m]))
  const infos: ModelInfo[] = [...models.values()].map((model) => ({
    provider: route,
    id: model.id,
    displayName: model.name,
    contextWindow: model.contextWindow,
    maxOutputTokens: model.maxTokens,
    reasoning: model.reasoning,
    supportsImages: model.input.includes('image'),
    supportsTools: configured.get(model.id)?.supportsTools ?? true,
  }))
  return { route, kind, provider, models, infos, keyless: !base && !row.apiKeyEnv }
}
