// The `chunks` frame of a session stream: a run of streamed deltas encoded once and expanded back
// to exactly the same log events.
import { describe, expect, it } from 'vitest'
import { CHUNK_EVENT_TYPE, chunkRunKind, encodeChunkRun, expandChunkRun, type WireEvent } from '../src/index.ts'

const delta = (seq: number, text: string, time: number, kind = 'reasoning-delta'): WireEvent => ({
  seq,
  type: CHUNK_EVENT_TYPE,
  time,
  data: { chunk: { kind, text } },
})

describe('chunk runs', () => {
  it('round-trips a run exactly: texts (empty, multi-byte, lone surrogates, quotes) and times that go up, stay and go back', () => {
    const texts = ['x ', '', 'ünï ✓ 🙂', '\ud800', '"\\\n', 'a'.repeat(3000)]
    const times = [
      1_733_370_000_000, 1_733_370_000_000, 1_733_370_000_007, 1_733_370_000_003, 1_733_370_000_003, 1_733_370_100_000,
    ]
    const events = texts.map((text, i) => delta(41 + i, text, times[i]))
    const run = encodeChunkRun(events)
    expect(run).toEqual({ seq: 41, kind: 'reasoning-delta', text: texts, time: [times[0], 0, 7, -4, 0, 99_997] })
    expect(expandChunkRun(JSON.parse(JSON.stringify(run)))).toEqual(events)
    const text = events.map((e) => ({
      ...e,
      data: { chunk: { kind: 'text-delta', text: (e.data as any).chunk.text } },
    }))
    expect(expandChunkRun(JSON.parse(JSON.stringify(encodeChunkRun(text))))).toEqual(text)
  })

  it('takes only plain text and reasoning deltas (anything more would not come back equal)', () => {
    expect(chunkRunKind(delta(0, 'a', 1))).toBe('reasoning-delta')
    expect(chunkRunKind(delta(0, 'a', 1, 'text-delta'))).toBe('text-delta')
    const refused = [
      delta(0, 'a', 1, 'tool-call-delta'),
      { ...delta(0, 'a', 1), extra: 1 },
      { ...delta(0, 'a', 1), time: 1.5 },
      { ...delta(0, 'a', 1), type: 'user/message' },
      {
        seq: 0,
        type: CHUNK_EVENT_TYPE,
        time: 1,
        data: { chunk: { kind: 'reasoning-delta', text: 'a', signature: 's' } },
      },
      { seq: 0, type: CHUNK_EVENT_TYPE, time: 1, data: { chunk: { kind: 'text-delta', text: 3 } } },
      { seq: 0, type: CHUNK_EVENT_TYPE, time: 1, data: { chunk: { kind: 'text-delta', text: 'a' }, more: true } },
      { seq: 0, type: CHUNK_EVENT_TYPE, time: 1, data: [] },
      null,
      'assistant/chunk',
    ]
    for (const event of refused) expect(chunkRunKind(event)).toBeUndefined()
    expect(() => encodeChunkRun([delta(0, 'a', 1), delta(2, 'b', 1)])).toThrow(/event 2 does not continue the run/)
    expect(() => encodeChunkRun([delta(0, 'a', 1), delta(1, 'b', 1, 'text-delta')])).toThrow(
      /event 1 does not continue the run/,
    )
    expect(() => encodeChunkRun([refused[1] as WireEvent])).toThrow(/not a plain text or reasoning delta/)
    expect(() => encodeChunkRun([])).toThrow(/no events/)
  })

  it('expandChunkRun refuses a malformed run', () => {
    const good = { seq: 3, kind: 'text-delta', text: ['a', 'b'], time: [5, 0] }
    expect(expandChunkRun(good)).toHaveLength(2)
    for (const bad of [
      { ...good, seq: -1 },
      { ...good, seq: 1.5 },
      { ...good, kind: 'usage' },
      { ...good, text: ['a'] },
      { ...good, text: [], time: [] },
      { ...good, text: ['a', 2] },
      { ...good, time: [5, 0.5] },
      { ...good, time: '5' },
      [good],
      null,
      'run',
    ])
      expect(expandChunkRun(bad)).toBeUndefined()
  })
})
