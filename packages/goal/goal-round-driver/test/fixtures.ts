// Shared by this package's tests: the goal rows on a testkit harness plus a plain `work` tool
// (a non-goal tool call counts as progress).
import type { Context } from 'cordis'
import type { LlmRequest } from '@dsh/llm'
import { createHarness, type HarnessOptions, type ScriptEntry } from '@dsh/agent-loop-testkit'
import GoalService from '@dsh/goal'
import * as ToolGoal from '@dsh/tool-goal'
import * as Driver from '../src/index.ts'

export const WorkTool = {
  name: 'work-tool',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register({
      name: 'work',
      description: 'Does a unit of work.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      execute: () => ({ content: 'worked' }),
    })
  },
}

export function goalHarness(script: ScriptEntry[], options: Omit<HarnessOptions, 'script'> & { driver?: object } = {}) {
  return createHarness({
    ...options,
    script,
    plugins: [
      [GoalService, {}],
      [Driver, options.driver ?? {}],
      [ToolGoal, {}],
      [WorkTool],
      ...(options.plugins ?? []),
    ],
  })
}

/** The goal id named in the request's last user message (a round prompt). */
export function goalIdIn(request: LlmRequest): string {
  const text = JSON.stringify(request.messages)
  const match = /Goal id: (goal-\d+)/.exec(text) ?? /Goal (goal-\d+)/.exec(text)
  if (!match) throw new Error('no goal id in the request')
  return match[1]
}

export const work = { toolCalls: [{ name: 'work', arguments: {} }] }
export const complete: ScriptEntry = (request) => ({
  toolCalls: [
    { name: 'update_goal', arguments: { goal_id: goalIdIn(request), status: 'complete', summary: 'all done' } },
  ],
})
