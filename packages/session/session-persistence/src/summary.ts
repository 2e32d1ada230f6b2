// `list()` rows computed from a header and a log, incrementally.
import type { AnySessionEvent } from '@dsh/session'
import type { SessionHeader, SessionSummary } from './types.ts'

const PROMPT_LIMIT = 200

/** Folds events into a `SessionSummary`; feed events in seq order. */
export class SummaryBuilder {
  private title?: string
  private firstPrompt?: string
  private turns = 0
  private events = 0
  private updatedAt: number

  constructor(private readonly header: SessionHeader) {
    this.updatedAt = header.createdAt
  }

  add(event: AnySessionEvent): void {
    this.events++
    this.updatedAt = event.time
    if (event.type === 'turn/start') this.turns++
    else if (event.type === 'session/title') this.title = event.data.title
    else if (event.type === 'user/message' && this.firstPrompt === undefined && event.data.source?.kind === 'human') {
      const text = event.data.content
        .filter((block) => block.type === 'text')
        .map((block) => (block as { text: string }).text)
        .join(' ')
        .replace(/\s+/g, ' ')
        .trim()
      if (text) this.firstPrompt = text.length > PROMPT_LIMIT ? `${text.slice(0, PROMPT_LIMIT - 1)}…` : text
    }
  }

  result(): SessionSummary {
    const { header } = this
    return {
      id: header.id,
      cwd: header.cwd,
      createdAt: header.createdAt,
      updatedAt: this.updatedAt,
      ...(this.title !== undefined ? { title: this.title } : {}),
      ...(this.firstPrompt !== undefined ? { firstPrompt: this.firstPrompt } : {}),
      turns: this.turns,
      events: this.events,
      ...(header.parentSession ? { parentSession: header.parentSession } : {}),
      ...(header.origin !== undefined ? { origin: header.origin } : {}),
    }
  }
}

export function summarize(header: SessionHeader, events: Iterable<AnySessionEvent>): SessionSummary {
  const builder = new SummaryBuilder(header)
  for (const event of events) builder.add(event)
  return builder.result()
}

/** Newest first by `updatedAt`, then `createdAt`, then id. */
export function sortSummaries(rows: SessionSummary[]): SessionSummary[] {
  return rows.sort(
    (a, b) => b.updatedAt - a.updatedAt || b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  )
}
