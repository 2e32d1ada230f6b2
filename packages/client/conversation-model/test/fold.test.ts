// The folds as functions of a state record, without the model class: the recorded log folded
// straight into a FoldState gives the nodes the model shows, and a queued prompt is claimed by
// the user message that carries its text.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { SessionStreamEvent, WireEvent } from '@dsh/web-protocol'
import { createFoldState, foldEvent, settleOpen } from '../src/fold.ts'
import { foldConversation } from '../src/index.ts'

const frames: SessionStreamEvent[] = JSON.parse(
  readFileSync(new URL('./fixtures/tools-turn.json', import.meta.url), 'utf8'),
)
const log: WireEvent[] = frames.flatMap((f) => (f.event === 'message' ? [f.data] : []))

describe('foldEvent', () => {
  it('folds the recorded log into the same nodes as the model', () => {
    const state = createFoldState()
    for (const event of log) foldEvent(state, event)
    settleOpen(state)
    const model = foldConversation(log)
    expect(state.nodes).toEqual(model.nodes)
    expect(state.nodes.length).toBeGreaterThan(2)
    expect(state.turnRunning).toBe(model.turnRunning)
    expect(state.model).toEqual(model.model)
    expect(state.usage).toEqual(model.usage)
  })

  it('claims the queued prompt whose text a human user message carries', () => {
    const state = createFoldState()
    state.queued = [
      { id: 'q0', text: 'first', mode: 'queue' },
      { id: 'q1', text: 'second', mode: 'queue' },
    ]
    foldEvent(state, { seq: 0, time: 1, type: 'turn/start', data: { turn: 0 } } as unknown as WireEvent)
    foldEvent(state, {
      seq: 1,
      time: 2,
      type: 'user/message',
      data: { content: [{ type: 'text', text: 'second' }], source: { kind: 'human' } },
    } as unknown as WireEvent)
    expect(state.queued.map((q) => q.id)).toEqual(['q0'])
    expect(state.nodes).toMatchObject([{ kind: 'user', text: 'second', turn: 0, seq: 1 }])
    expect(state.turnRunning).toBe(true)
  })
})
