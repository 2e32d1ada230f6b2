// Subagent notifications of the SDK server: the parent-log `subagent/started` and
// `subagent/finished` events of a client session, and of its in-process subagents at any depth
// (grandchildren are logged in a child's session, which no client holds), turned into
// `subagent/started` / `subagent/finished` notifications naming the client session.
import type { Session } from '@dsh/session'
import {
  Notification,
  SUBAGENT_TEXT_EXCERPT_CHARS,
  type SubagentFinishedNotification,
  type SubagentNotificationBase,
  type WireEvent,
  type WireUsage,
} from '@dsh/sdk-protocol'

// The parent-log events of @dsh/subagent, read by type name (this package does not depend on it).
interface LoggedSubagentStart {
  id: string
  provider: string
  description: string
  depth: number
  background: boolean
  callId?: string
  sessionId?: string
}
interface LoggedSubagentEnd {
  id: string
  status: 'completed' | 'failed' | 'cancelled'
  text: string
  error?: { code: string; message: string }
  usage?: WireUsage
}

export class SubagentRelay {
  /** Session ids of in-process subagents (at any depth) under a client session -> that session's id. */
  private readonly descendants = new Map<string, string>()

  constructor(
    /** Whether a session is one a client holds. */
    private readonly isClientSession: (sessionId: string) => boolean,
    private readonly notify: (method: string, params: unknown) => void,
  ) {}

  /** A subagent session under a client session that no client holds (its events are relayed too). */
  isDescendant(sessionId: string): boolean {
    return !this.isClientSession(sessionId) && this.descendants.has(sessionId)
  }

  /**
   * Turns a parent-log `subagent/started` / `subagent/finished` event into the matching
   * notification for the client session the parent belongs to (itself or its root).
   */
  relay(parent: Session, event: WireEvent): void {
    const type: string = event.type
    if (type !== 'subagent/started' && type !== 'subagent/finished') return
    const root = this.isClientSession(parent.id) ? parent.id : this.descendants.get(parent.id)
    if (root === undefined) return
    const childId = (event.data as { id: string }).id
    // The start carries what the end does not (provider, description, ...); read it from the log.
    let start: LoggedSubagentStart | undefined
    if (type === 'subagent/started') start = event.data as LoggedSubagentStart
    else {
      for (let i = parent.events.length - 1; i >= 0; i--) {
        const e = parent.events[i]
        if ((e.type as string) === 'subagent/started' && (e.data as unknown as LoggedSubagentStart).id === childId) {
          start = e.data as unknown as LoggedSubagentStart
          break
        }
      }
    }
    if (!start) return
    const base: SubagentNotificationBase = {
      sessionId: root,
      parentSessionId: parent.id,
      id: childId,
      provider: start.provider,
      description: start.description,
      depth: start.depth,
      background: start.background,
      ...(start.callId !== undefined ? { callId: start.callId } : {}),
      ...(start.sessionId !== undefined ? { childSessionId: start.sessionId } : {}),
      time: event.time,
    }
    if (type === 'subagent/started') {
      if (start.sessionId !== undefined) this.descendants.set(start.sessionId, root)
      this.notify(Notification.subagentStarted, { ...base, status: 'running' })
      return
    }
    const end = event.data as LoggedSubagentEnd
    const text = typeof end.text === 'string' ? end.text : ''
    const params: SubagentFinishedNotification = {
      ...base,
      status: end.status,
      text: text.slice(0, SUBAGENT_TEXT_EXCERPT_CHARS),
      ...(text.length > SUBAGENT_TEXT_EXCERPT_CHARS ? { textTruncated: true } : {}),
      ...(end.error ? { error: { code: end.error.code, message: end.error.message } } : {}),
      ...(end.usage ? { usage: end.usage } : {}),
    }
    this.notify(Notification.subagentFinished, params)
  }
}
