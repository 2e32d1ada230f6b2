import { describe, expect, it } from 'vitest'
import type { AssistantMessage, Message, ToolMessage } from '@dsh/llm'
import { Session, SessionAppendError, deriveMessagesFromEvents, type SessionEvent } from '../src/index.ts'

const ticking = () => {
  let now = 1_000
  return () => now++
}
const newSession = () => new Session({ cwd: '/work', clock: ticking() })
const text = (t: string) => [{ type: 'text' as const, text: t }]
const human = { kind: 'human' as const }
const assistant = (t: string): AssistantMessage => ({ role: 'assistant', content: text(t) })
const toolResult = (callId: string, t: string): ToolMessage => ({
  role: 'tool',
  callId,
  name: 'echo',
  content: text(t),
})

describe('Session.append', () => {
  it('assigns contiguous seq from 0 and times from the injected clock', () => {
    const s = newSession()
    const a = s.append('turn/start', { turn: 0 })
    const b = s.append('user/message', { content: text('hi'), source: human })
    const c = s.append('turn/end', { turn: 0, reason: 'completed' })
    expect([a.seq, b.seq, c.seq]).toEqual([0, 1, 2])
    expect([a.time, b.time, c.time]).toEqual([1000, 1001, 1002])
    expect(s.length).toBe(3)
    expect(s.events.map((e) => e.seq)).toEqual([0, 1, 2])
    expect(s.at(1)).toBe(b)
    expect(s.at(3)).toBeUndefined()
    expect(s.at(-1)).toBeUndefined()
    expect(s.slice(1).map((e) => e.type)).toEqual(['user/message', 'turn/end'])
    expect(s.slice(0, 1)).toEqual([a])
    expect(s.last()).toBe(c)
    expect(s.last('turn/start')).toBe(a)
    expect(s.last('request/header')).toBeUndefined()
  })

  it('mints UUID ids by default and keeps given ids', () => {
    const s = newSession()
    expect(s.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    expect(new Session({ cwd: '/', id: 'fixed' }).id).toBe('fixed')
    expect(() => new Session({ cwd: '' })).toThrow(TypeError)
  })

  class Point {
    constructor(readonly x: number) {}
  }
  const cycle: Record<string, unknown> = { a: 1 }
  cycle.self = cycle
  const bad: [string, unknown, string][] = [
    [
      'undefined in an array',
      { content: [{ type: 'text', text: 'a' }, undefined] },
      'data.content[1] is undefined inside an array',
    ],
    ['a function', { content: [{ type: 'text', text: () => 'x' }] }, 'data.content[0].text is a function'],
    ['a symbol', { meta: { tag: Symbol('x') } }, 'data.meta.tag is a symbol'],
    ['a bigint', { meta: { n: 10n } }, 'data.meta.n is a bigint'],
    ['NaN', { meta: { n: Number.NaN } }, 'data.meta.n is NaN'],
    ['Infinity', { meta: { list: [1, Number.POSITIVE_INFINITY] } }, 'data.meta.list[1] is Infinity'],
    ['a Date', { meta: { when: new Date(0) } }, 'data.meta.when is a Date instance'],
    ['a class instance', { meta: { p: new Point(1) } }, 'data.meta.p is a Point instance'],
    ['a Map', { meta: { m: new Map() } }, 'data.meta.m is a Map instance'],
    ['a cycle', { meta: cycle }, 'data.meta.self is a circular reference'],
    // biome-ignore lint/suspicious/noSparseArray: the hole is the bad input this case feeds the validator
    ['a sparse array', { meta: { list: [1, , 3] } }, 'data.meta.list[1] is a hole'],
    ['a quoted key path', { meta: { 'odd key': [undefined] } }, 'data.meta["odd key"][0] is undefined'],
    ['symbol keys', { meta: { [Symbol('k')]: 1 } }, 'data.meta has symbol keys'],
  ]
  for (const [what, data, message] of bad) {
    it(`rejects ${what}, naming the event type and the path`, () => {
      const s = newSession()
      s.append('turn/start', { turn: 0 })
      let error: unknown
      try {
        s.append('tool/result', data as never)
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(SessionAppendError)
      expect((error as Error).message).toContain('"tool/result"')
      expect((error as Error).message).toContain(message)
      expect(s.length).toBe(1) // nothing appended
    })
  }

  it('drops undefined-valued object properties and accepts shared (non-cyclic) references', () => {
    const s = newSession()
    const shared = { type: 'text' as const, text: 'x' }
    const e = s.append('user/message', {
      content: [shared, shared],
      source: { kind: 'plugin', plugin: 'p', label: undefined },
    })
    expect(Object.keys(e.data.source)).toEqual(['kind', 'plugin'])
    expect(e.data.content).toEqual([shared, shared])
    expect(JSON.parse(JSON.stringify(e))).toEqual(e)
  })

  it('copies the payload: mutating the caller object later does not change the log', () => {
    const s = newSession()
    const content = [{ type: 'text' as const, text: 'original' }]
    const data = { content, source: human }
    const e = s.append('user/message', data)
    content[0].text = 'changed'
    content.push({ type: 'text', text: 'more' })
    expect(e.data.content).toEqual([{ type: 'text', text: 'original' }])
    expect(s.deriveMessages()).toEqual([{ role: 'user', content: [{ type: 'text', text: 'original' }] }])
  })

  it('freezes the returned event deeply (mutation throws in strict mode)', () => {
    const s = newSession()
    const e = s.append('user/message', { content: text('hi'), source: human })
    expect(() => {
      ;(e as { seq: number }).seq = 9
    }).toThrow(TypeError)
    expect(() => {
      ;(e.data.content[0] as { text: string }).text = 'x'
    }).toThrow(TypeError)
    expect(() => (e.data.content as unknown[]).push(1)).toThrow(TypeError)
    expect(Object.isFrozen(s.deriveMessages())).toBe(true)
    expect(Object.isFrozen(s.deriveMessages()[0])).toBe(true)
  })

  it('keeps a __proto__ key as data without touching the prototype', () => {
    const s = newSession()
    const meta = JSON.parse('{"__proto__": {"polluted": true}}') as { [key: string]: unknown }
    const e = s.append('tool/result', { message: toolResult('c', 'x'), meta })
    expect(Object.getPrototypeOf(e.data.meta)).toBe(Object.prototype)
    expect(JSON.stringify(e.data.meta)).toBe('{"__proto__":{"polluted":true}}')
  })
})

describe('Session.subscribe', () => {
  it('delivers synchronously in seq order, also for events appended from a listener', () => {
    const s = newSession()
    const first: number[] = []
    const second: number[] = []
    s.subscribe((e) => {
      first.push(e.seq)
      if (e.type === 'turn/start') s.append('step/start', { turn: 0, step: 0 })
    })
    const off = s.subscribe((e) => second.push(e.seq))
    s.append('turn/start', { turn: 0 })
    expect(first).toEqual([0, 1])
    expect(second).toEqual([0, 1])
    off()
    s.append('step/end', { turn: 0, step: 0 })
    expect(second).toEqual([0, 1])
  })

  it('keeps the event and reaches every listener when one throws, then rethrows', () => {
    const s = newSession()
    const seen: number[] = []
    s.subscribe(() => {
      throw new Error('listener broke')
    })
    s.subscribe((e) => seen.push(e.seq))
    expect(() => s.append('turn/start', { turn: 0 })).toThrow('listener broke')
    expect(s.length).toBe(1)
    expect(seen).toEqual([0])
  })
})

describe('surface and deriveMessages', () => {
  it('derives user, assistant and tool messages in order and skips other events', () => {
    const s = newSession()
    s.append('turn/start', { turn: 0 })
    s.append('step/start', { turn: 0, step: 0 })
    s.append('user/message', { content: text('hi'), source: human })
    s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: 'x' } })
    const call: AssistantMessage = {
      role: 'assistant',
      content: [{ type: 'tool-call', callId: 'c1', name: 'echo', arguments: '{}' }],
    }
    s.append('assistant/message', { message: call })
    s.append('tool/call', { callId: 'c1', name: 'echo', arguments: '{}' })
    s.append('tool/result', { message: toolResult('c1', 'echoed') })
    expect(s.deriveMessages()).toEqual([{ role: 'user', content: text('hi') }, call, toolResult('c1', 'echoed')])
    expect(s.surface.nodes.map((n) => [n.seq, n.kind])).toEqual([
      [2, 'user/message'],
      [4, 'assistant/message'],
      [6, 'tool/result'],
    ])
  })

  it('includes an interrupted assistant message as-is', () => {
    const s = newSession()
    s.append('user/message', { content: text('go'), source: human })
    const prefix: AssistantMessage = { role: 'assistant', content: [{ type: 'text', text: 'I will sta' }] }
    s.append('assistant/message', { message: prefix, interrupted: true })
    const empty: AssistantMessage = { role: 'assistant', content: [] }
    s.append('assistant/message', { message: empty, interrupted: true })
    expect(s.deriveMessages()).toEqual([{ role: 'user', content: text('go') }, prefix, empty])
  })

  it('returns the same frozen array until the surface changes, and a new one after', () => {
    const s = newSession()
    s.append('user/message', { content: text('a'), source: human })
    const one = s.deriveMessages()
    s.append('step/end', { turn: 0, step: 0 })
    expect(s.deriveMessages()).toBe(one)
    s.append('assistant/message', { message: assistant('b') })
    const two = s.deriveMessages()
    expect(two).not.toBe(one)
    expect(one).toHaveLength(1)
    expect(two).toHaveLength(2)
  })

  it('replaceRange swaps a range on the surface, logs it, and keeps the raw log', () => {
    const s = newSession()
    for (let i = 0; i < 4; i++) {
      s.append('user/message', { content: text(`u${i}`), source: human })
      s.append('assistant/message', { message: assistant(`a${i}`) })
    }
    const summary: Message = { role: 'user', content: text('summary of u0..a1') }
    const event = s.surface.replaceRange(0, 4, [summary], { by: 'test' })
    expect(event.type).toBe('surface/replace')
    expect(event.seq).toBe(8)
    expect(s.length).toBe(9)
    expect(s.deriveMessages().map((m) => (m.content[0] as { text: string }).text)).toEqual([
      'summary of u0..a1',
      'u2',
      'a2',
      'u3',
      'a3',
    ])
    expect(s.surface.nodes[0]).toMatchObject({ seq: 8, kind: 'surface/replace', replaces: { fromSeq: 0, toSeq: 4 } })
    // Re-compacting a range that contains the earlier replacement absorbs it.
    s.surface.replaceRange(0, 6, [{ role: 'user', content: text('bigger summary') }])
    expect(s.deriveMessages().map((m) => (m.content[0] as { text: string }).text)).toEqual([
      'bigger summary',
      'u3',
      'a3',
    ])
    expect(s.deriveMessages()).toEqual(deriveMessagesFromEvents(s.events))
  })

  it('rejects a replacement range that is out of bounds or cuts an earlier one', () => {
    const s = newSession()
    for (let i = 0; i < 6; i++) s.append('user/message', { content: text(`u${i}`), source: human })
    expect(() => s.surface.replaceRange(2, 99, [])).toThrow('past the end of the log')
    expect(() => s.surface.replaceRange(3, 2, [])).toThrow('must be an integer >= fromSeq')
    expect(() => s.surface.replaceRange(0, 1, [{ role: 'bogus' } as never])).toThrow('data.messages[0]')
    s.surface.replaceRange(1, 3, [{ role: 'user', content: text('sum') }])
    expect(() => s.surface.replaceRange(2, 5, [])).toThrow('cuts the earlier replacement of [1, 3)')
    expect(s.length).toBe(7)
    // An empty replacement leaves no node behind, so nothing can be cut: [4, 6) then [5, 7) is fine.
    s.surface.replaceRange(4, 6, [])
    s.surface.replaceRange(5, 7, [])
    expect(s.deriveMessages().map((m) => (m.content[0] as { text: string }).text)).toEqual(['u0', 'sum', 'u3'])
  })

  it('incremental derivation equals a from-scratch derivation after every one of many random appends', () => {
    let seed = 42
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    const s = newSession()
    for (let i = 0; i < 1500; i++) {
      const r = random()
      if (r < 0.2) s.append('user/message', { content: text(`u${i}`), source: human })
      else if (r < 0.4)
        s.append('assistant/message', { message: assistant(`a${i}`), interrupted: random() < 0.2 ? true : undefined })
      else if (r < 0.55) s.append('tool/result', { message: toolResult(`c${i}`, `r${i}`) })
      else if (r < 0.85) s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: 'x' } })
      else if (r < 0.95) s.append('step/end', { turn: 0, step: i })
      else {
        // A replacement over a random range that does not cut an earlier one.
        const from = Math.floor(random() * s.length)
        const to = from + Math.floor(random() * (s.length - from + 1))
        const cuts = s.surface.nodes.some(
          (n) =>
            n.replaces &&
            !(n.replaces.fromSeq >= from && n.replaces.toSeq <= to) &&
            !(n.replaces.toSeq <= from || n.replaces.fromSeq >= to),
        )
        if (cuts) continue
        s.surface.replaceRange(from, to, random() < 0.5 ? [] : [{ role: 'user', content: text(`sum${i}`) }])
      }
      if (random() < 0.3 || i === 1499) expect(s.deriveMessages()).toEqual(deriveMessagesFromEvents(s.events))
    }
    expect(s.events.some((e) => e.type === 'surface/replace')).toBe(true)
  })
})

describe('restoring a log', () => {
  it('restores events with the same surface, validating seq and payloads', () => {
    const s = newSession()
    s.append('user/message', { content: text('a'), source: human })
    s.append('assistant/message', { message: assistant('b') })
    s.surface.replaceRange(0, 1, [{ role: 'user', content: text('A') }])
    const persisted = JSON.parse(JSON.stringify(s.events)) as SessionEvent[]
    const restored = new Session({ cwd: '/work', id: s.id, events: persisted })
    expect(restored.events).toEqual(s.events)
    expect(restored.deriveMessages()).toEqual(s.deriveMessages())
    expect(Object.isFrozen(restored.at(0)!.data)).toBe(true)

    const gap = [persisted[0], { ...persisted[1], seq: 5 }]
    expect(() => new Session({ cwd: '/', events: gap })).toThrow('events[1].seq is 5, expected 1')
    const corrupt = [
      { ...persisted[0], data: { content: [null, undefined], source: human } },
    ] as unknown as SessionEvent[]
    expect(() => new Session({ cwd: '/', events: corrupt })).toThrow(SessionAppendError)
  })
})
