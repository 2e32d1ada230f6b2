// The approval/question bridge: each way a wait ends, reported once to the face.
import { describe, expect, it } from 'vitest'
import { type AnswerOutcome, PendingAnswers } from '../src/index.ts'

function waitOne(table: PendingAnswers<string>, id = 'r1') {
  const controller = new AbortController()
  const outcomes: AnswerOutcome<string>[] = []
  const promise = table.wait(id, {
    sessionId: 's1',
    signal: controller.signal,
    abortMessage: 'settled elsewhere',
    settled: (outcome) => outcomes.push(outcome),
  })
  return { controller, outcomes, promise }
}

describe('PendingAnswers', () => {
  it('is waiting as soon as wait() returns, and an answer resolves it once', async () => {
    const table = new PendingAnswers<string>()
    const { outcomes, promise } = waitOne(table)
    expect(table.has('r1')).toBe(true)
    expect(table.size).toBe(1)
    expect(table.answer('r1', 'allow')).toBe(true)
    await expect(promise).resolves.toBe('allow')
    expect(outcomes).toEqual([{ kind: 'answered', value: 'allow' }])
    // Answered: a second answer finds nothing.
    expect(table.answer('r1', 'deny')).toBe(false)
    expect(table.size).toBe(0)
  })

  it('an aborted asker settles it cancelled, with the abort message', async () => {
    const table = new PendingAnswers<string>()
    const { controller, outcomes, promise } = waitOne(table)
    controller.abort()
    await expect(promise).rejects.toThrow('settled elsewhere')
    expect(outcomes).toEqual([{ kind: 'cancelled' }])
    expect(table.answer('r1', 'allow')).toBe(false)
  })

  it('failAll fails every wait with the error and empties the table', async () => {
    const table = new PendingAnswers<string>()
    const a = waitOne(table, 'a')
    const b = waitOne(table, 'b')
    const error = new Error('the face is stopping')
    table.failAll(error)
    await expect(a.promise).rejects.toBe(error)
    await expect(b.promise).rejects.toBe(error)
    expect(a.outcomes).toEqual([{ kind: 'failed', error }])
    expect(table.size).toBe(0)
    // The signal listener is gone: a later abort reports nothing more.
    a.controller.abort()
    expect(a.outcomes).toHaveLength(1)
  })
})
