// Recipe: request context. Before the first request of each turn, the project's NOTES.md (when it
// exists and changed since the last time the model saw it) is entered as a user message from this
// plugin. Entering it through `agent/pre-step` logs it, so the session reloads with the same
// history (model-visible means logged), and unchanged notes cost no tokens.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { InjectedContext, PreStepDecision, PreStepPayload } from '@dsh/agent'
import type { AnySessionEvent, MessageSource, SessionEvent } from '@dsh/session'

export const name = 'cookbook-project-notes'
export const SOURCE: MessageSource = { kind: 'plugin', plugin: name }

export interface Config {
  file: string
  maxChars: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  file: Schema.string().default('NOTES.md').description('File read from the session working directory.'),
  maxChars: Schema.natural().min(1).default(8000).description('Longer notes are cut to this many characters.'),
})

const PREFIX = '<project-notes>\n'

/** The notes text this plugin last entered in the session, read back from the log. */
function lastEntered(events: readonly AnySessionEvent[]): string | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]
    if (e.type !== 'user/message') continue
    const { data } = e as SessionEvent<'user/message'>
    if (data.source.kind === 'plugin' && data.source.plugin === name) {
      return data.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    }
  }
  return undefined
}

export function apply(ctx: Context, config: Config) {
  ctx.on(
    'agent/pre-step',
    async (payload: PreStepPayload, next: () => Promise<PreStepDecision>) => {
      if (payload.step !== 0) return next()
      let notes: string
      try {
        notes = readFileSync(join(payload.agent.cwd, config.file), 'utf8').slice(0, config.maxChars)
      } catch {
        return next() // no notes file: nothing to add
      }
      const text = `${PREFIX}${notes}\n</project-notes>`
      if (lastEntered(payload.agent.session.events) === text) return next()
      const decision = await next()
      if (decision.action !== 'enter') return decision
      const message: InjectedContext = { content: text, source: SOURCE }
      return { ...decision, messages: [message, ...decision.messages] }
    },
    { prepend: true },
  )
}
