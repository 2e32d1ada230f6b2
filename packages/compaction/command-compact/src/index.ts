// @dsh/command-compact: the human `/compact [focus]` command over `ctx.compaction`.
//
// Admission: accepted at any time. Queueing: while the agent runs a turn, the compaction waits
// until the agent is idle, so it never cuts a step in half; the engine's per-session lock orders
// it against automatic compaction. Durability: after compacting, the session is checkpointed
// when `ctx.durableSessions` is mounted, so a crash right after `/compact` keeps the result.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { CompactionResult } from '@dsh/compaction'
import type { CommandContext } from '@dsh/commands'
import type {} from '@dsh/session-persistence'

export const name = 'command-compact'
export const inject = ['commands', 'compaction']

export interface Config {
  /** The command's name (without the slash). */
  command: string
}

export const Config: Schema<Config> = Schema.object({
  command: Schema.string()
    .pattern(/^[a-z][a-z0-9-]*$/)
    .default('compact')
    .description('Command name without the slash.'),
})

/** One line for the human describing `result`. */
export function describe(result: CompactionResult): string {
  switch (result.status) {
    case 'compacted':
      return `Compacted the conversation: ~${result.tokensBefore} -> ~${result.tokensAfter} tokens.`
    case 'skipped':
      return `Nothing compacted: ${result.reason}.`
    case 'failed':
      return `Compaction failed (${result.error.code}): ${result.error.message}. The history is unchanged.`
  }
}

export function apply(ctx: Context, config: Config): void {
  ctx.commands.register({
    name: config.command,
    description: 'Summarize the earlier conversation to free context (waits for a running turn).',
    usage: '[focus]',
    async run(args: string, { agent, session, signal }: CommandContext) {
      // Queued behind the running turn (and anything queued for it).
      if (agent.status === 'running') await agent.idle()
      const result = await ctx.compaction.compact(session, {
        reason: 'manual',
        agent,
        ...(args ? { focus: args } : {}),
        ...(signal ? { signal } : {}),
      })
      const durable = ctx.get('durableSessions')
      if (result.status === 'compacted' && durable) await durable.checkpoint(session.id).catch(() => {})
      if (result.status === 'failed')
        throw new Error(`${result.error.code}: ${result.error.message}; the history is unchanged`)
      return describe(result)
    },
  })
}
