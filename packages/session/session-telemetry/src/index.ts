// @dsh/session-telemetry: the telemetry seam, `ctx.sessionTelemetry`. It follows the events of every
// session in `ctx.sessions` and hands one record per model call, tool call and turn to the
// registered exporters (e.g. @dsh/session-telemetry-otel). Records carry figures and names only;
// prompt, output, argument and result text is added only when `includeContent` is on.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { AnySessionEvent, Session } from '@dsh/session'
import type { TokenUsage } from '@dsh/llm'

declare module 'cordis' {
  interface Context {
    sessionTelemetry: SessionTelemetry
  }
  interface Events {
    /** An exporter threw; the record still reached the others. */
    'session-telemetry/error'(exporter: string, error: unknown): void
  }
}

interface RecordBase {
  sessionId: string
  /** Epoch ms of the event that closed the record. */
  time: number
  /** The log seq of that event. */
  seq: number
  turn?: number
  step?: number
}

export interface ModelCallRecord extends RecordBase {
  kind: 'model_call'
  provider?: string
  model?: string
  tokens?: TokenUsage
  /** From step start (or the previous call of the step) to the first chunk / the message. */
  firstTokenMs?: number
  decodeMs?: number
  durationMs?: number
  finish?: string
  interrupted?: boolean
  toolCalls: number
  /** With includeContent: the assistant text. */
  output?: string
}

export interface ToolCallRecord extends RecordBase {
  kind: 'tool_call'
  tool: string
  callId: string
  durationMs?: number
  isError: boolean
  errorCode?: string
  /** With includeContent: the raw arguments and the result text. */
  arguments?: string
  result?: string
}

export interface TurnRecord extends RecordBase {
  kind: 'turn'
  reason: string
  durationMs?: number
  steps: number
  modelCalls: number
  toolCalls: number
  toolErrors: number
  tokens: TokenUsage
  errorCode?: string
  /** With includeContent: the human prompt(s) of the turn. */
  prompt?: string
}

/**
 * A human's recorded feedback: a like/dislike on one answer (`feedback/message`, `rating` and the
 * rated `messageSeq`) or free text about the session (`feedback/record`, `source`).
 */
export interface FeedbackRecord extends RecordBase {
  kind: 'feedback'
  /** `message`: a rating of one assistant message; `session`: free-text feedback. */
  target: 'message' | 'session'
  rating?: string
  messageSeq?: number
  source?: string
  /** With includeContent: the note or the feedback text. */
  note?: string
}

export type TelemetryRecord = ModelCallRecord | ToolCallRecord | TurnRecord | FeedbackRecord

/** Event types that record human feedback (they trigger the replay of a feedback-only backend). */
export const FEEDBACK_EVENT_TYPES: readonly string[] = ['feedback/message', 'feedback/record']

export interface TelemetryExporter {
  name: string
  export(record: TelemetryRecord): void
}

export interface SessionTelemetryConfig {
  /** Put prompt, output, tool argument and result text into records. */
  includeContent: boolean
  /** Characters of each content field, at most. */
  maxContentChars: number
}

interface Tracker {
  turn?: {
    turn: number
    start: number
    steps: number
    modelCalls: number
    toolCalls: number
    toolErrors: number
    tokens: TokenUsage
    prompts: string[]
  }
  step?: number
  callStart?: number
  firstChunk?: number
  provider?: string
  model?: string
  calls: Map<string, { name: string; start: number; args: string; step?: number }>
}

const zero = (): TokenUsage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 })
const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

/** `true` for `1`, `true`, `yes`, `on` (any case); false otherwise. */
export function envFlag(value: string | undefined): boolean {
  return /^(1|true|yes|on)$/i.test(value?.trim() ?? '')
}

export class SessionTelemetry extends Service {
  static inject = ['sessions']
  static Config: Schema<Partial<SessionTelemetryConfig>, SessionTelemetryConfig> = Schema.object({
    includeContent: Schema.boolean()
      .default(envFlag(process.env.DSH_TELEMETRY_INCLUDE_CONTENT))
      .description('Add prompt, output and tool text to records (default: $DSH_TELEMETRY_INCLUDE_CONTENT, else off).'),
    maxContentChars: Schema.natural().min(100).default(4000).description('Characters of each content field, at most.'),
  })

