// @dsh/tool-deferral: deferred tool schemas. Rarely used tools reach the model as one catalogue
// line each (inside the `load_tools` tool's description) instead of their full JSON schema; the
// model loads the ones it needs by name, and from the next step on their schemas are in the
// request. What an agent's session has loaded is the set of its `tools/loaded` events, so a
// resumed session keeps them. A deferred tool called directly still runs (and is loaded then).
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type { ExecuteContext, ToolCallContext, ToolDefinition, ToolOutput } from '@dsh/tools'
import { TOOL_NAME_PATTERN, toolError } from '@dsh/tools'
import { plainService } from '@dsh/plain-service'
import type {} from '@dsh/session-persistence'
import { nearMatches } from './near.ts'

export { nearMatches } from './near.ts'

/** How a tool came to be loaded: through the loader tool, or by a direct call to it. */
export type LoadedVia = 'load_tools' | 'call'

declare module '@dsh/session' {
  interface SessionEventMap {
    /** Deferred tools whose full schemas the session's requests carry from now on. */
    'tools/loaded': { names: string[]; via: LoadedVia }
  }
}

export const LOADER = 'load_tools'
export const EVENT = 'tools/loaded'

/** With `unflagged: deferred`, the tools still sent in full. */
export const DEFAULT_CORE = ['bash', 'read', 'write', 'edit', 'glob', 'grep', 'skill']

export type DeferSetting = boolean | 'auto'

export interface ToolDeferralConfig {
  enabled: boolean
  defer: Record<string, DeferSetting>
  unflagged: 'full' | 'deferred'
  core: string[]
}

const toolName = Schema.string().pattern(TOOL_NAME_PATTERN)

export const Config: Schema<Partial<ToolDeferralConfig>, ToolDeferralConfig> = Schema.object({
  enabled: Schema.boolean()
    .default(true)
    .description('false: every tool is sent with its full schema and load_tools is not offered.'),
  defer: Schema.dict(Schema.union([Schema.const(true), Schema.const(false), Schema.const('auto' as const)]))
    .default({})
    .description("Per tool name: true (always deferred), false (always sent in full) or auto (the tool's own flag)."),
  unflagged: Schema.union(['full', 'deferred'] as const)
    .default('full')
    .description(
      'Under auto, a tool that does not flag itself (MCP tools, your own plugins): sent in full, or deferred unless in core.',
    ),
  core: Schema.array(toolName)
    .default(DEFAULT_CORE)
    .description('With unflagged: deferred, the tools still sent in full.'),
})

export const name = 'tool-deferral'
export const inject = ['tools', 'agents']

export const LOADER_DESCRIPTION =
  'Load tools listed below (name: purpose) so you can call them; their schemas join your tool list from your next step on.'

/** The loaded names of a session: the union of its `tools/loaded` events (kept per session object). */
const loadedBySession = new WeakMap<Session, Set<string>>()

export function loadedTools(session: Session): Set<string> {
  let loaded = loadedBySession.get(session)
  if (!loaded) {
    loaded = new Set()
    for (const event of session.events) {
      if (event.type !== EVENT) continue
      const names = (event.data as { names?: unknown }).names
      if (Array.isArray(names)) for (const n of names) if (typeof n === 'string') loaded.add(n)
    }
    loadedBySession.set(session, loaded)
  }
  return loaded
}

/** Whether the configuration defers `def` at all (before looking at what a session loaded). */
export function deferrable(def: Pick<ToolDefinition, 'name' | 'defer'>, config: ToolDeferralConfig): boolean {
  const setting = Object.hasOwn(config.defer, def.name) ? config.defer[def.name] : 'auto'
  if (setting === true || setting === false) return setting
  if (typeof def.defer === 'boolean') return def.defer
  return config.unflagged === 'deferred' && !config.core.includes(def.name)
}

