// @dsh/bundle-agent-spine: the default executor-less, UI-less agent spine as one Cordis plugin.
// Mounting it mounts the fixed member set below as child fibers; disposing it unwinds them all.
// Executors (subprocess, fs, shell and their tools), model adapters, the persistence provider
// and every surface are left to the app that composes the spine.
import type { Context, Plugin } from 'cordis'
import Schema from 'schemastery'
import HomePaths from '@dsh/home-paths'
import SessionStore from '@dsh/session'
import DurableSessions from '@dsh/session-persistence'
import * as CheckpointPolicy from '@dsh/session-checkpoint-policy'
import SessionTitle from '@dsh/session-title'
import TokenMeter from '@dsh/token-meter'
import LlmService from '@dsh/llm'
import * as LlmRetry from '@dsh/llm-retry'
import AgentRegistry from '@dsh/agent'
import * as AgentLoop from '@dsh/agent-loop'
import AgentDefaultModel from '@dsh/agent-default-model'
import ToolRegistry from '@dsh/tools'
import SystemPrompt from '@dsh/system-prompt'
import CommandRegistry from '@dsh/commands'
import ApprovalService from '@dsh/user-approval'
import UserQuestionsService from '@dsh/user-questions'
import * as TimeoutPolicy from '@dsh/timeout-policy'
import * as RepeatToolReminder from '@dsh/repeat-tool-reminder'
import * as ToolTodo from '@dsh/tool-todo'
import SkillRegistry from '@dsh/skill'
import * as SkillFilesystem from '@dsh/skill-filesystem'
import * as ToolSkill from '@dsh/tool-skill'
import * as AgentInstructions from '@dsh/agent-instructions'

export const name = '@dsh/bundle-agent-spine'

export interface Config {
  /** The agent-loop's config, forwarded whole. */
  loop: Record<string, unknown>
  /** Forwarded to @dsh/agent-default-model. */
  defaultModel: Record<string, unknown>
  /** Forwarded to @dsh/skill-filesystem. */
  skills: Record<string, unknown>
  /** Member ids to leave out (so an app can put its own provider in their place). */
  without: string[]
}

interface Member {
  id: string
  plugin: Plugin
  config?: (c: Config) => unknown
}

/** The fixed member set, in mount order. Ids are what `without` names. */
export const MEMBERS: readonly Member[] = [
  { id: 'home-paths', plugin: HomePaths as Plugin },
  { id: 'session', plugin: SessionStore as Plugin },
  { id: 'session-persistence', plugin: DurableSessions as Plugin },
  { id: 'session-checkpoint-policy', plugin: CheckpointPolicy as Plugin },
  { id: 'session-title', plugin: SessionTitle as Plugin },
  { id: 'token-meter', plugin: TokenMeter as Plugin },
  { id: 'llm', plugin: LlmService as Plugin },
  { id: 'llm-retry', plugin: LlmRetry as Plugin },
  { id: 'agents', plugin: AgentRegistry as Plugin },
  { id: 'agent-loop', plugin: AgentLoop as Plugin, config: (c) => c.loop },
  { id: 'agent-default-model', plugin: AgentDefaultModel as Plugin, config: (c) => c.defaultModel },
  { id: 'tools', plugin: ToolRegistry as Plugin },
  { id: 'system-prompt', plugin: SystemPrompt as Plugin },
  { id: 'commands', plugin: CommandRegistry as Plugin },
  { id: 'approval', plugin: ApprovalService as Plugin },
  { id: 'user-questions', plugin: UserQuestionsService as Plugin },
  { id: 'timeout-policy', plugin: TimeoutPolicy as Plugin },
  { id: 'repeat-tool-reminder', plugin: RepeatToolReminder as Plugin },
  { id: 'tool-todo', plugin: ToolTodo as Plugin },
  { id: 'skills', plugin: SkillRegistry as Plugin },
  { id: 'skill-filesystem', plugin: SkillFilesystem as Plugin, config: (c) => c.skills },
  { id: 'tool-skill', plugin: ToolSkill as Plugin },
  { id: 'agent-instructions', plugin: AgentInstructions as Plugin },
]

const MEMBER_IDS = MEMBERS.map((m) => m.id)

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  loop: Schema.dict(Schema.any()).default({}).description("The agent-loop's config, forwarded whole."),
  defaultModel: Schema.dict(Schema.any()).default({}).description('Forwarded to @dsh/agent-default-model.'),
  skills: Schema.dict(Schema.any()).default({}).description('Forwarded to @dsh/skill-filesystem.'),
  without: Schema.array(Schema.string())
    .default([])
    .description(`Member ids to leave out: ${MEMBER_IDS.join(', ')}.`),
}) as Schema<Partial<Config>, Config>

export function apply(ctx: Context, config: Config): void {
  const unknown = config.without.filter((id) => !MEMBER_IDS.includes(id))
  if (unknown.length) {
    throw new Error(
      `agent-spine: without names ${unknown.map((id) => JSON.stringify(id)).join(', ')}, which is not a member (members: ${MEMBER_IDS.join(', ')})`,
    )
  }
  // Child fibers of this one: each waits for its own inject list (the persistence glue for a
  // provider row the app adds), and unloading the spine disposes every one of them.
  for (const member of MEMBERS) {
    if (config.without.includes(member.id)) continue
    ctx.plugin(member.plugin, (member.config?.(config) ?? {}) as never)
  }
}
