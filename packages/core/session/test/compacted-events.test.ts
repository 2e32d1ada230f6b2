// `compactedEvents: 'release'` (the default): events behind a `surface/replace` that produce no
// live surface node leave the in-memory log as placeholders whose `data` decodes from a
// compressed block, and every reader (events, slice, at, fork, JSON, structuredClone) still sees
// the whole log.
import { runInNewContext } from 'node:vm'
import v8 from 'node:v8'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import {
  type AnySessionEvent,
  RELEASED_CHUNK,
  RELEASE_BLOCK_EVENTS,
  Session,
  SessionStore,
  deriveMessagesFromEvents,
  isReleasedEvent,
} from '../src/index.ts'

const ticking = () => {
  let now = 1_000
  return () => now++
}
const text = (t: string) => [{ type: 'text' as const, text: t }]

/** One agent step: a read call and its ~1 KB result, streamed. */
function step(s: Session, turn: number, n: number): void {
  s.append('step/start', { turn, step: n })
  s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: `reading m${n}` } })
  const callId = `call_${turn}_${n}`
  s.append('assistant/message', {
    message: {
      role: 'assistant',
      content: [
        { type: 'text', text: `reading m${n}` },
        { type: 'tool-call', callId, name: 'read', arguments: JSON.stringify({ path: `m${n}.ts` }) },
      ],
    },
    usage: { input: 100 + n, output: 7, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
  })
  s.append('tool/call', { callId, name: 'read', arguments: JSON.stringify({ path: `m${n}.ts` }) })
  s.append('tool/result', {
    message: { role: 'tool', callId, name: 'read', content: text(`export const v${n} = ${n}\n`.repeat(40)) },
    meta: { bytes: 1000 + n, ok: true, nested: { list: [n, -0, null, 'ü'] } },
  })
  s.append('step/end', { turn, step: n, finish: 'tool-calls' })
}

/** A turn of `steps` steps; returns the seq just after its `turn/end`. */
function turn(s: Session, t: number, steps: number): number {
  s.append('turn/start', { turn: t })
  s.append('user/message', { content: text(`turn ${t}`), source: { kind: 'human' } })
  for (let n = 0; n < steps; n++) step(s, t, n)
  s.append('turn/end', { turn: t, reason: 'completed' })
  return s.length
}

/** Compaction-shaped: replace [1, toSeq) by one summary message. */
const compact = (s: Session, toSeq: number) =>
  s.surface.replaceRange(1, toSeq, [{ role: 'user', content: text(`summary of 1..${toSeq}`) }], { by: 'test' })

/** The same log built twice: once releasing (default), once keeping. */
function pair(options: { streamChunks?: 'keep' | 'release' } = {}) {
  const build = (compactedEvents?: 'keep' | 'release') => {
    const s = new Session({ cwd: '/w', id: 's', clock: ticking(), compactedEvents, ...options })
    const heard: AnySessionEvent[] = []
    s.subscribe((e) => heard.push(e))
    turn(s, 0, 300)
    const boundary = turn(s, 1, 300)
    compact(s, boundary)
    turn(s, 2, 5)
    return { s, heard, boundary }
  }
  return { released: build(), kept: build('keep') }
}

const json = (events: readonly AnySessionEvent[]) => JSON.parse(JSON.stringify(events))

