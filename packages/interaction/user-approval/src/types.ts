// Public vocabulary of the approval seam: requests, outcomes, answerers, policies and events.
import type { Brand, JsonValue } from '@dsh/brand'

/** A JSON value as it may be logged and compared (declared in @dsh/brand). */
export type { JsonValue }

/** Opaque id of one approval request, minted by `ctx.approval.request()`. */
export type ApprovalId = Brand<string, 'ApprovalId'>

/** What is being approved. The listed kinds are conventional; any other string is allowed. */
export type ApprovalKind = 'command' | 'write' | 'network' | 'tool' | (string & {})

/** The five results of a request. Only the two `allowed-*` decisions permit the action. */
export type ApprovalDecision = 'allowed-once' | 'allowed-always' | 'rejected' | 'cancelled' | 'unavailable'

/** The decisions an answerer may choose among (`cancelled` and `unavailable` are never offered). */
export type ApprovalChoice = 'allowed-once' | 'allowed-always' | 'rejected'

export const APPROVAL_DECISIONS: readonly ApprovalDecision[] = [
  'allowed-once',
  'allowed-always',
  'rejected',
  'cancelled',
  'unavailable',
]
export const APPROVAL_CHOICES: readonly ApprovalChoice[] = ['allowed-once', 'allowed-always', 'rejected']

/** What a caller passes to `request()`. */
export interface ApprovalRequestInput {
  sessionId?: string
  agentId?: string
  /**
   * The tool call this request is asked inside (`ToolCallContext.callId`), when it is. A deadline on
   * that call (timeout-policy) stops counting while the request waits for a person.
   */
  callId?: string
  kind: ApprovalKind
  /** One line for the human, e.g. `Run "rm -rf build" outside the sandbox`. */
  title: string
  /** Longer explanation (why, what the sandbox denied, ...). */
  detail?: string
  /**
   * Exactly the action being approved, as JSON (e.g. `{argv, cwd, sandbox: 'none'}`). A grant covers
   * only a request of the same `kind` whose `action` is deep-equal (object key order ignored).
   */
  action: JsonValue
  /** Choices the answerer may offer. Default: all three. Omit `allowed-always` for one-off risks. */
  options?: ApprovalChoice[]
  /**
   * What each choice does here, in a few words, for answerers that name their buttons (e.g.
   * `{'allowed-once': 'Apply the change', rejected: 'Keep the patch only'}`); absent: their own names.
   */
  labels?: Partial<Record<ApprovalChoice, string>>
}

/** A request as answerers, events and `pending()` see it. */
export interface ApprovalRequest extends Readonly<Omit<ApprovalRequestInput, 'options'>> {
  readonly id: ApprovalId
  readonly options: readonly ApprovalChoice[]
  /** Epoch milliseconds when it was requested. */
  readonly time: number
}

export interface ApprovalOutcome {
  decision: ApprovalDecision
  /** Why (for `rejected`, `cancelled`, `unavailable`); fit to show to the model. */
  reason?: string
  /** Free text from the human that should reach the model (e.g. "use the staging bucket instead"). */
  message?: string
  /** Name of the answerer that decided; `memory` when a remembered `allowed-always` grant answered. */
  answeredBy?: string
  /**
   * True when the request needed a person and none could be asked (no interactive answerer, or a
   * policy answerer standing in for the missing human): consumers say "refused (no one to ask)",
   * never that the user refused, and a surface may tell the person afterwards.
   */
  noHuman?: boolean
}

export interface ApprovalRequestOptions {
  /** Aborting while pending (turn cancelled) resolves `cancelled`. */
  signal?: AbortSignal
}

export interface ApprovalAnswerContext {
  /** Aborted when the request is settled without this answerer (cancelled, timed out, answerer removed). */
  signal: AbortSignal
}

/** What an answerer returns: a decision it was offered, with an optional reason and message. */
export interface ApprovalAnswer {
  decision: ApprovalChoice
  reason?: string
  message?: string
  /** The answerer decided only because no person could be asked (see `ApprovalOutcome.noHuman`). */
  noHuman?: boolean
}

/** A channel that can decide approvals: ACP client, SDK client, TUI, web UI, a headless policy. */
export interface ApprovalAnswerer {
  name: string
  /** Whether this answerer handles the request (e.g. only its own sessions). Default: all. */
  accepts?(request: ApprovalRequest): boolean
  answer(request: ApprovalRequest, context: ApprovalAnswerContext): Promise<ApprovalAnswer> | ApprovalAnswer
}

/**
 * The `approval/policy` knob a permission preset pairs with a sandbox mode.
 * - `ask`: requests go to an interactive answerer (a human decides).
 * - `on-failure`: like `ask`, but consumers only request approval after a confined attempt failed
 *   or was denied (they do not ask up front). To the approval seam it is the same as `ask`.
 * - `never`: never ask; every request is allowed once, without a human.
 * - `reject`: never ask; every request is rejected (confined, non-interactive runs).
 */
export type ApprovalPolicy = 'ask' | 'on-failure' | 'never' | 'reject'
export const APPROVAL_POLICIES: readonly ApprovalPolicy[] = ['ask', 'on-failure', 'never', 'reject']

declare module 'cordis' {
  interface Context {
    approval: import('./service.ts').ApprovalService
  }
  interface Events {
    /** A request is pending (also emitted when no answerer exists, just before it resolves `unavailable`). */
    'approval/requested'(request: ApprovalRequest): void
    /** A request settled. Every `approval/requested` is followed by exactly one of these. */
    'approval/resolved'(request: ApprovalRequest, outcome: ApprovalOutcome): void
  }
}
