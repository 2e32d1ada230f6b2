// @dsh/agent-loop: THE turn/step driver. It registers an AgentFactory on `ctx.agents`; every
// agent it creates runs turns exactly as ARCHITECTURE.md section 4 describes.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { ModelSelection } from '@dsh/agent'
import { LoopAgent } from './agent.ts'

export { LoopAgent }
export type { LoopOptions } from './agent.ts'
export { runTurn, type TurnDeps, type TurnHooks, type TurnQueue } from './turn.ts'
export { Inbox, type QueuedInput } from './inbox.ts'

export interface Config {
  maxSteps: number
  defaultModel?: ModelSelection
}

export const name = 'agent-loop'
export const inject = ['agents', 'sessions', 'llm', 'tools', 'systemPrompt']

export const Config: Schema<Config> = Schema.object({
  maxSteps: Schema.natural().min(1).default(100).description('Most steps (model requests) one turn may take.'),
  defaultModel: Schema.object({
    provider: Schema.string(),
    model: Schema.string(),
    maxTokens: Schema.natural(),
    reasoningEffort: Schema.union(['off', 'low', 'high', 'max'] as const),
  }).description('Model for agents created without one (normally supplied by @dsh/agent-default-model).'),
})

export function apply(ctx: Context, config: Config): void {
  // schemastery fills an absent optional object with `{}`; treat a half-filled one as a mistake.
  const dm = config.defaultModel
  const defaultModel = dm && (dm.provider || dm.model) ? dm : undefined
  if (defaultModel && (!defaultModel.provider || !defaultModel.model)) {
    throw new Error('agent-loop config.defaultModel needs both `provider` and `model`')
  }
  const live = new Set<LoopAgent>()
  ctx.agents.registerFactory({
    name: 'agent-loop',
    create: (options) => {
      const agent = new LoopAgent(ctx, options, { maxSteps: config.maxSteps, defaultModel })
      live.add(agent)
      return agent
    },
  })
  // Unloading the loop disposes the agents it drives: nothing keeps running on a dead plugin.
  ctx.effect(() => () => {
    for (const agent of live) void agent.dispose()
    live.clear()
  })
}
