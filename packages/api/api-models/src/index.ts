// @dsh/api-models: the Models page's host half. It lists every provider a key can be set for
// (DeepSeek, each provider the installed pi-ai ships, endpoints declared here), checks a pasted
// key with the provider before storing it through ctx.credentials, declares OpenAI-compatible
// endpoints, and asks a provider for its models. Routes it adds live in the `llm-routes`
// settings section and are registered on ctx.llm as that section changes: no restart.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ApiError } from '@dsh/web-protocol'
import { whereToSet as whereToSetIn } from '@dsh/credentials'
import type {} from '@dsh/settings'
import type {} from '@dsh/llm'
import type {} from '@dsh/api-gateway'
import type {} from '@dsh/api-settings'
import type {} from '@dsh/permission-presets'
import {
  checkRoutes,
  keyLookup,
  loadCatalog,
  buildRoute,
  PiAiAdapter,
  RouteConfig,
  RouteConfigError,
  OPENAI_COMPATIBLE,
} from '@dsh/llm-pi-ai'
import { resolveBaseURL, DEFAULT_ROUTE as DEEPSEEK_ROUTE } from '@dsh/llm-deepseek'
import { userAgent } from '@dsh/brand'
import {
  modelsAddEndpoint,
  modelsCatalog,
  modelsDiscover,
  modelsForgetKey,
  modelsRemoveProvider,
  modelsSetKey,
  type AddEndpointParams,
  type SetKeyResult,
  type WireProvider,
} from './contract.ts'
import { probe, protocolOfApi, type ProbeOutcome, type ProbeTarget } from './probe.ts'

export * from './contract.ts'
export { probe, protocolOfApi, modelIdsOf, type ProbeOutcome, type ProbeTarget, type ProbeProtocol } from './probe.ts'

/** The settings section holding the routes declared here: `llm-routes: {routes: {<name>: <llm-pi-ai route>}}`. */
export const SETTINGS_NAMESPACE = 'llm-routes'
/** The section of @dsh/permission-presets exposed here (`permissions: {default: <preset>}`). */
export const PERMISSIONS_NAMESPACE = 'permissions'

type Route = ReturnType<typeof RouteConfig>
export interface RoutesSection {
  routes: Record<string, Route>
}
const RoutesSchema = Schema.object({
  routes: Schema.dict(RouteConfig)
    .default({})
    .description('Routes of @dsh/llm-pi-ai declared from the web UI, by route name.'),
}) as Schema<Partial<RoutesSection>, RoutesSection>
/** The section's validator. It works on a copy: settings values are frozen and schemastery fills defaults in place. */
export const RoutesSettings = (value: unknown): RoutesSection =>
  RoutesSchema(value === undefined ? undefined : (structuredClone(value) as never))

export interface Config {
  /** Longest wait for a provider's model listing (key check, discovery). */
  probeTimeoutMs: number
  /** Context window given to an endpoint model declared without one. */
  defaultContextWindow: number
  /** The DeepSeek route (@dsh/llm-deepseek) and its key. */
  deepseek: { route: string; keyName: string; baseURL?: string }
  /** Expose the `permissions` section (default permission mode of new sessions) to settings.describe/update. */
  exposePermissions: boolean
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  probeTimeoutMs: Schema.natural()
    .min(1)
    .default(10_000)
    .description('Longest wait for a provider model listing (key check, discovery).'),
  defaultContextWindow: Schema.natural()
    .min(1)
    .default(131_072)
    .description('Context window of an endpoint model declared without one.'),
  deepseek: Schema.object({
    route: Schema.string().default(DEEPSEEK_ROUTE).description('Route of @dsh/llm-deepseek.'),
    keyName: Schema.string().default('DEEPSEEK_API_KEY').description('Credential holding the DeepSeek key.'),
    baseURL: Schema.string().description(
      'Endpoint used to check a DeepSeek key. Default: $DEEPSEEK_BASE_URL, else the public API.',
    ),
  }).default({ route: DEEPSEEK_ROUTE, keyName: 'DEEPSEEK_API_KEY' } as never),
  exposePermissions: Schema.boolean()
    .default(true)
    .description('Expose the permissions section (default permission mode of new sessions) to the settings API.'),
}) as Schema<Partial<Config>, Config>

