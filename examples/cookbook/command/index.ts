// Recipe: a slash command. `/tools-used [name]` tells the human how often each tool was called in
// this session, read from the session log. A command is never a model turn: it appends nothing to
// the log and its output goes to the human only.
import type { Context } from 'cordis'
import type { SessionEvent } from '@dsh/session'
import type {} from '@dsh/commands'

export const name = 'cookbook-tools-used'
export const inject = ['commands']

export function apply(ctx: Context) {
  ctx.commands.register({
    name: 'tools-used',
    description: 'How often each tool was called in this session.',
    usage: '[tool-name]',
    run(args, { session }) {
      const counts = new Map<string, number>()
      for (const e of session.events) {
        if (e.type !== 'tool/call') continue
        const call = (e as SessionEvent<'tool/call'>).data
        counts.set(call.name, (counts.get(call.name) ?? 0) + 1)
      }
      const only = args.trim()
      if (only) return `${only}: ${counts.get(only) ?? 0} call(s)`
      if (!counts.size) return 'No tool was called in this session yet.'
      return [...counts]
        .sort((a, b) => b[1] - a[1])
        .map(([tool, n]) => `${tool}: ${n}`)
        .join('\n')
    },
  })
}