export function apply(ctx: Context, config: ToolDeferralConfig): void {
  for (const key of Object.keys(config.defer)) {
    if (!TOOL_NAME_PATTERN.test(key))
      throw new TypeError(
        `tool-deferral: defer: ${JSON.stringify(key)} is not a tool name (must match ${TOOL_NAME_PATTERN})`,
      )
  }
  // Registered even when deferral is off: a session that loaded tools must still load.
  ctx.inject(['sessionPersistence'], (inner) => {
    inner.sessionPersistence.registerEventType(EVENT)
  })
  if (!config.enabled) return
  const tools = plainService(ctx.tools)
  const agents = plainService(ctx.agents)

  const agentOf = (scope: string | undefined, agentId?: string): Agent | undefined => {
    if (agentId !== undefined) {
      const agent = agents.get(agentId)
      if (agent) return agent
    }
    if (scope === undefined || !scope.startsWith('agent:')) return undefined
    const agent = agents.get(scope.slice('agent:'.length))
    return agent?.scope === scope ? agent : undefined
  }

  const load = (session: Session, names: string[], via: LoadedVia): void => {
    const loaded = loadedTools(session)
    const fresh = names.filter((n) => !loaded.has(n))
    if (fresh.length === 0) return
    session.append(EVENT, { names: fresh, via })
    for (const n of fresh) loaded.add(n)
  }

  ctx.tools.setDeferral({
    loader: LOADER,
    deferred(def, scope) {
      if (!deferrable(def, config)) return false
      const agent = agentOf(scope)
      return !(agent && loadedTools(agent.session).has(def.name))
    },
    calledDeferred(def: ToolDefinition, context: ExecuteContext) {
      const agent = agentOf(context.scope, context.agentId)
      if (agent) load(agent.session, [def.name], 'call')
    },
  })

  ctx.tools.register<{ names: string[] }>({
    name: LOADER,
    description: LOADER_DESCRIPTION,
    summary: 'Load deferred tools by name.',
    defer: false,
    parameters: {
      type: 'object',
      properties: {
        names: {
          type: 'array',
          items: { type: 'string', minLength: 1 },
          minItems: 1,
          description: 'Exact names from the list.',
        },
      },
      required: ['names'],
      additionalProperties: false,
    },
    concurrencySafe: false,
    execute(args, call: ToolCallContext): ToolOutput {
      const agent = agentOf(call.scope, call.agentId)
      if (!agent) return toolError('NO_SESSION', 'load_tools works only for an agent with a session.')
      const waiting = tools.deferred(call.scope).map((def) => def.name)
      const callable = new Set(tools.presented(call.scope).map((def) => def.name))
      const names = [...new Set(args.names.map((n) => n.trim()))]
      const unknown = names.filter((n) => !waiting.includes(n) && !callable.has(n))
      if (unknown.length > 0) {
        const candidates = [...new Set([...waiting, ...callable])].filter((n) => n !== LOADER)
        const lines = unknown.map((n) => {
          const near = nearMatches(n, candidates)
          return `"${n}"${near.length > 0 ? ` (did you mean ${near.join(', ')}?)` : ''}`
        })
        return toolError(
          'UNKNOWN_TOOL',
          `no tool named ${lines.join(', ')}; nothing was loaded. ` +
            (waiting.length > 0
              ? `Tools you can load: ${waiting.join(', ')}. Call load_tools again with exact names.`
              : 'Every tool is already loaded.'),
          { unknown },
        )
      }
      const toLoad = names.filter((n) => waiting.includes(n))
      const already = names.filter((n) => !waiting.includes(n))
      load(agent.session, toLoad, 'load_tools')
      const parts: string[] = []
      if (toLoad.length > 0)
        parts.push(
          `Loaded ${toLoad.join(', ')}: from your next step on you can call ${toLoad.length > 1 ? 'them' : 'it'}.`,
        )
      if (already.length > 0) parts.push(`Already available: ${already.join(', ')}.`)
      return { content: parts.join(' '), meta: { loaded: toLoad, already } }
    },
  })
}