export const name = 'api-models'
export const inject = ['llm', 'settings']

interface PiProvider {
  id: string
  label: string
  api?: string
  baseURL?: string
  keyNames: string[]
}

type Catalog = Awaited<ReturnType<typeof loadCatalog>>

/** What the installed pi-ai ships: one entry per provider, with the key variables its auth reads. */
async function piProviders(catalog: Catalog): Promise<PiProvider[]> {
  const out: PiProvider[] = []
  for (const id of catalog.providerIds) {
    const provider = catalog.builtin(id)
    const first = provider.getModels()[0]
    const asked: string[] = []
    const auth = provider.auth.apiKey
    if (auth) {
      try {
        await auth.resolve({
          ctx: { env: async (n: string) => void asked.push(n), fileExists: async () => false },
          signal: new AbortController().signal,
        } as never)
      } catch {
        // only the names it asked for matter
      }
    }
    const entry: PiProvider = { id, label: provider.name || id, keyNames: [...new Set(asked)] }
    if (first?.api) entry.api = first.api
    const base = first?.baseUrl || provider.baseUrl
    if (base) entry.baseURL = base
    out.push(entry)
  }
  return out
}

/** `my-endpoint` -> `MY_ENDPOINT_API_KEY`. */
export function keyNameOf(route: string): string {
  const stem = route
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
  return `${/^[0-9]/.test(stem) ? 'KEY_' : ''}${stem || 'ENDPOINT'}_API_KEY`
}

function apiError(code: string, message: string, status: number, field?: string): ApiError {
  return new ApiError(code, message, { status, ...(field ? { field } : {}) })
}

