// The approval service (`ctx.approval`): mints requests, routes each to the newest answerer that
// accepts it, remembers `allowed-always` grants per session, and fails closed on every path that
// does not end in an explicit decision.
import { type Context, Service } from 'cordis'
import { AnswererList } from '@dsh/answerers'
import Schema from 'schemastery'
import { brand } from '@dsh/brand'
import {
  APPROVAL_CHOICES,
  type ApprovalAnswerer,
  type ApprovalChoice,
  type ApprovalId,
  type ApprovalOutcome,
  type ApprovalRequest,
  type ApprovalRequestInput,
  type ApprovalRequestOptions,
  type JsonValue,
} from './types.ts'

export interface ApprovalConfig {
  /** Milliseconds an answerer may take before the request resolves `unavailable`; 0 waits forever. */
  timeoutMs: number
  /** Remember `allowed-always` grants for the rest of the session. False: they act like `allowed-once`. */
  rememberAlways: boolean
}

export const ApprovalConfig: Schema<ApprovalConfig> = Schema.object({
  timeoutMs: Schema.natural()
    .default(0)
    .description('Milliseconds an answerer may take before the request resolves `unavailable`; 0 waits forever.'),
  rememberAlways: Schema.boolean()
    .default(true)
    .description('Remember `allowed-always` grants for the rest of the session.'),
})

/** Stable serialisation: object keys sorted, so `{a,b}` and `{b,a}` are the same action. */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  const keys = Object.keys(value).sort()
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key] as JsonValue)}`).join(',')}}`
}

/** The identity a grant covers: kind plus canonical action. */
export function actionKey(kind: string, action: JsonValue): string {
  return `${kind}\u0000${canonicalJson(action)}`
}

/** True exactly for the two decisions that permit the action. */
export function isAllowed(outcome: ApprovalOutcome): boolean {
  return outcome.decision === 'allowed-once' || outcome.decision === 'allowed-always'
}

interface PendingEntry {
  request: ApprovalRequest
}

let counter = 0

function validateInput(input: ApprovalRequestInput): void {
  if (input === null || typeof input !== 'object') throw new TypeError('approval.request: expected a request object')
  if (typeof input.kind !== 'string' || input.kind === '')
    throw new TypeError('approval.request: kind must be a non-empty string')
  if (typeof input.title !== 'string' || input.title === '')
    throw new TypeError('approval.request: title must be a non-empty string')
  if (input.callId !== undefined && (typeof input.callId !== 'string' || input.callId === ''))
    throw new TypeError('approval.request: callId must be a non-empty string')
  if (input.detail !== undefined && typeof input.detail !== 'string')
    throw new TypeError('approval.request: detail must be a string')
  if (input.action === undefined)
    throw new TypeError('approval.request: action is required (JSON describing exactly the action)')
  try {
    canonicalJson(input.action)
  } catch {
    throw new TypeError('approval.request: action must be JSON')
  }
  if (input.labels !== undefined) {
    if (input.labels === null || typeof input.labels !== 'object' || Array.isArray(input.labels))
      throw new TypeError('approval.request: labels must be an object of choice to text')
    for (const [choice, label] of Object.entries(input.labels)) {
      if (!APPROVAL_CHOICES.includes(choice as ApprovalChoice))
        throw new TypeError(`approval.request: labels names an unknown choice ${JSON.stringify(choice)}`)
      if (typeof label !== 'string' || label.trim() === '')
        throw new TypeError(`approval.request: the label of ${choice} must be a non-empty string`)
    }
  }
  if (input.options !== undefined) {
    if (!Array.isArray(input.options) || input.options.length === 0)
      throw new TypeError('approval.request: options must be a non-empty array')
    for (const option of input.options) {
      if (!APPROVAL_CHOICES.includes(option))
        throw new TypeError(
          `approval.request: unknown option ${JSON.stringify(option)} (valid: ${APPROVAL_CHOICES.join(', ')})`,
        )
    }
  }
}

function reasonOf(value: unknown): string {
  if (value instanceof Error) return value.message
  return typeof value === 'string' ? value : String(value)
}

