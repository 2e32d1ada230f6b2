// The folds as functions of a state record, without the model class: the recorded log folded
// straight into a FoldState gives the nodes the model shows, and a queued prompt is claimed by
// the user message that carries its text.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { SessionStreamEvent, WireEvent } from '@dsh/web-protocol'
import { createFoldState, foldEvent, settleOpen } from '../src/fold.ts'
import {
  ConversationModel,
  foldConversation,
  imageView,
  MAX_IMAGE_DATA_CHARS,
  type ToolNode,
  type UserNode,
} from '../src/index.ts'

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

describe('image blocks', () => {
  // A 1x1 PNG, as an ACP client's prompt (`{type: 'image', data, mimeType}`) lands in the log.
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
  const at = (seq: number, type: string, data: unknown) => ({ seq, time: seq, type, data }) as unknown as WireEvent

  it('keeps a user message image as a data URL built once, shared by later snapshots', () => {
    const model = new ConversationModel()
    model.applyEvents([
      at(0, 'turn/start', { turn: 0 }),
      at(1, 'user/message', {
        source: { kind: 'human' },
        content: [
          { type: 'image', mediaType: 'image/png', data: PNG },
          { type: 'text', text: 'What is this?' },
        ],
      }),
    ])
    const first = model.snapshot().nodes[0] as UserNode
    expect(first).toMatchObject({ kind: 'user', text: 'What is this?' })
    expect(first.images).toEqual([{ mediaType: 'image/png', src: `data:image/png;base64,${PNG}`, bytes: 70 }])
    model.applyEvent(at(2, 'session/title', { title: 'a picture' }))
    expect(model.snapshot().nodes[0]).toBe(first)
  })

  it('keeps a tool result image, and only counts blocks it cannot draw safely', () => {
    const state = createFoldState()
    foldEvent(state, at(0, 'turn/start', { turn: 0 }))
    foldEvent(state, at(1, 'tool/call', { callId: 'c1', name: 'read_image', arguments: '{"file_path":"a.png"}' }))
    foldEvent(
      state,
      at(2, 'tool/result', {
        message: {
          callId: 'c1',
          name: 'read_image',
          content: [
            { type: 'text', text: 'a.png: PNG image' },
            { type: 'image', mediaType: 'image/png', data: PNG },
            { type: 'image', mediaType: 'image/svg+xml', data: 'PHN2Zy8+' },
            { type: 'image', mediaType: 'image/png', data: 'not base64!' },
            { type: 'image', mediaType: 'text/html', data: 'PGI+' },
            { type: 'image' },
            null,
          ],
        },
      }),
    )
    const tool = state.nodes[0] as ToolNode
    expect(tool.result?.text).toBe('a.png: PNG image')
    expect(tool.result?.images.map((i) => [i.mediaType, i.src?.slice(0, 22)])).toEqual([
      ['image/png', 'data:image/png;base64,'],
      ['image/svg+xml', undefined],
      ['image/png', undefined],
      ['text/html', undefined],
      ['', undefined],
    ])
  })

  it('counts an image over the size bound without building its URL', () => {
    const big = 'A'.repeat(MAX_IMAGE_DATA_CHARS + 4)
    expect(imageView({ mediaType: 'image/png', data: big })).toEqual({
      mediaType: 'image/png',
      bytes: ((MAX_IMAGE_DATA_CHARS + 4) * 3) / 4,
    })
  })
})
