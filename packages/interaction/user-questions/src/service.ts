// The user-questions service (`ctx.userQuestions`): routes a batch of questions to the newest
// answerer that accepts it and resolves `answered`, `cancelled` or `unavailable`, never rejecting
// for a channel failure.
import { type Context, Service } from 'cordis'
import { AnswererList } from '@dsh/answerers'
import Schema from 'schemastery'
import { brand } from '@dsh/brand'
import type {
  AskOptions,
  Question,
  QuestionsAnswerer,
  QuestionsId,
  QuestionsOutcome,
  QuestionsRequest,
} from './types.ts'
import { checkAnswers, checkQuestions } from './validate.ts'

export interface UserQuestionsConfig {
  /** Milliseconds an answerer may take before the batch resolves `unavailable`; 0 waits forever. */
  timeoutMs: number
}

export const UserQuestionsConfig: Schema<UserQuestionsConfig> = Schema.object({
  timeoutMs: Schema.natural()
    .default(0)
    .description('Milliseconds an answerer may take before the batch resolves `unavailable`; 0 waits forever.'),
})

let counter = 0

const reasonOf = (value: unknown): string =>
  value instanceof Error ? value.message : typeof value === 'string' ? value : String(value)

function copyQuestion(q: Question): Question {
  return {
    id: q.id,
    question: q.question,
    ...(q.header !== undefined ? { header: q.header } : {}),
    ...(q.options !== undefined
      ? {
          options: q.options.map((o) => ({
            label: o.label,
            ...(o.description !== undefined ? { description: o.description } : {}),
          })),
        }
      : {}),
    ...(q.multiSelect !== undefined ? { multiSelect: q.multiSelect } : {}),
  }
}

export class UserQuestionsService extends Service {
  static Config = UserQuestionsConfig
  private readonly answererList = new AnswererList<QuestionsRequest, QuestionsAnswerer>('question')
  private pendingRequests = new Map<QuestionsId, QuestionsRequest>()

  constructor(
    ctx: Context,
    public config: UserQuestionsConfig = UserQuestionsConfig({} as UserQuestionsConfig),
  ) {
    super(ctx, 'userQuestions')
  }

  /** The newest answerer that accepts a batch answers it; the disposer (or plugin unload) removes it. */
  registerAnswerer(answerer: QuestionsAnswerer): () => void {
    return this.answererList.register(this.ctx, answerer, 'userQuestions.registerAnswerer')
  }

  answerers(): string[] {
    return this.answererList.names()
  }

  /** Would a batch for this session find an answerer right now? (A tool may mention it in its description.) */
  available(sessionId?: string): boolean {
    const probe: QuestionsRequest = {
      id: brand<'QuestionsId'>('probe') as QuestionsId,
      ...(sessionId ? { sessionId } : {}),
      questions: [],
      time: Date.now(),
    }
    return this.answererList.available(probe)
  }

  pending(filter: { sessionId?: string } = {}): QuestionsRequest[] {
    return [...this.pendingRequests.values()].filter(
      (r) => filter.sessionId === undefined || r.sessionId === filter.sessionId,
    )
  }

  /**
   * Asks the human one batch of questions. Throws `TypeError` only for malformed questions (use
   * `checkQuestions()` first at a model boundary); every channel failure resolves `unavailable`.
   */
  async ask(questions: Question[], options: AskOptions = {}): Promise<QuestionsOutcome> {
    const problem = checkQuestions(questions)
    if (problem) throw new TypeError(`userQuestions.ask: ${problem}`)
    const request: QuestionsRequest = Object.freeze({
      id: brand<'QuestionsId'>(`questions-${Date.now().toString(36)}-${(++counter).toString(36)}`) as QuestionsId,
      ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
      ...(options.agentId !== undefined ? { agentId: options.agentId } : {}),
      ...(typeof options.callId === 'string' && options.callId !== '' ? { callId: options.callId } : {}),
      questions: Object.freeze(questions.map(copyQuestion)),
      time: Date.now(),
    })
    this.pendingRequests.set(request.id, request)
    this.emitSafe('questions/asked', request)
    let outcome: QuestionsOutcome
    try {
      outcome = await this.decide(request, options.signal)
    } finally {
      this.pendingRequests.delete(request.id)
    }
    this.emitSafe('questions/resolved', request, outcome)
    return outcome
  }

  private async decide(request: QuestionsRequest, signal: AbortSignal | undefined): Promise<QuestionsOutcome> {
    if (signal?.aborted)
      return { status: 'cancelled', reason: `cancelled before it was asked (${reasonOf(signal.reason)})` }
    const picked = this.answererList.pick(request, 'the questions')
    if (picked && 'error' in picked) return { status: 'unavailable', reason: picked.error }
    if (!picked) return { status: 'unavailable', reason: 'no human is connected who can answer questions' }
    const { answerer, gone } = picked.entry
    const settle = new AbortController()
    const cleanups: Array<() => void> = []
    try {
      return await new Promise<QuestionsOutcome>((resolve) => {
        if (signal) {
          const onAbort = () =>
            resolve({ status: 'cancelled', reason: `cancelled while waiting for answers (${reasonOf(signal.reason)})` })
          signal.addEventListener('abort', onAbort, { once: true })
          cleanups.push(() => signal.removeEventListener('abort', onAbort))
        }
        const onGone = () =>
          resolve({ status: 'unavailable', reason: `question answerer "${answerer.name}" went away before answering` })
        if (gone.signal.aborted) return onGone()
        gone.signal.addEventListener('abort', onGone, { once: true })
        cleanups.push(() => gone.signal.removeEventListener('abort', onGone))
        if (this.config.timeoutMs > 0) {
          const timer = setTimeout(
            () => resolve({ status: 'unavailable', reason: `no answer within ${this.config.timeoutMs} ms` }),
            this.config.timeoutMs,
          )
          cleanups.push(() => clearTimeout(timer))
        }
        Promise.resolve()
          .then(() => answerer.answer(request, { signal: settle.signal }))
          .then(
            (raw) => {
              const checked = checkAnswers(request.questions, raw)
              resolve(
                'problem' in checked
                  ? {
                      status: 'unavailable',
                      reason: `question answerer "${answerer.name}" returned invalid answers: ${checked.problem}`,
                    }
                  : { status: 'answered', answers: checked.answers, answeredBy: answerer.name },
              )
            },
            (error) =>
              resolve({
                status: 'unavailable',
                reason: `question answerer "${answerer.name}" failed: ${reasonOf(error)}`,
              }),
          )
      })
    } finally {
      for (const cleanup of cleanups) cleanup()
      settle.abort(new Error('questions settled'))
    }
  }

  private emitSafe(
    ...args: ['questions/asked', QuestionsRequest] | ['questions/resolved', QuestionsRequest, QuestionsOutcome]
  ): void {
    try {
      ;(this.ctx.emit as (...a: unknown[]) => void)(...args)
    } catch (error) {
      this.ctx.logger('user-questions').warn('an %s listener threw: %s', args[0], reasonOf(error))
    }
  }
}