export class ApprovalService extends Service {
  static Config = ApprovalConfig
  private readonly answererList = new AnswererList<ApprovalRequest, ApprovalAnswerer>('approval')
  private pendingEntries = new Map<ApprovalId, PendingEntry>()
  /** sessionId -> action keys granted `allowed-always`. */
  private grantsBySession = new Map<string, Map<string, { kind: string; action: JsonValue }>>()

  constructor(
    ctx: Context,
    public config: ApprovalConfig = ApprovalConfig({} as ApprovalConfig),
  ) {
    super(ctx, 'approval')
    ctx.on(
      'session/deleted' as never,
      ((session: { id?: string }) => {
        if (session && typeof session.id === 'string') this.grantsBySession.delete(session.id)
      }) as never,
    )
  }

  /**
   * Registers a channel that can decide approvals. The newest answerer whose `accepts()` returns
   * true (or that has none) answers each request. The disposer (or unloading the caller plugin)
   * removes it; its still-pending requests then resolve `unavailable`.
   */
  registerAnswerer(answerer: ApprovalAnswerer): () => void {
    return this.answererList.register(this.ctx, answerer, 'approval.registerAnswerer')
  }

  /** Names of the registered answerers, newest first. */
  answerers(): string[] {
    return this.answererList.names()
  }

  /** Requests waiting for an answer, oldest first; optionally only one session's. */
  pending(filter: { sessionId?: string } = {}): ApprovalRequest[] {
    return [...this.pendingEntries.values()]
      .map((entry) => entry.request)
      .filter((request) => filter.sessionId === undefined || request.sessionId === filter.sessionId)
  }

  /** The `allowed-always` grants remembered for a session. */
  grants(sessionId: string): Array<{ kind: string; action: JsonValue }> {
    return [...(this.grantsBySession.get(sessionId)?.values() ?? [])]
  }

  /** Forgets remembered grants: one session's, or all. */
  forget(sessionId?: string): void {
    if (sessionId === undefined) this.grantsBySession.clear()
    else this.grantsBySession.delete(sessionId)
  }

  /**
   * Asks for approval of one action. Never rejects for answerer failures: every path resolves to an
   * outcome, and anything other than `allowed-once`/`allowed-always` means "do not do it".
   * Throws `TypeError` only for a malformed request (a programming error of the caller).
   */
  async request(input: ApprovalRequestInput, options: ApprovalRequestOptions = {}): Promise<ApprovalOutcome> {
    validateInput(input)
    const request: ApprovalRequest = Object.freeze({
      id: brand<'ApprovalId'>(`approval-${Date.now().toString(36)}-${(++counter).toString(36)}`) as ApprovalId,
      ...(input.sessionId !== undefined ? { sessionId: input.sessionId } : {}),
      ...(input.agentId !== undefined ? { agentId: input.agentId } : {}),
      ...(input.callId !== undefined ? { callId: input.callId } : {}),
      kind: input.kind,
      title: input.title,
      ...(input.detail !== undefined ? { detail: input.detail } : {}),
      action: JSON.parse(JSON.stringify(input.action)) as JsonValue,
      options: Object.freeze([...(input.options ?? APPROVAL_CHOICES)]),
      ...(input.labels !== undefined ? { labels: Object.freeze({ ...input.labels }) } : {}),
      time: Date.now(),
    })
    const key = actionKey(request.kind, request.action)
    const remembered = request.sessionId !== undefined ? this.grantsBySession.get(request.sessionId)?.has(key) : false

    this.pendingEntries.set(request.id, { request })
    this.emitSafe('approval/requested', request)
    let outcome: ApprovalOutcome
    try {
      if (remembered)
        outcome = { decision: 'allowed-always', reason: 'remembered for this session', answeredBy: 'memory' }
      else outcome = await this.decide(request, options.signal)
    } finally {
      this.pendingEntries.delete(request.id)
    }
    if (outcome.decision === 'allowed-always' && !remembered) {
      if (this.config.rememberAlways && request.sessionId !== undefined) {
        let grants = this.grantsBySession.get(request.sessionId)
        if (!grants) this.grantsBySession.set(request.sessionId, (grants = new Map()))
        grants.set(key, { kind: request.kind, action: request.action })
      }
    }
    this.emitSafe('approval/resolved', request, outcome)
    return outcome
  }

