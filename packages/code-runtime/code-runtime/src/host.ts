// The host side of one run, shared by providers: type stripping, the message vocabulary of
// PROGRAM_HOST_SOURCE checked at the boundary, the console cap, binding calls, and the result.
// Providers add only how the program is started, stopped and reached.
import type {
  CodeLog,
  CodeLogLevel,
  CodeRunError,
  CodeRunErrorCode,
  CodeRunResult,
  JsonValue,
  ResolvedCodeRun,
} from './index.ts'
import { stripTypes, TypeStripError } from './strip.ts'

/** A message from the program, after validation. */
export type ProgramMessage =
  | { t: 'log'; level: CodeLogLevel; text: string }
  | { t: 'call'; id: number; ns: string; name: string; arg: unknown }
  | { t: 'done'; json?: string }
  | { t: 'fail'; code: CodeRunErrorCode; message: string; stack?: string }

/** A reply to a call, as the program host expects it. */
export type HostReply =
  | { t: 'reply'; id: number; ok: true; value?: unknown }
  | { t: 'reply'; id: number; ok: false; message: string; code?: string }

/** What the program host needs to start: the program (types stripped), names and globals. */
export interface ProgramStart {
  code: string
  filename: string
  namespaces: Record<string, string[]>
  globals: Record<string, JsonValue>
}

export interface RunOutcome {
  value?: JsonValue
  error?: CodeRunError
}

const LEVELS: readonly string[] = ['log', 'info', 'warn', 'error', 'debug']
const FAIL_CODES: readonly string[] = [
  'SYNTAX',
  'THROWN',
  'TIMEOUT',
  'MEMORY',
  'CANCELLED',
  'UNSERIALIZABLE',
  'INTERNAL',
  'REFUSED',
]

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * Validates one message from the program. Returns the message, or a sentence naming what is
 * wrong with it (a program can write anything to its transport; nothing unchecked reaches the host).
 */
export function checkProgramMessage(raw: unknown): ProgramMessage | string {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return 'a message is not an object'
  const m = raw as Record<string, unknown>
  switch (m.t) {
    case 'log':
      if (typeof m.level !== 'string' || !LEVELS.includes(m.level)) return 'a log message has no valid level'
      if (typeof m.text !== 'string') return 'a log message has no text'
      return { t: 'log', level: m.level as CodeLogLevel, text: m.text }
    case 'call':
      if (typeof m.id !== 'number' || !Number.isSafeInteger(m.id)) return 'a call has no integer id'
      if (typeof m.ns !== 'string' || typeof m.name !== 'string') return 'a call has no namespace or name'
      return { t: 'call', id: m.id, ns: m.ns, name: m.name, arg: m.arg }
    case 'done':
      if (m.json !== undefined && typeof m.json !== 'string') return 'a done message has a non-string value'
      return m.json === undefined ? { t: 'done' } : { t: 'done', json: m.json }
    case 'fail':
      if (typeof m.code !== 'string' || !FAIL_CODES.includes(m.code)) return 'a fail message has an unknown code'
      if (typeof m.message !== 'string') return 'a fail message has no message'
      if (m.stack !== undefined && typeof m.stack !== 'string') return 'a fail message has a non-string stack'
      return {
        t: 'fail',
        code: m.code as CodeRunErrorCode,
        message: m.message,
        ...(m.stack !== undefined ? { stack: m.stack } : {}),
      }
    default:
      return `unknown message type ${JSON.stringify(m.t)}`
  }
}

/** The console cap, the call count and the result of one run. */
export class RunState {
  readonly started = performance.now()
  readonly logs: CodeLog[] = []
  calls = 0
  /** Aborted when the run ends for any reason: pending binding calls are told to stop. */
  readonly lifetime = new AbortController()
  private logChars = 0
  private dropped = 0
  /** Set once the result is handed out: late output is dropped. */
  private closed = false

  constructor(
    readonly request: ResolvedCodeRun,
    private readonly maxLogChars: number,
  ) {}

  /** Types stripped (when TypeScript) and the names the program host needs; or a SYNTAX error. */
  async start(): Promise<ProgramStart | CodeRunError> {
    let code = this.request.code
    if (this.request.language === 'typescript') {
      try {
        code = await stripTypes(code)
      } catch (error) {
        const message = error instanceof TypeStripError ? error.message : messageOf(error)
        return { code: 'SYNTAX', message: `SyntaxError: ${message}` }
      }
    }
    const namespaces: Record<string, string[]> = {}
    for (const [ns, table] of Object.entries(this.request.bindings)) namespaces[ns] = Object.keys(table).sort()
    return { code, filename: this.request.filename, namespaces, globals: this.request.globals }
  }

