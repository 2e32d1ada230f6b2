// @dsh/agent-default-model: `ctx.agentDefaultModel`, the deployment's default model selection for
// an agent that has no session-local choice. Entry points (headless, web host, ACP) read this one
// service instead of each carrying its own provider/model defaults.
import { Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { ModelSelection } from '@dsh/agent'
import type { ReasoningEffort } from '@dsh/llm'

declare module 'cordis' {
  interface Context {
    agentDefaultModel: AgentDefaultModel
  }
}

const EFFORTS: ReasoningEffort[] = ['off', 'low', 'high', 'max']

export class AgentDefaultModel extends Service {
  static Config: Schema<Partial<AgentDefaultModel.Config>, AgentDefaultModel.Config> = Schema.object({
    provider: Schema.string().min(1).default('deepseek-official').description('Provider route of ctx.llm.'),
    model: Schema.string().min(1).default('deepseek-v4-flash').description('Model id on that route.'),
    reasoningEffort: Schema.union(EFFORTS).description('Reasoning effort; unset leaves the provider default.'),
    maxTokens: Schema.natural().min(1).description('Output token cap; unset leaves the adapter default.'),
  }) as Schema<Partial<AgentDefaultModel.Config>, AgentDefaultModel.Config>

  private readonly selection: Readonly<ModelSelection>

  constructor(ctx: Context, config: AgentDefaultModel.Config) {
    super(ctx, 'agentDefaultModel')
    const selection: ModelSelection = { provider: config.provider, model: config.model }
    if (config.reasoningEffort !== undefined) selection.reasoningEffort = config.reasoningEffort
    if (config.maxTokens !== undefined) selection.maxTokens = config.maxTokens
    this.selection = Object.freeze(selection)
  }

  /** A fresh copy of the configured selection (callers may change their copy). */
  get(): ModelSelection {
    return { ...this.selection }
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
