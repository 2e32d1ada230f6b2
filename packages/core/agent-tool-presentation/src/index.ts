// @dsh/agent-tool-presentation: the row an agent preset carries to say which form of its tools the
// model sees: `native` (every tool schema), `code` (Code Mode's entry tool over a generated SDK of
// the tools) or `both`. It sets `ctx.tools.setPresentAs(scope, mode)` for the agent it is mounted for.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { standingScope } from '@dsh/scope'
import type { ToolMode } from '@dsh/tools'

export interface ToolPresentationConfig {
  mode: ToolMode
}

export const Config: Schema<Partial<ToolPresentationConfig>, ToolPresentationConfig> = Schema.object({
  mode: Schema.union(['native', 'code', 'both'] as const)
    .default('native')
    .description('native: every schema; code: Code Mode only; both.'),
})

export const name = 'agent-tool-presentation'
export const inject = ['tools']

export function apply(ctx: Context, config: ToolPresentationConfig): void {
  const scope = standingScope(ctx)
  if (scope === undefined) {
    throw new Error(
      "agent-tool-presentation is a row of an agent preset (agent.cordis.yml); for the whole deployment set the tools row's mode instead",
    )
  }
  ctx.tools.setPresentAs(scope, config.mode)
}
