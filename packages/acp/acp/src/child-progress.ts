// A foreground subagent shown as its `subagent` tool call with streamed progress: while the child
// runs, the parent's tool call gets `tool_call_update`s (status in_progress) whose content is a
// short running account of the child: each tool it called (by title) and its latest text. The
// call's final result replaces it as usual. Updates are coalesced (at most one per `intervalMs`).
import type * as acp from '@agentclientprotocol/sdk'
import type { AnySessionEvent, Session } from '@dsh/session'
import type { SubagentRecord } from '@dsh/subagent'
import { toolTitle } from './translate.ts'

const MAX_LINES = 8
const MAX_TEXT = 400

interface Watch {
  lines: string[]
  text: string
  timer?: ReturnType<typeof setTimeout>
  flush(): void
  unsubscribe(): void
}

function parseArgs(raw: unknown): Record<string, unknown> {
  if (typeof raw !== 'string') return raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {}
  try {
    const value = JSON.parse(raw) as unknown
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

/** The content of one progress update: the child's recent tool calls, then its latest text. */
export function progressText(
  record: Pick<SubagentRecord, 'id' | 'provider' | 'description'>,
  lines: readonly string[],
  text: string,
): string {
  const head = `Subagent ${record.id} (${record.provider}) is working on: ${record.description}`
  const calls = lines.slice(-MAX_LINES).map((line) => `- ${line}`)
  const said = text ? [`> ${text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 3)}...` : text}`] : []
  return [head, ...calls, ...said].join('\n')
}

export class ChildProgress {
  private readonly watches = new Map<string, Watch>()

  constructor(
    private readonly emit: (parentSessionId: string, update: acp.SessionUpdate) => void,
    private readonly intervalMs = 250,
  ) {}

  /** Starts following a foreground child that a tool call of a client's session started. */
  started(record: SubagentRecord, child: Session | undefined): void {
    if (record.background || record.callId === undefined || !child) return
    const key = `${record.parentSessionId}:${record.id}`
    const watch: Watch = { lines: [], text: '', flush: () => {}, unsubscribe: () => {} }
    const flush = (watch.flush = () => {
      watch.timer = undefined
      this.emit(record.parentSessionId, {
        sessionUpdate: 'tool_call_update',
        toolCallId: record.callId!,
        status: 'in_progress',
        content: [{ type: 'content', content: { type: 'text', text: progressText(record, watch.lines, watch.text) } }],
      })
    })
    const schedule = () => {
      watch.timer ??= setTimeout(flush, this.intervalMs)
    }
    watch.unsubscribe = child.subscribe((event: AnySessionEvent) => {
      if (event.type === 'tool/call') {
        watch.lines.push(toolTitle(event.data.name, parseArgs(event.data.arguments)))
        schedule()
      } else if (event.type === 'assistant/message') {
        const text = event.data.message.content
          .filter((b) => b.type === 'text')
          .map((b) => (b as { text: string }).text)
          .join('')
          .trim()
        if (text) {
          watch.text = text
          schedule()
        }
      }
    })
    this.watches.set(key, watch)
    flush()
  }

  /** Stops following a child, sending what was still coalescing (its tool result follows). */
  finished(record: SubagentRecord): void {
    const key = `${record.parentSessionId}:${record.id}`
    const watch = this.watches.get(key)
    if (!watch) return
    this.watches.delete(key)
    watch.unsubscribe()
    if (watch.timer) {
      clearTimeout(watch.timer)
      watch.flush()
    }
  }

  dispose(): void {
    for (const watch of this.watches.values()) {
      if (watch.timer) clearTimeout(watch.timer)
      watch.unsubscribe()
    }
    this.watches.clear()
  }
}
