// The approval/question bridge: a request the agent side asks (an approval, a set of questions)
// waits here until the face's client answers it, the asker gives up (its signal aborts: another
// answerer settled it, the turn was cancelled), or the face stops and fails every wait closed.

/** How a wait ended, for the face to report (`approval/resolved`, a status change, ...). */
export type AnswerOutcome<T> = { kind: 'answered'; value: T } | { kind: 'cancelled' } | { kind: 'failed'; error: Error }

export interface AnswerWait<T> {
  /** The session the request belongs to. */
  sessionId: string
  /** The asker's signal: aborted when the request is settled elsewhere. */
  signal: AbortSignal
  /** The rejection the asker sees when its signal aborts. */
  abortMessage: string
  /** Called once, first thing when the wait ends, however it ends. */
  settled?(outcome: AnswerOutcome<T>): void
}

interface Waiting<T> {
  sessionId: string
  resolve(value: T): void
  reject(error: Error): void
}

/** Requests waiting for a client's answer, by request id (one table a kind of request). */
export class PendingAnswers<T> {
  private readonly waiting = new Map<string, Waiting<T>>()

  /**
   * Waits for `answer(requestId, ...)`. The entry is in the table when this returns (the promise
   * body runs at once), so the face announces the request to its client after the call.
   */
  wait(requestId: string, wait: AnswerWait<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const finish = (outcome: AnswerOutcome<T>) => {
        this.waiting.delete(requestId)
        wait.signal.removeEventListener('abort', onAbort)
        wait.settled?.(outcome)
      }
      const onAbort = () => {
        finish({ kind: 'cancelled' })
        reject(new Error(wait.abortMessage))
      }
      wait.signal.addEventListener('abort', onAbort, { once: true })
      this.waiting.set(requestId, {
        sessionId: wait.sessionId,
        resolve: (value) => {
          finish({ kind: 'answered', value })
          resolve(value)
        },
        reject: (error) => {
          finish({ kind: 'failed', error })
          reject(error)
        },
      })
    })
  }

  /** Answers a waiting request; false when there is none (answered, cancelled, or never asked). */
  answer(requestId: string, value: T): boolean {
    const waiting = this.waiting.get(requestId)
    if (!waiting) return false
    waiting.resolve(value)
    return true
  }

  has(requestId: string): boolean {
    return this.waiting.has(requestId)
  }

  get size(): number {
    return this.waiting.size
  }

  /** Fails every waiting request with `error` (the face is stopping, its client left). */
  failAll(error: Error): void {
    for (const waiting of [...this.waiting.values()]) waiting.reject(error)
    this.waiting.clear()
  }
}
