// @dsh/agent-presets/tool-set: the preset row that limits which tools an agent is offered.
// Mounted by a preset (under the agent's standing scope) it restricts `ctx.tools` for that agent
// and drops the prompt guidance (`tool:*` sections) of the tools it hides.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { PreStepDecision, PreStepPayload } from '@dsh/agent'
import { standingScope } from '@dsh/scope'
import type {} from '@dsh/tools'
import type {} from '@dsh/system-prompt'

export interface ToolSetConfig {
  /** Only these tools are offered (absent: every tool not in `hide`). */
  only?: string[]
  hide: string[]
  /** When set, `tool:*` prompt sections not listed here are dropped for the agent. */
  sections?: string[]
}

export const Config: Schema<Partial<ToolSetConfig>, ToolSetConfig> = Schema.object({
  only: Schema.array(Schema.string()).description('The only tools the agent is offered.'),
  hide: Schema.array(Schema.string()).default([]).description('Tools the agent is not offered.'),
  sections: Schema.array(Schema.string()).description(
    'Tool guidance sections (ids starting with "tool:") to keep; the others are dropped.',
  ),
})

export const name = 'agent-tool-set'
export const inject = ['tools']

export function apply(ctx: Context, config: ToolSetConfig): void {
  const scope = standingScope(ctx)
  if (scope === undefined)
    throw new Error(
      'agent-tool-set is a row of an agent preset (agent.cordis.yml); mounted on its own it has no agent to limit',
    )
  const only = config.only ? new Set(config.only) : undefined
  const hide = new Set(config.hide)
  ctx.tools.restrict(scope, (tool) => (only === undefined || only.has(tool)) && !hide.has(tool))
  if (config.sections === undefined) return
  const keep = new Set(config.sections)
  const dropped = new Set<string>()
  // Shadows every other `tool:*` section with an empty one (empty parts are left out of the prompt).
  // Checked again before each step of the agent, for guidance registered after the preset mounted.
  const drop = (inner: Context) => {
    for (const section of inner.systemPrompt.sections(scope)) {
      if (!section.id.startsWith('tool:') || keep.has(section.id) || dropped.has(section.id) || section.scope === scope)
        continue
      dropped.add(section.id)
      inner.systemPrompt.registerSection({ id: section.id, order: section.order, text: '', scope })
    }
  }
  ctx.inject(['systemPrompt'], (inner) => {
    drop(inner)
    inner.on('agent/pre-step', (payload: PreStepPayload, next: () => Promise<PreStepDecision>) => {
      if (payload.agent.scope === scope) drop(inner)
      return next()
    })
  })
}