  record(log: CodeLog): void {
    if (this.closed) return
    const room = this.maxLogChars - this.logChars
    if (room <= 0) {
      this.dropped += log.text.length
      return
    }
    const kept = log.text.length <= room ? log : { level: log.level, text: log.text.slice(0, room) }
    this.dropped += log.text.length - kept.text.length
    this.logChars += kept.text.length
    this.logs.push(kept)
    try {
      this.request.onLog?.(kept)
    } catch {}
  }

  /** Runs one binding call and builds the reply (never throws). */
  async answer(call: Extract<ProgramMessage, { t: 'call' }>): Promise<HostReply> {
    this.calls++
    const fn =
      Object.hasOwn(this.request.bindings, call.ns) && Object.hasOwn(this.request.bindings[call.ns]!, call.name)
        ? this.request.bindings[call.ns]![call.name]
        : undefined
    try {
      if (!fn) throw new TypeError(`${call.ns}.${call.name} does not exist`)
      const value = await fn(call.arg, { signal: this.lifetime.signal })
      return {
        t: 'reply',
        id: call.id,
        ok: true,
        ...(value === undefined ? {} : { value: JSON.parse(JSON.stringify(value)) as unknown }),
      }
    } catch (error) {
      const code = (error as { code?: unknown })?.code
      return {
        t: 'reply',
        id: call.id,
        ok: false,
        message: messageOf(error),
        ...(typeof code === 'string' ? { code } : {}),
      }
    }
  }

  /**
   * Acts on one raw message from the program's transport: logs are recorded, calls answered
   * through `reply`, and `done`/`fail` (or a malformed message, named with `from`) end the run
   * through `end`. One dispatch for every provider, so they cannot differ on what a message means.
   */
  receive(raw: unknown, from: string, end: (outcome: RunOutcome) => void, reply: (message: HostReply) => void): void {
    const message = checkProgramMessage(raw)
    if (typeof message === 'string') {
      end({ error: { code: 'INTERNAL', message: `${from} sent a malformed message: ${message}` } })
      return
    }
    switch (message.t) {
      case 'log':
        this.record({ level: message.level, text: message.text })
        return
      case 'call':
        return void this.answer(message).then(reply)
      case 'done':
        end(RunState.done(message))
        return
      case 'fail':
        end({
          error: { code: message.code, message: message.message, ...(message.stack ? { stack: message.stack } : {}) },
        })
        return
    }
  }

  /** The outcome of a `done` message. */
  static done(message: Extract<ProgramMessage, { t: 'done' }>): RunOutcome {
    if (message.json === undefined) return {}
    try {
      return { value: JSON.parse(message.json) as JsonValue }
    } catch (error) {
      return { error: { code: 'INTERNAL', message: `the returned value could not be read: ${messageOf(error)}` } }
    }
  }

  /** Ends the run: pending calls are aborted, later output dropped, the result built. */
  finish(outcome: RunOutcome): CodeRunResult {
    if (!this.lifetime.signal.aborted)
      this.lifetime.abort(new Error(outcome.error ? `the program ended (${outcome.error.code})` : 'the program ended'))
    this.closed = true
    return {
      ...(outcome.value !== undefined ? { value: outcome.value } : {}),
      logs: this.logs,
      ...(this.dropped > 0 ? { droppedLogChars: this.dropped } : {}),
      ...(outcome.error ? { error: outcome.error } : {}),
      calls: this.calls,
      durationMs: Math.round(performance.now() - this.started),
    }
  }
}

/** The reason of an aborted signal, as a few words. */
export function reasonOf(signal: AbortSignal): string {
  const reason = signal.reason as unknown
  if (reason instanceof Error) return reason.message
  return reason === undefined ? 'aborted' : String(reason)
}

export const timeoutError = (ms: number): CodeRunError => ({
  code: 'TIMEOUT',
  message: `the program ran longer than its ${ms} ms limit and was stopped`,
})
export const cancelledError = (signal: AbortSignal): CodeRunError => ({
  code: 'CANCELLED',
  message: `the run was cancelled (${reasonOf(signal)}) and the program was stopped`,
})
export const memoryError = (mb: number): CodeRunError => ({
  code: 'MEMORY',
  message: `the program used more than its ${mb} MiB heap limit and was stopped`,
})