  private async decide(request: ApprovalRequest, signal: AbortSignal | undefined): Promise<ApprovalOutcome> {
    if (signal?.aborted)
      return { decision: 'cancelled', reason: `cancelled before it was asked (${reasonOf(signal.reason)})` }
    const picked = this.answererList.pick(request)
    if (!picked)
      return {
        decision: 'unavailable',
        reason: 'no approval answerer is registered (no human or policy can decide right now)',
        noHuman: true,
      }
    if ('error' in picked) return { decision: 'unavailable', reason: picked.error }
    const { answerer, gone } = picked.entry
    const settle = new AbortController()
    const cleanups: Array<() => void> = []
    const race = new Promise<ApprovalOutcome>((resolve) => {
      const onAbort = () =>
        resolve({
          decision: 'cancelled',
          reason: `cancelled while waiting for approval (${reasonOf(signal!.reason)})`,
          answeredBy: answerer.name,
        })
      const onGone = () =>
        resolve({
          decision: 'unavailable',
          reason: `approval answerer "${answerer.name}" went away before answering`,
          answeredBy: answerer.name,
        })
      if (signal) {
        signal.addEventListener('abort', onAbort, { once: true })
        cleanups.push(() => signal.removeEventListener('abort', onAbort))
      }
      if (gone.signal.aborted) return onGone()
      gone.signal.addEventListener('abort', onGone, { once: true })
      cleanups.push(() => gone.signal.removeEventListener('abort', onGone))
      if (this.config.timeoutMs > 0) {
        const timer = setTimeout(
          () =>
            resolve({
              decision: 'unavailable',
              reason: `no answer within ${this.config.timeoutMs} ms`,
              answeredBy: answerer.name,
            }),
          this.config.timeoutMs,
        )
        cleanups.push(() => clearTimeout(timer))
      }
      Promise.resolve()
        .then(() => answerer.answer(request, { signal: settle.signal }))
        .then(
          (answer) => resolve(this.checkAnswer(request, answerer.name, answer)),
          (error) =>
            resolve({
              decision: 'unavailable',
              reason: `approval answerer "${answerer.name}" failed: ${reasonOf(error)}`,
              answeredBy: answerer.name,
            }),
        )
    })
    try {
      return await race
    } finally {
      for (const cleanup of cleanups) cleanup()
      // Tells the answerer to withdraw its prompt when it did not decide (harmless after it did).
      settle.abort(new Error('approval request settled'))
    }
  }

  private checkAnswer(request: ApprovalRequest, name: string, answer: unknown): ApprovalOutcome {
    const value = answer as { decision?: unknown; reason?: unknown; message?: unknown; noHuman?: unknown } | null
    const decision = value && typeof value === 'object' ? value.decision : undefined
    if (typeof decision !== 'string' || !APPROVAL_CHOICES.includes(decision as ApprovalChoice)) {
      return {
        decision: 'unavailable',
        reason: `approval answerer "${name}" returned an invalid answer ${JSON.stringify(decision)}`,
        answeredBy: name,
      }
    }
    if (!request.options.includes(decision as ApprovalChoice)) {
      return {
        decision: 'rejected',
        reason: `approval answerer "${name}" chose "${decision}", which this request did not offer`,
        answeredBy: name,
      }
    }
    const outcome: ApprovalOutcome = { decision: decision as ApprovalChoice, answeredBy: name }
    if (typeof value!.reason === 'string' && value!.reason !== '') outcome.reason = value!.reason
    if (typeof value!.message === 'string' && value!.message !== '') outcome.message = value!.message
    if (value!.noHuman === true) outcome.noHuman = true
    return outcome
  }

  private emitSafe(
    ...args: ['approval/requested', ApprovalRequest] | ['approval/resolved', ApprovalRequest, ApprovalOutcome]
  ): void {
    try {
      ;(this.ctx.emit as (...a: unknown[]) => void)(...args)
    } catch (error) {
      this.ctx.logger('approval').warn('an %s listener threw: %s', args[0], reasonOf(error))
    }
  }
}
