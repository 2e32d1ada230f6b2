// What a session's log says it watches: the `@server:uri` mentions this package logged as context
// messages (`user/message` from MENTION_SOURCE, labelled `@server:uri`, or `@server:uri (updated)`
// for an update it told the model of) and the `mcp/resource-updated` notices. A resumed session
// (`dsh -c`, a web session reopened after a restart, a fork) watches them again, so no new event
// type is needed and logs written before this kept loading as they are.
import { MENTION_SOURCE } from './mentions.ts'

/** A resource a session's log mentions. */
export interface LoggedMention {
  server: string
  uri: string
  /** An update of it was logged after the model was last shown it: read it again at the next step. */
  pending: boolean
}

const UPDATED = ' (updated)'
/** The first line of a mention that could not be read (`renderUnavailable`): nothing was watched. */
const UNAVAILABLE = /^<resource server="[^"]*" uri="[^"]*" unavailable="/

type LoggedEvent = { readonly type: string; readonly data: unknown }
type Source = { kind?: string; plugin?: string; label?: string }
type Content = string | ReadonlyArray<{ type?: string; text?: string }>

const firstText = (content: Content | undefined) =>
  typeof content === 'string' ? content : (content?.find((block) => block.type === 'text')?.text ?? '')

/** The mentioned resources of a session's events, in order of first mention. */
export function loggedMentions(events: readonly LoggedEvent[]): LoggedMention[] {
  const found = new Map<string, LoggedMention>()
  for (const event of events) {
    if (event.type === 'mcp/resource-updated') {
      const { server, uri } = (event.data ?? {}) as { server?: unknown; uri?: unknown }
      const known = found.get(`${String(server)}\u0000${String(uri)}`)
      if (known) known.pending = true
      continue
    }
    if (event.type !== 'user/message') continue
    const { source, content } = (event.data ?? {}) as { source?: Source; content?: Content }
    if (source?.kind !== 'plugin' || source.plugin !== MENTION_SOURCE || !source.label?.startsWith('@')) continue
    const updated = source.label.endsWith(UPDATED)
    const ref = source.label.slice(1, updated ? -UPDATED.length : undefined)
    const colon = ref.indexOf(':')
    if (colon <= 0 || colon === ref.length - 1) continue
    const server = ref.slice(0, colon)
    const uri = ref.slice(colon + 1)
    const key = `${server}\u0000${uri}`
    if (!updated && UNAVAILABLE.test(firstText(content))) continue
    const known = found.get(key)
    if (known) known.pending = false
    else found.set(key, { server, uri, pending: false })
  }
  return [...found.values()]
}
