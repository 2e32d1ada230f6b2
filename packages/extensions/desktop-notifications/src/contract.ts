// What the pages of `dsh web` hear from @dsh/desktop-notifications (browser-safe: no imports).
// The host half publishes one host stream event each time a session needs the user or ends a
// turn; the browser half (@dsh/ui-notifications) turns it into a browser Notification when the
// user turned those on and the page is hidden.

/** Host stream event type: a session needs the user, or its turn ended. */
export const ATTENTION_EVENT = 'notifications/attention'

export type AttentionKind = 'turn-end' | 'approval' | 'question'

export type AttentionEvent = {
  type: typeof ATTENTION_EVENT
  sessionId: string
  kind: AttentionKind
  /** One line, at most 100 characters (`dsh: turn finished`, `dsh needs your approval`, ...). */
  title: string
  /** One line, at most `maxBodyChars` characters: the reply, the approval's title, the question. */
  body: string
  /** For `turn-end`: why the turn ended (`completed`, `cancelled`, `error`, ...). */
  reason?: string
}

/** Whether a host stream event is a well-formed attention event (the page checks what it hears). */
export function isAttentionEvent(event: { type: string; [key: string]: unknown }): event is AttentionEvent {
  return (
    event.type === ATTENTION_EVENT &&
    typeof event.sessionId === 'string' &&
    event.sessionId.length > 0 &&
    (event.kind === 'turn-end' || event.kind === 'approval' || event.kind === 'question') &&
    typeof event.title === 'string' &&
    typeof event.body === 'string' &&
    (event.reason === undefined || typeof event.reason === 'string')
  )
}