  // Mutated in place only (methods may run on a per-caller shadow of the service).
  private readonly exporters: TelemetryExporter[] = []
  private readonly folds = new Map<string, RecordFold>()
  private readonly home: Context
  readonly includeContent: boolean
  private readonly maxContentChars: number

  constructor(ctx: Context, config: Partial<SessionTelemetryConfig> = {}) {
    super(ctx, 'sessionTelemetry')
    this.home = ctx
    this.includeContent = config.includeContent ?? envFlag(process.env.DSH_TELEMETRY_INCLUDE_CONTENT)
    this.maxContentChars = config.maxContentChars ?? 4000
    const folds = this.folds
    ctx.on('session/event', (session, event) => this.onEvent(session, event))
    ctx.on('session/deleted', (session) => void folds.delete(session.id))
    ctx.effect(() => () => folds.clear(), 'session-telemetry: clear')
  }

  /** Adds an exporter; records go to it until the disposer runs or the caller unloads. */
  registerExporter(exporter: TelemetryExporter): () => void {
    return this.ctx.effect(() => {
      this.exporters.push(exporter)
      return () => {
        const i = this.exporters.indexOf(exporter)
        if (i >= 0) this.exporters.splice(i, 1)
      }
    }, `session-telemetry: exporter ${exporter.name}`)
  }

  /** Hands a record to every exporter (also for records a plugin builds itself). */
  emit(record: TelemetryRecord): void {
    for (const exporter of this.exporters) {
      try {
        exporter.export(record)
      } catch (error) {
        this.home.emit('session-telemetry/error', exporter.name, error)
      }
    }
  }

  /**
   * The records of a whole log, folded from its first event exactly as live following builds them
   * (same content setting). For backends that export a session only at some later moment (e.g. at
   * recorded feedback) rather than as it runs; nothing is handed to the exporters.
   */
  replay(events: readonly AnySessionEvent[], sessionId: string): TelemetryRecord[] {
    const fold = new RecordFold(sessionId, this.foldOptions())
    const out: TelemetryRecord[] = []
    for (const event of events) {
      const record = fold.push(event)
      if (record) out.push(record)
    }
    return out
  }

  private foldOptions(): FoldOptions {
    return { includeContent: this.includeContent, maxContentChars: this.maxContentChars }
  }

  private onEvent(session: Session, event: AnySessionEvent): void {
    if (this.exporters.length === 0) return
    let fold = this.folds.get(session.id)
    if (!fold) this.folds.set(session.id, (fold = new RecordFold(session.id, this.foldOptions())))
    const record = fold.push(event)
    if (record) this.emit(record)
  }
}

interface FoldOptions {
  includeContent: boolean
  maxContentChars: number
}

/** Folds one session's events, in seq order, into records (one per closing event). */
export class RecordFold {
  private readonly t: Tracker = { calls: new Map() }

  constructor(
    readonly sessionId: string,
    private readonly options: FoldOptions,
  ) {}

  private content(text: string): string {
    const max = this.options.maxContentChars
    return text.length > max ? `${text.slice(0, max)}…` : text
  }

