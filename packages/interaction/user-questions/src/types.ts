// Public vocabulary of the user-questions seam: questions, answers, outcomes, answerers, events.
import type { Brand } from '@dsh/brand'

/** Opaque id of one `ask()` call (a batch of questions), minted by the service. */
export type QuestionsId = Brand<string, 'QuestionsId'>

export interface QuestionOption {
  /** What the human picks; answers name options by label. Unique within a question. */
  label: string
  description?: string
}

export interface Question {
  /** Caller-chosen key of the answer; unique within one `ask()`. */
  id: string
  question: string
  /** A short tag a UI may show as a chip or title ("Database", "Scope"). */
  header?: string
  /** Choices. Absent or empty: a free-text question. A human may always add free text. */
  options?: QuestionOption[]
  /** Several options may be picked. Default false (at most one). */
  multiSelect?: boolean
}

export interface QuestionAnswer {
  /** Labels of the picked options, in the order given. */
  selected: string[]
  /** Free text (the answer to a free-text question, or a comment / "other" for a choice). */
  text?: string
}

/** A batch as answerers, events and `pending()` see it. */
export interface QuestionsRequest {
  readonly id: QuestionsId
  readonly sessionId?: string
  readonly agentId?: string
  /** The tool call asking (e.g. ask_user_question's), when one is: its deadline pauses meanwhile. */
  readonly callId?: string
  readonly questions: readonly Question[]
  /** Epoch milliseconds. */
  readonly time: number
}

export type QuestionsOutcome =
  /** `answers` has an entry for every question the human answered; an unanswered one is absent. */
  | { status: 'answered'; answers: Record<string, QuestionAnswer>; answeredBy: string }
  | { status: 'cancelled'; reason: string }
  | { status: 'unavailable'; reason: string }

export interface AskOptions {
  sessionId?: string
  agentId?: string
  /** The tool call asking, when one is (`ToolCallContext.callId`); timeout-policy pauses its deadline. */
  callId?: string
  /** Aborting while pending (turn cancelled) resolves `cancelled`. */
  signal?: AbortSignal
}

export interface QuestionsAnswerer {
  name: string
  /** Whether this answerer handles the batch (e.g. only its own sessions). Default: all. */
  accepts?(request: QuestionsRequest): boolean
  /** Resolve with answers keyed by question id; throw (or reject) when the channel cannot answer. */
  answer(
    request: QuestionsRequest,
    context: { signal: AbortSignal },
  ): Promise<Record<string, QuestionAnswer>> | Record<string, QuestionAnswer>
}

declare module 'cordis' {
  interface Context {
    userQuestions: import('./service.ts').UserQuestionsService
  }
  interface Events {
    'questions/asked'(request: QuestionsRequest): void
    /** Exactly one per `questions/asked`. */
    'questions/resolved'(request: QuestionsRequest, outcome: QuestionsOutcome): void
  }
}
