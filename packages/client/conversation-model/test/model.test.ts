// The conversation model over frames recorded from the real `dsh web` session stream
// (test/fixtures/record.mjs): streaming, commit without duplicates, tools, turn ends, queued
// prompts, approvals and questions, replays and holes.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { SessionStreamEvent, WireEvent } from '@dsh/web-protocol'
import {
  ConversationModel,
  foldConversation,
  PREVIEW_CHARS,
  type AssistantNode,
  type ConversationNode,
  type ThinkingNode,
  type ToolNode,
} from '../src/index.ts'

const load = (name: string): SessionStreamEvent[] =>
  JSON.parse(readFileSync(new URL(`./fixtures/${name}.json`, import.meta.url), 'utf8'))
const logOf = (frames: SessionStreamEvent[]): WireEvent[] =>
  frames.flatMap((f) => (f.event === 'message' ? [f.data] : []))
const kinds = (nodes: readonly ConversationNode[]) => nodes.map((n) => (n.kind === 'tool' ? `tool:${n.name}` : n.kind))
const upTo = (frames: SessionStreamEvent[], seq: number) =>
  frames.filter((f) => f.event !== 'message' || f.data.seq <= seq)

describe('ConversationModel', () => {
  const tools = load('tools-turn')

  it('folds a recorded tool turn into ordered view nodes', () => {
    const snap = foldConversation(tools)
    expect(kinds(snap.nodes)).toEqual([
      'context',
      'user',
      'thinking',
      'assistant',
      'tool:bash',
      'tool:todo_write',
      'tool:read',
      'tool:edit',
      'tool:grep',
      'tool:glob',
      'tool:read',
      'assistant',
    ])
    expect(snap.turnRunning).toBe(false)
    expect(snap.lastSeq).toBe(logOf(tools).at(-1)!.seq)
    const toolNodes = snap.nodes.filter((n): n is ToolNode => n.kind === 'tool')
    const bash = toolNodes[0]
    expect(bash).toMatchObject({
      status: 'done',
      input: { command: 'cat notes.txt; echo done >&2; exit 3' },
      result: { isError: false, meta: { exitCode: 3 } },
    })
    expect(bash.result!.text).toContain('alpha\nbeta')
    expect(toolNodes.find((n) => n.name === 'edit')!.result!.meta!.diff).toContain('-beta\n+BETA')
    const failed = toolNodes.at(-1)!
    expect(failed).toMatchObject({ status: 'error', result: { isError: true, error: { code: 'NOT_FOUND' } } })
    expect(snap.todos!.map((t) => t.status)).toEqual(['completed', 'in_progress', 'pending'])
    const final = snap.nodes.at(-1) as AssistantNode
    expect(final.text).toContain('| notes.txt | beta → BETA |')
    expect(final.streaming).toBe(false)
    expect(snap.model).toEqual({ provider: 'deepseek-official', model: expect.any(String) })
    expect(snap.usage.input).toBeGreaterThan(0)
  })

  it('streams thinking and text as growing nodes, then the committed message replaces them under the same key', () => {
    const log = logOf(tools)
    const seqOf = (pred: (e: WireEvent) => boolean) => log.find(pred)!.seq
    const firstText = seqOf((e) => e.type === 'assistant/chunk' && (e.data as any).chunk.kind === 'text-delta')
    const midThinking = foldConversation(upTo(tools, firstText - 1))
    const thinking = midThinking.nodes.find((n): n is ThinkingNode => n.kind === 'thinking')!
    expect(thinking).toMatchObject({
      streaming: true,
      text: 'The user wants the notes tidied. First look at the file.',
    })
    expect(midThinking.turnRunning).toBe(true)

    const partial = foldConversation(upTo(tools, firstText))
    const streaming = partial.nodes.filter((n): n is AssistantNode => n.kind === 'assistant')
    expect(streaming).toEqual([expect.objectContaining({ text: 'Let me ', streaming: true })])
    expect(partial.nodes.find((n) => n.kind === 'thinking')).toMatchObject({ streaming: false })

    // Every prefix: the streamed text never shows twice, each key once.
    for (let seq = 0; seq <= log.at(-1)!.seq; seq++) {
      const snap = foldConversation(upTo(tools, seq))
      const keys = snap.nodes.map((n) => n.key)
      expect(new Set(keys).size).toBe(keys.length)
      const all = snap.nodes
        .filter((n): n is AssistantNode => n.kind === 'assistant')
        .map((n) => n.text)
        .join('|')
      expect(all.split('Let me').length).toBeLessThanOrEqual(2)
    }
    const committed = foldConversation(
      upTo(
        tools,
        seqOf((e) => e.type === 'assistant/message'),
      ),
    )
    const texts = committed.nodes.filter((n): n is AssistantNode => n.kind === 'assistant')
    expect(texts).toEqual([
      expect.objectContaining({ key: streaming[0].key, text: 'Let me look first.', streaming: false }),
    ])
    expect(committed.nodes.find((n) => n.kind === 'tool')).toMatchObject({ name: 'bash', status: 'running' })
  })

  it('shows a tool call while its arguments stream', () => {
    const log = logOf(tools)
    const delta = log.find((e) => e.type === 'assistant/chunk' && (e.data as any).chunk.kind === 'tool-call-delta')!
    const snap = foldConversation(upTo(tools, delta.seq))
    expect(snap.nodes.at(-1)).toMatchObject({
      kind: 'tool',
      name: 'bash',
      status: 'streaming',
      arguments: expect.stringContaining('"command"'),
    })
  })

  it('ignores replayed events and reports a hole until it is filled', () => {
    const log = logOf(tools)
    const model = new ConversationModel()
    model.applyEvents(log.slice(0, 30))
    const before = model.snapshot()
    // A reconnect replays what the view already holds: nothing changes.
    model.applyEvents(log.slice(10, 30))
    expect(model.snapshot().nodes).toEqual(before.nodes)
    // An event past a hole is held back and reported.
    expect(model.applyEvent(log[35])).toBe(false)
    expect(model.snapshot().gapFrom).toBe(30)
    model.applyEvents(log.slice(30))
    const after = model.snapshot()
    expect(after.gapFrom).toBeUndefined()
    expect(after.nodes).toEqual(foldConversation(log).nodes)
  })

  it('keeps the identity of nodes that did not change', () => {
    const log = logOf(tools)
    const model = new ConversationModel()
    model.applyEvents(log.slice(0, 20))
    const a = model.snapshot()
    model.applyEvents(log.slice(20, 25))
    const b = model.snapshot()
    expect(b).not.toBe(a)
    expect(b.nodes[1]).toBe(a.nodes[1])
    expect(model.snapshot()).toBe(b)
  })

  it('a cancelled turn keeps the streamed prefix, marked interrupted, and ends with a status row', () => {
    const frames = load('cancelled-turn')
    const snap = foldConversation(frames)
    const text = snap.nodes.filter((n): n is AssistantNode => n.kind === 'assistant')
    expect(text).toEqual([
      expect.objectContaining({ text: 'Once upon a time and then', interrupted: true, streaming: false }),
    ])
    expect(snap.nodes.at(-1)).toMatchObject({ kind: 'turn-end', reason: 'cancelled', rejected: [] })
    expect(snap.turnRunning).toBe(false)
  })

  it('a queued follow-up shows as queued until its turn claims it', () => {
    const frames = load('queued-turns')
    const model = new ConversationModel()
    const firstUser = frames.findIndex(
      (f) => f.event === 'message' && f.data.type === 'user/message' && (f.data.data as any).source.kind === 'human',
    )
    model.applyEvents(frames.slice(0, firstUser + 1).flatMap((f) => (f.event === 'message' ? [f.data] : [])))
    model.addQueued('second question')
    expect(model.snapshot().queued.map((q) => q.text)).toEqual(['second question'])
    for (const frame of frames.slice(firstUser + 1)) model.applyFrame(frame)
    const snap = model.snapshot()
    expect(snap.queued).toEqual([])
    expect(snap.nodes.filter((n) => n.kind === 'user').map((n) => (n as any).text)).toEqual([
      'first question',
      'second question',
    ])
    expect(kinds(snap.nodes)).toEqual(['context', 'user', 'assistant', 'user', 'assistant'])
  })

  it('the host count trims queued prompts it no longer holds (a cancel drops them)', () => {
    const model = new ConversationModel()
    model.addQueued('a')
    model.addQueued('b')
    model.applyFrame({ event: 'status', data: { sessionId: 's', status: 'running', queued: 1 } })
    expect(model.snapshot().queued.map((q) => q.text)).toEqual(['b'])
    model.applyFrame({ event: 'status', data: { sessionId: 's', status: 'idle', queued: 0 } })
    expect(model.snapshot().queued).toEqual([])
  })

  it('holds pending approvals until resolved, once each, and forgets them when the stream reopens', () => {
    const frames = load('approvals')
    const firstApproval = frames.findIndex((f) => f.event === 'approval')
    const model = new ConversationModel()
    for (const frame of frames.slice(0, firstApproval + 2)) model.applyFrame(frame)
    let snap = model.snapshot()
    expect(snap.approvals).toHaveLength(1)
    expect(snap.approvals[0].request).toMatchObject({
      kind: 'command',
      title: 'Run `echo outside` outside the sandbox',
      options: ['allowed-once', 'allowed-always', 'rejected'],
    })
    expect(snap.status).toBe('waiting')
    model.applyFrame(frames[firstApproval]) // re-sent on reconnect
    expect(model.snapshot().approvals).toHaveLength(1)
    model.streamOpened()
    expect(model.snapshot().approvals).toHaveLength(0)
    for (const frame of frames) model.applyFrame(frame)
    snap = model.snapshot()
    expect(snap.approvals).toEqual([])
    const bash = snap.nodes.filter((n): n is ToolNode => n.kind === 'tool')
    expect(bash.map((n) => n.result!.text.includes('refused'))).toEqual([false, true])
  })

  it('holds a pending question with its options until answered', () => {
    const frames = load('question')
    const at = frames.findIndex((f) => f.event === 'question')
    const pending = foldConversation(frames.slice(0, at + 1))
    expect(pending.questions).toHaveLength(1)
    expect(pending.questions[0].questions.map((q) => q.id)).toEqual(['db', 'why'])
    const done = foldConversation(frames)
    expect(done.questions).toEqual([])
    expect(done.nodes.find((n) => n.kind === 'tool')).toMatchObject({ name: 'ask_user_question', status: 'done' })
  })

  it('survives malformed and unknown events without throwing', () => {
    const model = new ConversationModel()
    const bad: WireEvent[] = [
      { seq: 0, type: 'assistant/chunk', time: 1, data: {} },
      {
        seq: 1,
        type: 'assistant/chunk',
        time: 1,
        data: { chunk: { kind: 'tool-call-delta', index: 9, argumentsDelta: 'x' } },
      },
      { seq: 2, type: 'something/else', time: 1, data: null },
      {
        seq: 3,
        type: 'tool/result',
        time: 1,
        data: { message: { callId: 'orphan', name: 'bash', content: 'not an array' } },
      },
      { seq: 4, type: 'assistant/message', time: 1, data: { message: null } },
      { seq: 5, type: 'user/message', time: 1, data: {} },
      {
        seq: 6,
        type: 'turn/end',
        time: 1,
        data: { turn: 0, reason: 'error', error: { code: 'SERVER', message: 'the provider failed' } },
      },
    ]
    expect(() => model.applyEvents(bad)).not.toThrow()
    const snap = model.snapshot()
    expect(snap.lastSeq).toBe(6)
    expect(kinds(snap.nodes)).toEqual(['tool:bash', 'user', 'turn-end'])
    expect(snap.nodes.at(-1)).toMatchObject({ reason: 'error', error: { message: 'the provider failed' } })
  })

  it('syncs the live state of a session feed in one change, keeping unchanged parts', () => {
    const model = new ConversationModel()
    let calls = 0
    model.subscribe(() => calls++)
    const approval = {
      requestId: 'a1',
      sessionId: 's',
      request: { kind: 'tool', title: 't', action: {}, options: ['allowed-once'], time: 0 },
    }
    model.syncLive({ status: 'waiting', queued: 0, approvals: [approval], questions: [] })
    expect(calls).toBe(1)
    const snap = model.snapshot()
    expect(snap).toMatchObject({ status: 'waiting', approvals: [{ requestId: 'a1' }], questions: [] })
    model.syncLive({ status: 'waiting', queued: 0, approvals: [approval], questions: [] })
    expect(calls).toBe(1)
    expect(model.snapshot()).toBe(snap)
    model.syncLive({ status: 'running', queued: 0, approvals: [], questions: [] })
    expect(model.snapshot()).toMatchObject({ status: 'running', approvals: [] })
  })

  it('does not show a prompt as queued when the log already holds it (the turn claimed it before the reply came back)', () => {
    const frames = load('queued-turns')
    const model = new ConversationModel()
    model.applyEvents(logOf(frames))
    const before = model.snapshot().lastSeq
    expect(model.addQueued('second question', 'queue', 3)).toBeUndefined()
    expect(model.snapshot().queued).toEqual([])
    expect(model.addQueued('second question', 'queue', before)).toBeDefined()
  })

  it('notifies subscribers once per batch', () => {
    const model = new ConversationModel()
    let calls = 0
    const off = model.subscribe(() => calls++)
    model.applyEvents(logOf(tools))
    expect(calls).toBe(1)
    model.applyFrame({ event: 'status', data: { sessionId: 's', status: 'idle', queued: 0 } })
    expect(calls).toBe(2)
    off()
    model.addQueued('x')
    expect(calls).toBe(2)
  })
})

