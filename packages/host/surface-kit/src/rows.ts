// The list row of a session, folded from its events the way the stored summaries are (see
// SessionSummary of @dsh/session-persistence): faces that list live sessions beside stored ones
// keep their live rows with these, so both kinds read alike.
import type { AnySessionEvent } from '@dsh/session'

export interface SessionRow {
  id: string
  cwd: string
  createdAt: number
  updatedAt: number
  title?: string
  firstPrompt?: string
  /** Number of `turn/start` events. */
  turns: number
  /** Number of events (the next seq). */
  events: number
}

/** Text of a human user message, cut to 200 characters (as the stored summaries hold it). */
export function humanPromptOf(event: AnySessionEvent): string | undefined {
  if (event.type !== 'user/message') return undefined
  const data = event.data as { source?: { kind?: string }; content?: Array<{ type: string; text?: string }> }
  if (data.source?.kind !== 'human') return undefined
  return (data.content ?? [])
    .map((block) => (block.type === 'text' ? (block.text ?? '') : ''))
    .join('')
    .slice(0, 200)
}

/** Folds one appended event into a row (in place). */
export function foldSessionRow(row: SessionRow, event: AnySessionEvent): void {
  row.events = event.seq + 1
  row.updatedAt = event.time
  if (event.type === 'turn/start') row.turns++
  else if (event.type === 'session/title') row.title = (event.data as { title: string }).title
  else if (row.firstPrompt === undefined) {
    const text = humanPromptOf(event)
    if (text !== undefined) row.firstPrompt = text
  }
}

/** The row of a whole log; an empty log is dated `now`. */
export function sessionRowOf(
  id: string,
  cwd: string,
  events: readonly AnySessionEvent[],
  now: number = Date.now(),
): SessionRow {
  const row: SessionRow = {
    id,
    cwd,
    createdAt: events[0]?.time ?? now,
    updatedAt: events.at(-1)?.time ?? now,
    turns: 0,
    events: 0,
  }
  for (const event of events) foldSessionRow(row, event)
  return row
}