  /** The record `event` closes, if any. */
  push(event: AnySessionEvent): TelemetryRecord | undefined {
    const t = this.t
    const sessionId = this.sessionId
    const includeContent = this.options.includeContent
    const base = (): RecordBase => ({
      sessionId,
      time: event.time,
      seq: event.seq,
      ...(t.turn ? { turn: t.turn.turn } : {}),
      ...(t.step !== undefined ? { step: t.step } : {}),
    })
    const type = event.type as string
    if (type === 'feedback/message' || type === 'feedback/record') {
      const data = event.data as {
        messageSeq?: unknown
        rating?: unknown
        note?: unknown
        text?: unknown
        source?: unknown
      }
      const note = typeof data.note === 'string' ? data.note : typeof data.text === 'string' ? data.text : undefined
      return {
        kind: 'feedback',
        sessionId,
        time: event.time,
        seq: event.seq,
        target: type === 'feedback/message' ? 'message' : 'session',
        ...(typeof data.rating === 'string' ? { rating: data.rating } : {}),
        ...(typeof data.messageSeq === 'number' ? { messageSeq: data.messageSeq } : {}),
        ...(typeof data.source === 'string' ? { source: data.source } : {}),
        ...(includeContent && note ? { note: this.content(note) } : {}),
      }
    }
    switch (event.type) {
      case 'turn/start':
        t.turn = {
          turn: event.data.turn,
          start: event.time,
          steps: 0,
          modelCalls: 0,
          toolCalls: 0,
          toolErrors: 0,
          tokens: zero(),
          prompts: [],
        }
        t.step = undefined
        break
      case 'step/start':
        t.step = event.data.step
        t.callStart = event.time
        t.firstChunk = undefined
        if (t.turn) t.turn.steps++
        break
      case 'request/header':
        t.provider = event.data.provider
        t.model = event.data.model
        break
      case 'user/message':
        if (t.turn && event.data.source?.kind === 'human')
          t.turn.prompts.push(event.data.content.map((b) => (b.type === 'text' ? b.text : '')).join(''))
        break
      case 'assistant/chunk':
        t.firstChunk ??= event.time
        break
      case 'assistant/message': {
        const usage = event.data.usage
        const tokens = usage
          ? {
              input: n(usage.input),
              output: n(usage.output),
              cacheRead: n(usage.cacheRead),
              cacheWrite: n(usage.cacheWrite),
              reasoning: n(usage.reasoning),
            }
          : undefined
        if (t.turn) {
          t.turn.modelCalls++
          if (tokens) for (const k of Object.keys(tokens) as Array<keyof TokenUsage>) t.turn.tokens[k] += tokens[k]
        }
        const content = event.data.message.content
        const record: ModelCallRecord = {
          kind: 'model_call',
          ...base(),
          ...(t.provider ? { provider: t.provider } : {}),
          ...(t.model ? { model: t.model } : {}),
          ...(tokens ? { tokens } : {}),
          ...(t.callStart !== undefined && t.firstChunk !== undefined
            ? { firstTokenMs: t.firstChunk - t.callStart, decodeMs: event.time - t.firstChunk }
            : {}),
          ...(t.callStart !== undefined ? { durationMs: event.time - t.callStart } : {}),
          ...(event.data.finish ? { finish: event.data.finish } : {}),
          ...(event.data.interrupted ? { interrupted: true } : {}),
          toolCalls: content.filter((b) => b.type === 'tool-call').length,
          ...(includeContent
            ? { output: this.content(content.map((b) => (b.type === 'text' ? b.text : '')).join('')) }
            : {}),
        }
        t.callStart = event.time
        t.firstChunk = undefined
        return record
      }
      case 'tool/call':
        t.calls.set(event.data.callId, {
          name: event.data.name,
          start: event.time,
          args: event.data.arguments,
          ...(t.step !== undefined ? { step: t.step } : {}),
        })
        break
      case 'tool/started': {
        const call = t.calls.get(event.data.callId)
        if (call) call.start = event.time
        break
      }
      case 'tool/result': {
        const message = event.data.message
        const call = t.calls.get(message.callId)
        t.calls.delete(message.callId)
        const isError = event.data.error !== undefined || message.isError === true
        if (t.turn) {
          t.turn.toolCalls++
          if (isError) t.turn.toolErrors++
        }
        return {
          kind: 'tool_call',
          ...base(),
          tool: call?.name ?? message.name,
          callId: message.callId,
          ...(call ? { durationMs: event.time - call.start } : {}),
          isError,
          ...(event.data.error ? { errorCode: event.data.error.code } : {}),
          ...(includeContent
            ? {
                arguments: this.content(call?.args ?? ''),
                result: this.content(message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')),
              }
            : {}),
        }
      }
      case 'turn/end': {
        const turn = t.turn
        t.turn = undefined
        t.step = undefined
        return {
          kind: 'turn',
          sessionId,
          time: event.time,
          seq: event.seq,
          turn: event.data.turn,
          reason: event.data.reason,
          ...(turn ? { durationMs: event.time - turn.start } : {}),
          steps: turn?.steps ?? 0,
          modelCalls: turn?.modelCalls ?? 0,
          toolCalls: turn?.toolCalls ?? 0,
          toolErrors: turn?.toolErrors ?? 0,
          tokens: turn?.tokens ?? zero(),
          ...(event.data.error ? { errorCode: event.data.error.code } : {}),
          ...(includeContent && turn ? { prompt: this.content(turn.prompts.join('\n\n')) } : {}),
        }
      }
    }
    return undefined
  }
}

export const name = '@dsh/session-telemetry'
export default SessionTelemetry