describe('ConversationModel under a burst of deltas', () => {
  // A synthetic turn: N reasoning deltas, then M text deltas, each its own log event.
  const burst = (reasoning: string[], text: string[]): WireEvent[] => {
    const events: WireEvent[] = []
    const push = (type: string, data: unknown) =>
      events.push({ seq: events.length, type, time: events.length, data } as WireEvent)
    push('turn/start', { turn: 0 })
    push('step/start', { turn: 0, step: 0 })
    for (const piece of reasoning) push('assistant/chunk', { chunk: { kind: 'reasoning-delta', text: piece } })
    for (const piece of text) push('assistant/chunk', { chunk: { kind: 'text-delta', text: piece } })
    return events
  }
  const reasoning = Array.from({ length: 20_000 }, (_, i) => (i % 997 === 0 ? `line ${i}\n` : `r${i} `))
  const text = Array.from({ length: 500 }, (_, i) => `t${i} `)

  it('with a scheduler, listeners hear once per scheduled run however many events arrive, and the text is exact', () => {
    const runs: Array<() => void> = []
    const model = new ConversationModel({ schedule: (run) => runs.push(run) })
    let heard = 0
    model.subscribe(() => heard++)
    const events = burst(reasoning, text)
    for (const event of events.slice(0, 10_000)) model.applyEvent(event)
    expect(heard).toBe(0)
    expect(runs).toHaveLength(1)
    runs.shift()!()
    expect(heard).toBe(1)
    for (const event of events.slice(10_000)) model.applyEvent(event)
    expect(runs).toHaveLength(1)
    // flush() delivers a pending notification now; the scheduled run then has nothing to say.
    model.flush()
    expect(heard).toBe(2)
    runs.shift()!()
    expect(heard).toBe(2)
    const snap = model.snapshot()
    expect(snap.lastSeq).toBe(events.at(-1)!.seq)
    const [thinking, answer] = snap.nodes as [ThinkingNode, AssistantNode]
    expect(thinking).toMatchObject({ kind: 'thinking', streaming: false, text: reasoning.join('') })
    expect(answer).toMatchObject({ kind: 'assistant', streaming: true, text: text.join('') })
  })

  it('keeps a bounded preview of the streaming reasoning: the end of its text', () => {
    const model = new ConversationModel()
    const events = burst(reasoning, [])
    for (const event of events) model.applyEvent(event)
    const thinking = model.snapshot().nodes[0] as ThinkingNode
    expect(thinking.streaming).toBe(true)
    expect(thinking.preview!.length).toBe(PREVIEW_CHARS)
    expect(thinking.text.endsWith(thinking.preview!)).toBe(true)
    expect(thinking.text).toBe(reasoning.join(''))
    // A one-delta node previews all of it.
    const short = new ConversationModel()
    for (const event of burst(['just this'], [])) short.applyEvent(event)
    expect((short.snapshot().nodes[0] as ThinkingNode).preview).toBe('just this')
  })

  it('held deltas: a snapshot at any point shows exactly the text received so far, and the end is exact', () => {
    // Deltas continuing a node are held and written into it when the nodes are read: whatever the
    // reading pattern (every delta, every few, only at the end, other events in between), the
    // text, the preview and node identity come out the same as one write per delta.
    const events: WireEvent[] = []
    const push = (type: string, data: unknown) =>
      events.push({ seq: events.length, type, time: events.length, data } as WireEvent)
    push('turn/start', { turn: 0 })
    push('step/start', { turn: 0, step: 0 })
    const r1 = Array.from({ length: 700 }, (_, i) => (i % 50 === 0 ? `line ${i}\n` : `a${i} `))
    const t1 = Array.from({ length: 300 }, (_, i) => `b${i} `)
    const r2 = Array.from({ length: 200 }, (_, i) => `c${i} `)
    for (const piece of r1)
      push('assistant/chunk', { turn: 0, step: 0, chunk: { kind: 'reasoning-delta', text: piece } })
    for (const piece of t1) push('assistant/chunk', { turn: 0, step: 0, chunk: { kind: 'text-delta', text: piece } })
    push('assistant/chunk', { turn: 0, step: 0, chunk: { kind: 'usage', usage: { input: 1, output: 1 } } })
    for (const piece of r2)
      push('assistant/chunk', { turn: 0, step: 0, chunk: { kind: 'reasoning-delta', text: piece } })
    const expected = (upTo: number) => {
      const reference = new ConversationModel()
      for (let i = 0; i <= upTo; i++) {
        reference.applyEvent(events[i])
        reference.snapshot() // read after every event: each delta written on its own
      }
      return reference.snapshot().nodes
    }
    for (const every of [1, 3, 64, 10_000]) {
      const model = new ConversationModel()
      let previous = model.snapshot()
      for (let i = 0; i < events.length; i++) {
        model.applyEvent(events[i])
        if (i % every !== every - 1 && i !== events.length - 1) continue
        const snap = model.snapshot()
        const want = expected(i)
        expect(
          snap.nodes.map((n) => ({ ...n })),
          `reading every ${every}, at event ${i}`,
        ).toEqual(want.map((n) => ({ ...n })))
        // Nodes no delta reached since the last read keep their identity.
        for (const node of snap.nodes) {
          const before = previous.nodes.find((n) => n.key === node.key)
          if (
            before &&
            (before as { text?: string }).text === (node as { text?: string }).text &&
            before.kind === node.kind &&
            (before as { streaming?: boolean }).streaming === (node as { streaming?: boolean }).streaming
          )
            expect(node).toBe(before)
        }
        previous = snap
      }
      const [thinking, answer, again] = previous.nodes as [ThinkingNode, AssistantNode, ThinkingNode]
      expect(thinking).toMatchObject({ kind: 'thinking', streaming: false, text: r1.join('') })
      expect(answer).toMatchObject({ kind: 'assistant', streaming: true, text: t1.join('') })
      expect(again).toMatchObject({ kind: 'thinking', streaming: true, text: r2.join('') })
      expect(again.preview).toBe(r2.join('').slice(-PREVIEW_CHARS))
    }
  })

  it('keeps the usage object of snapshots while the totals stay the same', () => {
    const model = new ConversationModel()
    for (const event of burst(['a', 'b'], [])) model.applyEvent(event)
    const first = model.snapshot()
    model.applyEvent({
      seq: 4,
      type: 'assistant/chunk',
      time: 4,
      data: { chunk: { kind: 'reasoning-delta', text: 'c' } },
    } as WireEvent)
    expect(model.snapshot().version).not.toBe(first.version)
    expect(model.snapshot().usage).toBe(first.usage)
    model.applyEvent({
      seq: 5,
      type: 'assistant/message',
      time: 5,
      data: { message: { role: 'assistant', content: [{ type: 'text', text: 'ok' }] }, usage: { input: 7, output: 2 } },
    } as WireEvent)
    expect(model.snapshot().usage).not.toBe(first.usage)
    expect(model.snapshot().usage).toMatchObject({ input: 7, output: 2 })
  })
})
