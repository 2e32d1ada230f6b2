// @dsh/agent-default-model: `ctx.agentDefaultModel`, the deployment's default model selection for
// an agent that has no session-local choice. Entry points (headless, web host, ACP) read this one
// service instead of each carrying its own provider/model defaults.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { ModelSelection } from '@dsh/agent'
import type { ReasoningEffort } from '@dsh/llm'
import type {} from '@dsh/settings'

declare module 'cordis' {
  interface Context {
    agentDefaultModel: AgentDefaultModel
  }
}

const EFFORTS: ReasoningEffort[] = ['off', 'low', 'high', 'max']

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
