// @dsh/command-feedback: `/feedback <text>` records the human's feedback about the session as one
// log-only `feedback/record` event; `recordFeedback(session, text)` does the same for any caller.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Session, SessionEvent } from '@dsh/session'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/commands'

declare module '@dsh/session' {
  interface SessionEventMap {
    /** Free-text feedback from the human about this session (log-only). */
    'feedback/record': { text: string; source: string }
  }
}

export const name = 'command-feedback'
export const inject = ['commands']

export interface CommandFeedbackConfig {
  /** The command's name (without the slash). */
  command: string
  /** Longest feedback text accepted (characters). */
  maxChars: number
}
export const Config: Schema<Partial<CommandFeedbackConfig>, CommandFeedbackConfig> = Schema.object({
  command: Schema.string()
    .pattern(/^[a-z][a-z0-9-]*$/)
    .default('feedback')
    .description('Command name without the slash.'),
  maxChars: Schema.natural().min(1).default(4000).description('Longest feedback text accepted.'),
}) as Schema<Partial<CommandFeedbackConfig>, CommandFeedbackConfig>

export function recordFeedback(session: Session, text: string, source = 'command'): SessionEvent<'feedback/record'> {
  const trimmed = text.trim()
  if (!trimmed) throw new Error('feedback text is empty; usage: /feedback <what went well or wrong>')
  return session.append('feedback/record', { text: trimmed, source })
}

export function apply(ctx: Context, raw: Partial<CommandFeedbackConfig> = {}): void {
  const config: CommandFeedbackConfig = { command: 'feedback', maxChars: 4000, ...raw }
  ctx.inject(['sessionPersistence'], (inner) => {
    inner.sessionPersistence.registerEventType('feedback/record')
  })
  ctx.commands.register({
    name: config.command,
    description: 'Record feedback about this session in its log (never sent to the model).',
    usage: '<text>',
    run(args, { session }) {
      if (args.length > config.maxChars)
        throw new Error(`feedback is ${args.length} characters; the limit is ${config.maxChars}`)
      const event = recordFeedback(session, args)
      return `Thanks: feedback recorded in the session log (seq ${event.seq}).`
    },
  })
}

export default { name, inject, Config, apply }
