// `streamChunks: 'release'`: a folded step's assistant/chunk events leave the in-memory log as
// placeholders, while listeners (persistence among them) receive every chunk whole.
import { runInNewContext } from 'node:vm'
import v8 from 'node:v8'
import { describe, expect, it } from 'vitest'
import type { StreamChunk } from '@dsh/llm'
import {
  type AnySessionEvent,
  RELEASED_CHUNK,
  Session,
  deriveMessagesFromEvents,
  isReleasedChunk,
} from '../src/index.ts'

const ticking = () => {
  let now = 1_000
  return () => now++
}
const text = (t: string) => [{ type: 'text' as const, text: t }]

/** One streamed step: step/start, the deltas, the folded message, step/end. */
function step(s: Session, turn: number, step: number, words: string[]): void {
  s.append('step/start', { turn, step })
  for (const word of words) s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: word } })
  s.append('assistant/chunk', { chunk: { kind: 'finish', reason: 'stop' } })
  s.append('assistant/message', { message: { role: 'assistant', content: text(words.join('')) } })
  s.append('step/end', { turn, step, finish: 'stop' })
}

const chunks = (s: Session) => s.events.filter((e) => e.type === 'assistant/chunk')

describe("Session streamChunks: 'release'", () => {
  it('keeps type, seq and time of a folded step, releases its payloads, and listeners saw them whole', () => {
    const s = new Session({ cwd: '/w', clock: ticking(), streamChunks: 'release' })
    const heard: AnySessionEvent[] = []
    s.subscribe((e) => heard.push(e))
    s.append('turn/start', { turn: 0 })
    step(s, 0, 0, ['Hel', 'lo'])
    const logged = chunks(s)
    expect(logged.map((e) => [e.seq, e.time])).toEqual([
      [2, 1002],
      [3, 1003],
      [4, 1004],
    ])
    expect(logged.every((e) => e.data === RELEASED_CHUNK && isReleasedChunk(e))).toBe(true)
    expect(s.events.every((e, i) => e.seq === i && s.at(i) === e)).toBe(true)
    expect(s.last('assistant/chunk')).toBe(logged[2])
    // Every listener got the chunks with their payloads, in order.
    expect(heard.filter((e) => e.type === 'assistant/chunk').map((e) => e.data.chunk)).toEqual([
      { kind: 'text-delta', text: 'Hel' },
      { kind: 'text-delta', text: 'lo' },
      { kind: 'finish', reason: 'stop' },
    ])
    // The model-visible history is untouched.
    expect(s.deriveMessages()).toEqual([{ role: 'assistant', content: text('Hello') }])
    expect(deriveMessagesFromEvents(s.events)).toEqual(s.deriveMessages())
  })

  it("never releases the open step's chunks", () => {
    const s = new Session({ cwd: '/w', clock: ticking(), streamChunks: 'release' })
    s.append('turn/start', { turn: 0 })
    step(s, 0, 0, ['one'])
    s.append('step/start', { turn: 0, step: 1 })
    s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: 'stre' } })
    s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: 'aming' } })
    const open = chunks(s).slice(-2)
    expect(open.map((e) => e.data.chunk)).toEqual([
      { kind: 'text-delta', text: 'stre' },
      { kind: 'text-delta', text: 'aming' },
    ])
    // A cancelled step closes without a message: step/end folds it.
    s.append('step/end', { turn: 0, step: 1, finish: 'error' })
    expect(chunks(s).every(isReleasedChunk)).toBe(true)
  })

  it('keeps every chunk whole by default', () => {
    const s = new Session({ cwd: '/w', clock: ticking() })
    s.append('turn/start', { turn: 0 })
    step(s, 0, 0, ['Hel', 'lo'])
    expect(chunks(s).map((e) => (e.data.chunk as StreamChunk).kind)).toEqual(['text-delta', 'text-delta', 'finish'])
    expect(chunks(s).some(isReleasedChunk)).toBe(false)
  })

  it('releases on restore too, and a stored placeholder restores as the shared one', () => {
    const source = new Session({ cwd: '/w', clock: ticking() })
    source.append('turn/start', { turn: 0 })
    step(source, 0, 0, ['a', 'b'])
    source.append('turn/end', { turn: 0, reason: 'completed' })
    // As persistence hands them back: plain JSON, not minted events.
    const stored = JSON.parse(JSON.stringify(source.events))
    const restored = new Session({ cwd: '/w', events: stored, streamChunks: 'release' })
    expect(chunks(restored).every(isReleasedChunk)).toBe(true)
    expect(restored.deriveMessages()).toEqual(source.deriveMessages())
    // A fork of a releasing session carries placeholders; written out and read back they stay one.
    const again = new Session({ cwd: '/w', events: JSON.parse(JSON.stringify(restored.events)) })
    expect(chunks(again).every((e) => e.data === RELEASED_CHUNK)).toBe(true)
    expect(again.events.map((e) => [e.seq, e.time])).toEqual(source.events.map((e) => [e.seq, e.time]))
    // Handed over as live objects (a fork's copy), placeholders are taken as they are.
    const copy = new Session({ cwd: '/w', events: restored.slice(0, 3) })
    expect(copy.at(2)).toEqual(restored.at(2))
    expect(copy.at(2)!.data).toBe(RELEASED_CHUNK)
  })

  it('refuses an unknown streamChunks value', () => {
    expect(() => new Session({ cwd: '/w', streamChunks: 'drop' as never })).toThrow(
      /streamChunks must be 'keep' or 'release', not "drop"/,
    )
  })

  it('no longer retains a folded delta (the payload is garbage-collected)', async () => {
    v8.setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const s = new Session({ cwd: '/w', clock: ticking(), streamChunks: 'release' })
    s.append('turn/start', { turn: 0 })
    s.append('step/start', { turn: 0, step: 0 })
    const ref = ((): WeakRef<object> => {
      const event = s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: 'x'.repeat(1000) } })
      return new WeakRef(event.data)
    })()
    // Positive control: while the step is open the payload is held by the log.
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    expect(ref.deref()).toBeDefined()
    s.append('assistant/message', { message: { role: 'assistant', content: text('x'.repeat(1000)) } })
    s.append('step/end', { turn: 0, step: 0, finish: 'stop' })
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    expect(ref.deref()).toBeUndefined()
  })
})
