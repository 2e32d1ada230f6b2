// @dsh/llm-pi-ai: every provider of @earendil-works/pi-ai, plus declared OpenAI-compatible
// endpoints, as routes on ctx.llm. One adapter per configured route; no routes, no adapters and
// no pi-ai import at all.
import type { Context } from 'cordis'
import type { CredentialsService } from '@dsh/credentials'
import { userAgent } from '@dsh/brand'
import { PiAiAdapter, type KeyLookup } from './adapter.ts'
import { buildRoute, loadCatalog, loadRoot, type PiCatalog } from './catalog.ts'
import { checkRoutes, type Config, OPENAI_COMPATIBLE } from './config.ts'

export { PiAiAdapter, type KeyLookup, type PiAiAdapterOptions } from './adapter.ts'
export { buildRoute, loadCatalog, type RouteRuntime } from './catalog.ts'
export {
  CHAT_APIS,
  checkRoutes,
  Config,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_REQUEST_TIMEOUT_MS,
  OPENAI_COMPATIBLE,
  RouteConfig,
  RouteConfigError,
  type ChatApi,
  type RouteModel,
} from './config.ts'
export { EventMapper, toPiContext, toTokenUsage } from './convert.ts'
export {
  ERROR_BODY_BYTES,
  mapFailure,
  recordingFetch,
  retryAfterMs,
  type BodyLimits,
  type WireRecord,
} from './errors.ts'

export const name = 'llm-pi-ai'
export const inject = ['llm']

/** ctx.credentials when mounted (read at request time), else process.env. */
function credentialsOf(ctx: Context): CredentialsService | undefined {
  return ctx.get('credentials')
}

export function keyLookup(ctx: Context, env: NodeJS.ProcessEnv = process.env): KeyLookup {
  return async (name) => {
    const credentials = credentialsOf(ctx)
    const value = credentials ? await credentials.get(name) : undefined
    return value || env[name] || undefined
  }
}

async function whereToSet(ctx: Context, name: string): Promise<string> {
  const credentials = credentialsOf(ctx)
  if (!credentials) return `export ${name}=... in the environment`
  try {
    const { layers } = await credentials.describe(name)
    return layers
      .map((layer) => (layer.id === 'env' ? `export ${name}=... in the environment` : layer.label))
      .join('; ')
  } catch {
    return `export ${name}=... in the environment`
  }
}

export async function apply(ctx: Context, config: Config): Promise<void> {
  const routes = Object.entries(config.routes)
  if (routes.length === 0) return
  // A route without `provider` may name a pi-ai provider, so only explicit openai-compatible rows skip the catalog.
  const needsCatalog = routes.some(([, row]) => row.provider !== OPENAI_COMPATIBLE)
  const catalog: PiCatalog | undefined = needsCatalog ? await loadCatalog() : undefined
  checkRoutes(config, catalog)
  const root = catalog?.root ?? (await loadRoot())
  const lookup = keyLookup(ctx)
  const agent = userAgent()
  for (const [route, row] of routes) {
    const runtime = await buildRoute(route, row, catalog, root)
    ctx.llm.registerAdapter(
      new PiAiAdapter({
        runtime,
        row,
        root,
        lookup,
        whereToSet: (n) => whereToSet(ctx, n),
        userAgent: agent,
        rememberSecret: (value) => ctx.llm.rememberSecret(value),
      }),
    )
  }
}
