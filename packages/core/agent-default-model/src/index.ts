// @dsh/agent-default-model: `ctx.agentDefaultModel`, the deployment's default model selection for
// an agent that has no session-local choice. Entry points (headless, web host, ACP) read this one
// service instead of each carrying its own provider/model defaults.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { ModelSelection } from '@dsh/agent'
import type { ReasoningEffort } from '@dsh/llm'
import type {} from '@dsh/settings'
import type { Session } from '@dsh/session'
import type {} from '@dsh/session-persistence' // declares ctx.sessionPersistence

declare module 'cordis' {
  interface Context {
    agentDefaultModel: AgentDefaultModel
  }
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A model chosen for this session (`/model` in the terminal UI): see MODEL_SELECTED. */
    'model/selected': ModelSelection
  }
}

const EFFORTS: ReasoningEffort[] = ['off', 'low', 'high', 'max']

/**
 * The session event that records a model chosen for one session (`/model` in the terminal UI), so
 * `dsh -c` / `-r` reopen it on that model. Data: a `ModelSelection`.
 */
export const MODEL_SELECTED = 'model/selected' as const

/** The part of a session this service reads and writes. */
type SessionLog = Pick<Session, 'append' | 'last'>

/** The settings.yaml section read by this service: `model: { provider, model, reasoningEffort, maxTokens }`. */
export const SETTINGS_NAMESPACE = 'model'

export const ModelSettings = Schema.object({
  provider: Schema.string().min(1).description('Provider route of ctx.llm.'),
  model: Schema.string().min(1).description('Model id on that route.'),
  reasoningEffort: Schema.union(EFFORTS).description('Reasoning effort.'),
  maxTokens: Schema.natural().min(1).description('Output token cap.'),
})

export class AgentDefaultModel extends Service {
  static Config: Schema<Partial<AgentDefaultModel.Config>, AgentDefaultModel.Config> = Schema.object({
    provider: Schema.string().min(1).default('deepseek-official').description('Provider route of ctx.llm.'),
    model: Schema.string().min(1).default('deepseek-v4-flash').description('Model id on that route.'),
    reasoningEffort: Schema.union(EFFORTS).description('Reasoning effort; unset leaves the provider default.'),
    maxTokens: Schema.natural().min(1).description('Output token cap; unset leaves the adapter default.'),
  }) as Schema<Partial<AgentDefaultModel.Config>, AgentDefaultModel.Config>

  private readonly configured: Readonly<ModelSelection>
  private user: Partial<ModelSelection> = {}

  constructor(ctx: Context, config: AgentDefaultModel.Config) {
    super(ctx, 'agentDefaultModel')
    const selection: ModelSelection = { provider: config.provider, model: config.model }
    if (config.reasoningEffort !== undefined) selection.reasoningEffort = config.reasoningEffort
    if (config.maxTokens !== undefined) selection.maxTokens = config.maxTokens
    this.configured = Object.freeze(selection)
    // The user's settings.yaml `model:` section overrides the row's fields one by one and follows
    // live edits; a section that fails its schema counts as empty (the settings service says why).
    ctx.inject(['settings'], (sctx) => {
      const section = sctx.settings.section(SETTINGS_NAMESPACE, ModelSettings)
      const follow = (value: Partial<ModelSelection>) => {
        this.user = Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== undefined))
      }
      follow(section.value)
      section.onChange(follow)
      sctx.effect(() => () => follow({}))
    })
    // The event is stored with the session (registered, or the persistence refuses it).
    ctx.inject(['sessionPersistence'], (inner) => {
      inner.sessionPersistence.registerEventType(MODEL_SELECTED)
    })
  }

  /** Records `selection` as the session's own model choice (`model/selected`). */
  record(session: SessionLog, selection: ModelSelection): void {
    const data: ModelSelection = { provider: selection.provider, model: selection.model }
    if (selection.reasoningEffort !== undefined) data.reasoningEffort = selection.reasoningEffort
    if (selection.maxTokens !== undefined) data.maxTokens = selection.maxTokens
    session.append(MODEL_SELECTED, data)
  }

  /** The model a reopened session continues on: its last `model/selected`, else undefined. */
  ofSession(session: SessionLog): ModelSelection | undefined {
    const data = session.last(MODEL_SELECTED)?.data as Partial<ModelSelection> | undefined
    if (!data || typeof data.provider !== 'string' || typeof data.model !== 'string') return undefined
    return { ...data } as ModelSelection
  }

  /** A fresh copy of the selection: the row's config, then settings.yaml `model:` field by field. */
  get(): ModelSelection {
    return { ...this.configured, ...this.user }
  }
}

export namespace AgentDefaultModel {
  export interface Config {
    provider: string
    model: string
    reasoningEffort?: ReasoningEffort
    maxTokens?: number
  }
}

export type Config = AgentDefaultModel.Config

export default AgentDefaultModel