export function apply(ctx: Context, config: Config): void {
  const logger = ctx.logger('api-models')
  const section = ctx.settings.section(SETTINGS_NAMESPACE, RoutesSettings)
  let catalogPromise: Promise<{ catalog: Catalog; providers: PiProvider[] }> | undefined
  const pi = () =>
    (catalogPromise ??= loadCatalog().then(async (catalog) => ({ catalog, providers: await piProviders(catalog) })))
  const lookup = keyLookup(ctx)
  const agent = userAgent()

  // Registered routes of this plugin and the problems of those that could not be registered.
  let registered: Array<() => void> = []
  const problems = new Map<string, string>()
  let active = true
  ctx.effect(
    () => () => {
      active = false
    },
    'api-models: active',
  )

  let chain: Promise<void> = Promise.resolve()
  const sync = (): Promise<void> => {
    chain = chain
      .then(async () => {
        for (const dispose of registered) dispose()
        registered = []
        problems.clear()
        const routes = Object.entries(section.value.routes)
        if (!active || !routes.length) return
        const { catalog } = await pi()
        for (const [route, row] of routes) {
          if (!active) return
          try {
            if (ctx.llm.listProviders().includes(route))
              throw new Error(`route '${route}' is already registered by another row`)
            checkRoutes({ routes: { [route]: row } }, catalog)
            const runtime = await buildRoute(route, row, catalog, catalog.root)
            if (!active) return
            registered.push(
              ctx.llm.registerAdapter(
                new PiAiAdapter({
                  runtime,
                  row,
                  root: catalog.root,
                  lookup,
                  whereToSet: async (n) => whereToSet(n),
                  userAgent: agent,
                  rememberSecret: (value) => ctx.llm.rememberSecret(value),
                }),
              ),
            )
          } catch (error) {
            const message = (error as Error).message
            problems.set(route, message)
            logger.warn('%s: route %s not registered: %s', section.namespace, route, message)
          }
        }
      })
      .catch((error) => logger.warn('syncing routes failed: %s', (error as Error).message))
    return chain
  }
  section.onChange(() => void sync())
  void sync()

  const credentials = () => ctx.get('credentials')
  async function whereToSet(n: string): Promise<string> {
    const service = credentials()
    if (!service) return `export ${n}=... in the environment`
    try {
      return whereToSetIn(n, (await service.describe(n)).layers)
    } catch {
      return `export ${n}=... in the environment`
    }
  }
  async function configured(keyName: string): Promise<boolean> {
    const service = credentials()
    if (service) {
      try {
        return (await service.describe(keyName)).configured
      } catch {
        return false
      }
    }
    return !!process.env[keyName]
  }

  const deepseekBase = () => config.deepseek.baseURL || resolveBaseURL({})

  /** Every provider, as the Models page lists them. */
  async function list(): Promise<WireProvider[]> {
    await chain
    const routed = new Set(ctx.llm.listProviders())
    const managed = section.value.routes
    const { providers } = await pi()
    const out: WireProvider[] = []
    const deepseek: WireProvider = {
      id: config.deepseek.route,
      label: 'DeepSeek',
      kind: 'deepseek',
      keyName: config.deepseek.keyName,
      keyConfigured: await configured(config.deepseek.keyName),
      routed: routed.has(config.deepseek.route),
      managed: false,
      baseURL: deepseekBase(),
    }
    out.push(deepseek)
    for (const [route, row] of Object.entries(managed)) {
      if (row.provider !== OPENAI_COMPATIBLE && providers.some((p) => p.id === route && !row.provider)) continue
      const entry: WireProvider = {
        id: route,
        label: route,
        kind: 'openai-compatible',
        routed: routed.has(route) && !problems.has(route),
        managed: true,
        models: row.models.map((m) => m.id),
      }
      if (row.baseURL) entry.baseURL = row.baseURL
      if (row.apiKeyEnv) {
        entry.keyName = row.apiKeyEnv
        entry.keyConfigured = await configured(row.apiKeyEnv)
      }
      out.push(entry)
    }
    for (const provider of providers) {
      // One row per provider: pi-ai's catalog has its own DeepSeek entry (and may name a route
      // declared above); the native DeepSeek row is DeepSeek here, unless pi-ai's route is in use.
      if (out.some((p) => p.id === provider.id)) continue
      const sameAsDeepseek = provider.id === 'deepseek' || provider.keyNames.includes(config.deepseek.keyName)
      if (sameAsDeepseek && !routed.has(provider.id) && !managed[provider.id]) continue
      const entry: WireProvider = {
        id: provider.id,
        label: provider.label,
        kind: 'pi-ai',
        routed: routed.has(provider.id) && !problems.has(provider.id),
        managed: !!managed[provider.id],
      }
      const baseURL = managed[provider.id]?.baseURL ?? provider.baseURL
      if (baseURL) entry.baseURL = baseURL
      if (provider.keyNames[0]) {
        entry.keyName = provider.keyNames[0]
        entry.keyConfigured = await configured(provider.keyNames[0])
      }
      out.push(entry)
    }
    return out
  }

  async function find(
    id: string,
    field: string,
  ): Promise<{ wire: WireProvider; target?: Omit<ProbeTarget, 'key'>; pi?: PiProvider }> {
    const all = await list()
    const wire = all.find((p) => p.id === id)
    if (!wire)
      throw apiError(
        'UNKNOWN_PROVIDER',
        `no provider ${JSON.stringify(id)} (known: ${all
          .map((p) => p.id)
          .slice(0, 40)
          .join(', ')}, ...)`,
        404,
        field,
      )
    if (wire.kind === 'deepseek') return { wire, target: { protocol: 'openai', baseURL: deepseekBase() } }
    if (wire.kind === 'openai-compatible')
      return { wire, ...(wire.baseURL ? { target: { protocol: 'openai' as const, baseURL: wire.baseURL } } : {}) }
    const { providers } = await pi()
    const entry = providers.find((p) => p.id === id)!
    const row = section.value.routes[id]
    const protocol = protocolOfApi(row?.api ?? entry.api)
    const baseURL = row?.baseURL ?? entry.baseURL
    return { wire, pi: entry, ...(protocol && baseURL ? { target: { protocol, baseURL } } : {}) }
  }

  function refused(provider: string, outcome: Extract<ProbeOutcome, { kind: 'rejected' }>): ApiError {
    return apiError(
      'KEY_REJECTED',
      `${provider} rejected the key (HTTP ${outcome.status}: ${outcome.message || 'unauthorized'}); it was not stored`,
      400,
      'value',
    )
  }

  async function writeRoutes(next: Record<string, unknown>): Promise<void> {
    await ctx.settings.replace(SETTINGS_NAMESPACE, { routes: next } as never, {
      validate: (value) => void ctx.settings.validate(SETTINGS_NAMESPACE, RoutesSettings, value),
    })
    await sync()
  }

  function storedRoutes(): Record<string, unknown> {
    const raw = ctx.settings.get(SETTINGS_NAMESPACE) as { routes?: Record<string, unknown> } | undefined
    return structuredClone({ ...(raw?.routes ?? {}) })
  }

  async function setKey(params: { provider: string; value: string }, signal: AbortSignal): Promise<SetKeyResult> {
    const service = credentials()
    if (!service) throw apiError('UNAVAILABLE', 'models.setKey: no credentials provider is mounted', 503)
    const value = params.value.trim()
    if (!value || /\s/.test(value))
      throw apiError('INVALID_PARAMS', 'models.setKey: a key is one word without spaces', 400, 'value')
    const { wire, target } = await find(params.provider, 'provider')
    if (!wire.keyName) {
      throw apiError(
        'NO_KEY',
        `models.setKey: ${wire.label} takes no API key here (keyless endpoint, or ambient auth of its SDK)`,
        400,
        'provider',
      )
    }
    let verified = false
    let note: string | undefined
    if (target) {
      const outcome = await probe({ ...target, key: value }, config.probeTimeoutMs, signal)
      if (outcome.kind === 'rejected') throw refused(wire.label, outcome)
      if (outcome.kind === 'ok') verified = true
      else note = `not verified: ${outcome.message}`
    } else note = `not verified: no key check for ${wire.label}'s protocol`
    try {
      await service.set(wire.keyName, value)
    } catch (error) {
      throw apiError(
        (error as { code?: string }).code ?? 'INTERNAL',
        `models.setKey: ${String((error as Error).message)
          .split(value)
          .join('[redacted]')}`,
        409,
      )
    }
    ctx.llm.rememberSecret(value)
    // A pi-ai provider becomes usable once it has a route.
    if (wire.kind === 'pi-ai' && !wire.routed && !section.value.routes[wire.id]) {
      await writeRoutes({ ...storedRoutes(), [wire.id]: {} })
    }
    const provider = (await list()).find((p) => p.id === wire.id)!
    return { provider, verified, ...(note ? { note } : {}) }
  }

  async function forgetKey(params: { provider: string }): Promise<{ provider: WireProvider }> {
    const service = credentials()
    if (!service) throw apiError('UNAVAILABLE', 'models.forgetKey: no credentials provider is mounted', 503)
    const { wire } = await find(params.provider, 'provider')
    if (!wire.keyName) throw apiError('NO_KEY', `models.forgetKey: ${wire.label} has no key here`, 400, 'provider')
    try {
      await service.unset(wire.keyName)
    } catch (error) {
      throw apiError(
        (error as { code?: string }).code ?? 'INTERNAL',
        `models.forgetKey: ${(error as Error).message}`,
        409,
      )
    }
    return { provider: (await list()).find((p) => p.id === wire.id)! }
  }

  async function addEndpoint(params: AddEndpointParams, signal: AbortSignal): Promise<{ provider: WireProvider }> {
    const name = params.name
    await chain
    const managedNow = section.value.routes
    if (ctx.llm.listProviders().includes(name) && !managedNow[name]) {
      throw apiError(
        'ROUTE_TAKEN',
        `models.addEndpoint: route '${name}' is already registered by another row; pick another name`,
        409,
        'name',
      )
    }
    const seen = new Set<string>()
    for (const [i, model] of params.models.entries()) {
      if (seen.has(model.id))
        throw apiError(
          'INVALID_PARAMS',
          `models.addEndpoint: models[${i}].id: duplicate model id '${model.id}'`,
          400,
          `models[${i}].id`,
        )
      seen.add(model.id)
    }
    const row: Record<string, unknown> = {
      provider: OPENAI_COMPATIBLE,
      baseURL: params.baseURL.trim(),
      models: params.models.map((m) => ({
        id: m.id.trim(),
        contextWindow: m.contextWindow ?? config.defaultContextWindow,
      })),
    }
    const apiKey = params.apiKey?.trim()
    if (apiKey) row.apiKeyEnv = keyNameOf(name)
    try {
      checkRoutes({ routes: { [name]: RouteConfig(row as never) } }, undefined)
    } catch (error) {
      if (error instanceof RouteConfigError)
        throw apiError(
          'INVALID_PARAMS',
          `models.addEndpoint: ${error.field || 'name'}: ${error.message.replace(/^llm-pi-ai: routes\.[^:]*: /, '')}`,
          400,
          error.field || 'name',
        )
      throw apiError('INVALID_PARAMS', `models.addEndpoint: ${(error as Error).message}`, 400)
    }
    if (apiKey) {
      const outcome = await probe(
        { protocol: 'openai', baseURL: row.baseURL as string, key: apiKey },
        config.probeTimeoutMs,
        signal,
      )
      if (outcome.kind === 'rejected') throw refused(name, outcome)
      const service = credentials()
      if (!service)
        throw apiError('UNAVAILABLE', 'models.addEndpoint: no credentials provider is mounted to keep the key', 503)
      await service.set(row.apiKeyEnv as string, apiKey)
      ctx.llm.rememberSecret(apiKey)
    }
    await writeRoutes({ ...storedRoutes(), [name]: row })
    const problem = problems.get(name)
    if (problem)
      throw apiError('ROUTE_FAILED', `models.addEndpoint: the route was stored but not registered: ${problem}`, 500)
    return { provider: (await list()).find((p) => p.id === name)! }
  }

  async function removeProvider(params: { name: string }): Promise<{ removed: boolean }> {
    const routes = storedRoutes()
    if (!(params.name in routes)) return { removed: false }
    delete routes[params.name]
    await writeRoutes(routes)
    return { removed: true }
  }

  async function discover(
    params: { provider?: string; baseURL?: string; apiKey?: string },
    signal: AbortSignal,
  ): Promise<{ models: string[] }> {
    let target: ProbeTarget
    let label: string
    if (params.provider) {
      const found = await find(params.provider, 'provider')
      if (!found.target)
        throw apiError(
          'UNSUPPORTED',
          `models.discover: no model listing is known for ${found.wire.label}'s protocol`,
          400,
          'provider',
        )
      const key = params.apiKey || (found.wire.keyName ? await lookup(found.wire.keyName) : undefined)
      target = { ...found.target, ...(key ? { key } : {}) }
      label = found.wire.label
    } else if (params.baseURL) {
      target = { protocol: 'openai', baseURL: params.baseURL.trim(), ...(params.apiKey ? { key: params.apiKey } : {}) }
      label = params.baseURL
    } else throw apiError('INVALID_PARAMS', 'models.discover: give a provider or a baseURL', 400, 'provider')
    const outcome = await probe(target, config.probeTimeoutMs, signal)
    if (outcome.kind === 'rejected')
      throw apiError(
        'KEY_REJECTED',
        `${label} rejected the key (HTTP ${outcome.status}: ${outcome.message || 'unauthorized'})`,
        400,
        params.provider ? 'provider' : 'apiKey',
      )
    if (outcome.kind === 'failed')
      throw apiError(
        'DISCOVERY_FAILED',
        `models.discover: ${outcome.message}`,
        502,
        params.provider ? 'provider' : 'baseURL',
      )
    return { models: outcome.models }
  }

  // The General page's default permission mode: @dsh/permission-presets reads `permissions.default`
  // but builds its schema from the running preset table, so it is exposed from here.
  if (config.exposePermissions) {
    ctx.inject(['settingsCatalog', 'permissionPresets'], (c) => {
      const schema = Schema.object({
        default: Schema.union(c.permissionPresets.names()).description('Permission mode of new sessions.'),
      })
      c.settingsCatalog.expose(PERMISSIONS_NAMESPACE, schema, {
        title: 'Default permission mode',
        description: 'The permission mode new sessions start with.',
      })
    })
  }

  ctx.plugin({
    name: 'api-models-methods',
    inject: ['api'],
    apply(c: Context) {
      const api = c.api
      api.register(modelsCatalog, async () => ({ providers: await list() }))
      api.register(modelsSetKey, (p, call) => setKey(p, call.signal))
      api.register(modelsForgetKey, (p) => forgetKey(p))
      api.register(modelsAddEndpoint, (p, call) => addEndpoint(p, call.signal))
      api.register(modelsRemoveProvider, (p) => removeProvider(p))
      api.register(modelsDiscover, (p, call) => discover(p, call.signal))
    },
  })
}

export default { name, inject, Config, apply }