describe("Session compactedEvents: 'release'", () => {
  const { released, kept } = pair()

  it('bounds the whole events in memory after a compaction and a few steps', () => {
    const whole = released.s.events.filter((e) => !isReleasedEvent(e)).length
    // Kept whole: the summary, the latest of each type, the 5-step turn after it and less than
    // one block's remainder.
    expect(whole).toBeLessThan(RELEASE_BLOCK_EVENTS + 60)
    expect(kept.s.events.filter((e) => !isReleasedEvent(e))).toHaveLength(kept.s.length)
    expect(released.s.released.events).toBe(released.s.length - whole)
    // The compressed blocks are a fraction of the JSON they hold (`bytes` counts the memory each
    // block's bytes keep alive, so a view of a larger zlib buffer would show here).
    expect(released.s.released.bytes).toBeLessThan(JSON.stringify(kept.s.slice(0, released.boundary)).length / 5)
  })

  it('re-reads every released event equal to the original (events, at, slice, JSON, structuredClone)', () => {
    const { s, heard } = released
    expect(s.length).toBe(kept.s.length)
    expect(json(s.events)).toEqual(json(kept.s.events))
    expect(json(s.events)).toEqual(json(heard))
    expect(s.events).toEqual(heard)
    for (const seq of [0, 1, 2, 5, 777, RELEASE_BLOCK_EVENTS, RELEASE_BLOCK_EVENTS + 1, released.boundary - 300]) {
      const event = s.at(seq)!
      expect(isReleasedEvent(event), `seq ${seq} ${event.type}`).toBe(true)
      expect(Object.isFrozen(event) && Object.isFrozen(event.data)).toBe(true)
      expect(Object.keys(event)).toEqual(['type', 'seq', 'time', 'data'])
      expect(event).toEqual(heard[seq])
      expect({ ...event }).toEqual(heard[seq])
      expect(structuredClone(event)).toEqual(heard[seq])
    }
    expect(s.slice(100, 400)).toEqual(heard.slice(100, 400))
    // A scan reads types without decoding anything and finds the same events.
    expect(s.events.filter((e) => e.type === 'tool/call').map((e) => e.data.callId)).toEqual(
      heard.filter((e) => e.type === 'tool/call').map((e) => (e.data as { callId: string }).callId),
    )
  })

  it('keeps whole what must stay whole: live surface nodes, the latest of each type, the replacement', () => {
    const { s } = released
    // turn 1's turn/end was the latest of its type when the replacement was logged.
    expect(isReleasedEvent(s.at(released.boundary - 1)!)).toBe(false)
    // Only whole blocks are released.
    expect(s.released.events % RELEASE_BLOCK_EVENTS).toBe(0)
    for (const node of s.surface.nodes) expect(isReleasedEvent(s.at(node.seq)!)).toBe(false)
    for (const type of ['turn/start', 'tool/result', 'request/header', 'surface/replace'] as const) {
      const last = s.last(type)
      if (last) expect(s.at(last.seq)).toBe(last)
    }
    // The model-visible history is the same as without release.
    expect(s.deriveMessages()).toEqual(kept.s.deriveMessages())
    expect(deriveMessagesFromEvents(s.events)).toEqual(s.deriveMessages())
  })

  it('a fork from before the compaction point sees the whole prefix and its history', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionStore)
    const store = ctx.sessions
    const s = store.create({ cwd: '/w', clock: ticking() })
    turn(s, 0, 300)
    const first = turn(s, 1, 300)
    compact(s, first)
    turn(s, 2, 3)
    expect(s.released.events).toBeGreaterThan(2000)
    const reference = new Session({ cwd: '/w', clock: ticking(), compactedEvents: 'keep' })
    turn(reference, 0, 300)
    turn(reference, 1, 300)
    // Before the compaction point: turn 0 ends at the first turn/end.
    const boundary = s.events.findIndex((e) => e.type === 'turn/end') + 1
    const fork = store.fork(s, boundary)
    expect(json(fork.slice(0, boundary))).toEqual(json(reference.slice(0, boundary)))
    expect(fork.deriveMessages()).toEqual(deriveMessagesFromEvents(reference.slice(0, boundary)))
    expect(fork.last('seed/end')?.data).toEqual({ fromSession: s.id, boundary })
    // The fork continues like any session; compacting it releases its own events.
    turn(fork, 1, 2)
    expect(fork.deriveMessages().at(-1)?.role).toBe('tool')
    // A whole-log fork after the compaction reproduces the compacted surface.
    const whole = store.fork(s)
    expect(whole.deriveMessages()).toEqual(s.deriveMessages())
  })

  it('a restore (resume) from the JSON of a released log equals the original and releases again', () => {
    const { s } = released
    const events = JSON.parse(JSON.stringify(s.events)) as AnySessionEvent[]
    const resumed = new Session({ cwd: '/w', id: 's', events })
    expect(json(resumed.events)).toEqual(json(kept.s.events))
    expect(resumed.deriveMessages()).toEqual(kept.s.deriveMessages())
    expect(resumed.released.events).toBe(s.released.events)
  })

  it("releases with streamChunks 'release' too, keeping its chunk placeholders as they are", () => {
    const both = pair({ streamChunks: 'release' })
    const chunk = both.released.s.events.find((e) => e.type === 'assistant/chunk')!
    expect(chunk.data).toBe(RELEASED_CHUNK)
    expect(json(both.released.s.events)).toEqual(json(both.kept.s.events))
    expect(both.released.s.released.events).toBeGreaterThan(2000)
  })

  it('no longer retains a released payload (garbage-collected), and re-reads it on demand', async () => {
    v8.setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const s = new Session({ cwd: '/w', clock: ticking() })
    turn(s, 0, 30)
    const ref = new WeakRef(s.at(5)!.data)
    const original = JSON.stringify(s.at(5))
    // Positive control: before any replacement the payload is held by the log.
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    expect(ref.deref()).toBeDefined()
    compact(s, s.length)
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    expect(ref.deref()).toBeUndefined()
    expect(JSON.stringify(s.at(5))).toBe(original)
  })

  it('pruner-sized replacements release in whole blocks only, and the log still reads whole', () => {
    const build = (compactedEvents?: 'keep' | 'release') => {
      const s = new Session({ cwd: '/w', clock: ticking(), compactedEvents })
      s.append('turn/start', { turn: 0 })
      for (let n = 0; n < 120; n++) {
        step(s, 0, n)
        // Prune this step's tool result: a one-node replacement, as the tool-result pruner makes.
        const result = s.last('tool/result')!
        s.surface.replaceRange(result.seq, result.seq + 1, [
          { role: 'tool', callId: `call_0_${n}`, name: 'read', content: text('[pruned]') },
        ])
      }
      return s
    }
    const s = build()
    const reference = build('keep')
    expect(s.released.events).toBeGreaterThan(4 * RELEASE_BLOCK_EVENTS)
    expect(s.released.events % RELEASE_BLOCK_EVENTS).toBe(0)
    expect(json(s.events)).toEqual(json(reference.events))
    expect(s.deriveMessages()).toEqual(reference.deriveMessages())
  })

  it('rejects a bad compactedEvents value', () => {
    expect(() => new Session({ cwd: '/w', compactedEvents: 'drop' as never })).toThrow(
      /compactedEvents must be 'keep' or 'release', not "drop"/,
    )
  })
})
