// ConversationModel: folds a session's log events (history pages and live stream frames) into
// view nodes. The log is the truth: a log event at or below `lastSeq` is a duplicate and is
// ignored, one past a hole is held back and reported as `gapFrom` (refetch, then continue), so
// reconnects and reloads never duplicate or skip. Streamed `assistant/chunk` deltas build
// provisional nodes keyed by their step; the committed `assistant/message` replaces them under
// the same keys. Mutation happens inside the model; every change yields a new snapshot object
// whose unchanged nodes keep their identity.
import type { SessionStatus, SessionStreamEvent, WireEvent } from '@dsh/web-protocol'
import type {
  ConversationNode,
  ConversationSnapshot,
  JsonObject,
  PendingApproval,
  PendingQuestion,
  QueuedPrompt,
  ThinkingNode,
  TodoItem,
  ToolNode,
  ToolResultView,
  UsageTotals,
} from './types.ts'

type Block = { type: string; text?: string; callId?: string; name?: string; arguments?: string }

interface LiveStep {
  turn: number
  step: number
  /** Keys of this step's provisional nodes in stream order. */
  keys: string[]
  /** Kind of the block the next delta of the same kind extends. */
  lastKind?: 'r' | 't'
  counts: { r: number; t: number }
  /** tool-call stream index -> node key */
  toolIndex: Map<number, string>
  reasoningStart?: number
  reasoningEnd?: number
}

const emptyUsage = (): UsageTotals => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 })

export function parseArguments(raw: string): JsonObject | undefined {
  if (!raw.trim().startsWith('{')) return undefined
  try {
    const value = JSON.parse(raw) as unknown
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : undefined
  } catch {
    return undefined
  }
}

const textOf = (content: unknown): { text: string; images: number } => {
  const blocks = Array.isArray(content) ? (content as Block[]) : []
  return {
    text: blocks
      .filter((b) => b.type === 'text')
      .map((b) => b.text ?? '')
      .join('\n'),
    images: blocks.filter((b) => b.type === 'image').length,
  }
}

/** How long a thinking node's `preview` (the end of its text) is kept, in characters. */
export const PREVIEW_CHARS = 240
const clip = (text: string) => (text.length > PREVIEW_CHARS ? text.slice(-PREVIEW_CHARS) : text)

export interface ConversationModelOptions {
  /**
   * Defers listener calls: `schedule(run)` is called once when the first change after a
   * notification happens, and `run()` then notifies the listeners once for every change since
   * (the session store passes one animation frame). Default: listeners hear every change at once.
   */
  schedule?: (run: () => void) => void
}

export class ConversationModel {
  constructor(private readonly options: ConversationModelOptions = {}) {}

  /** Listeners hear changes through `schedule` (coalesced), not at once. */
  get deferred(): boolean {
    return this.options.schedule !== undefined
  }

  private nodes: ConversationNode[] = []
  private index = new Map<string, number>()
  private lastSeq = -1
  private gapFrom: number | undefined
  private status: SessionStatus = 'idle'
  private turnRunning = false
  private turn = -1
  private step = 0
  /** The key of the latest call with each id (see callKey). */
  private readonly callKeys = new Map<string, { key: string; turn: number; step: number; uses: number }>()
  private live: LiveStep | undefined
  private queued: QueuedPrompt[] = []
  private queuedOnHost = 0
  private approvals: PendingApproval[] = []
  private questions: PendingQuestion[] = []
  private todos: TodoItem[] | undefined
  private title: string | undefined
  private model: { provider: string; model: string } | undefined
  private usage = emptyUsage()
  /** The usage object snapshots share until the totals change. */
  private usageView: UsageTotals | undefined
  private lastInputTokens: number | undefined
  private version = 0
  private snap: ConversationSnapshot | undefined
  private listeners = new Set<() => void>()
  private nextLocalId = 0
  /**
   * Streamed text not yet in its node: the deltas that continued the same thinking or answer
   * node since it was last written. A delta only appends here; the node gets the joined text
   * (one new node object, one concatenation, one preview cut) when anything reads the nodes
   * (a snapshot, or any other event). Per delta that is one array slot instead of a new node,
   * a rope cell and a preview string, the garbage that made the scavenges and the final major
   * GC of a 100,000-delta answer long.
   */
  private open: { key: string; kind: 'r' | 't'; live: LiveStep; parts: string[] } | undefined

  /** Folds one log event (from `sessions.history` or a stream `message` frame). Returns whether it was applied. */
  applyEvent(event: WireEvent): boolean {
    if (event.seq <= this.lastSeq) return false
    if (event.seq > this.lastSeq + 1) {
      this.gapFrom ??= this.lastSeq + 1
      this.changed()
      return false
    }
    this.lastSeq = event.seq
    if (this.gapFrom !== undefined && this.gapFrom <= event.seq) this.gapFrom = undefined
    this.fold(event)
    this.changed()
    return true
  }

  /** Folds a batch (a history page); listeners hear once. */
  applyEvents(events: readonly WireEvent[]): void {
    this.batch(() => {
      for (const event of events) this.applyEvent(event)
    })
  }

  /** Folds one session-stream frame: a log event or a state frame (status, approval, question). */
  applyFrame(frame: SessionStreamEvent): void {
    switch (frame.event) {
      case 'message':
        this.applyEvent(frame.data)
        return
      case 'status':
        this.status = frame.data.status
        this.setQueuedOnHost(frame.data.queued)
        break
      case 'approval':
        if (this.approvals.some((a) => a.requestId === frame.data.requestId)) return
        this.approvals = [...this.approvals, { requestId: frame.data.requestId, request: frame.data.request }]
        break
      case 'approval/resolved':
        this.approvals = this.approvals.filter((a) => a.requestId !== frame.data.requestId)
        break
      case 'question':
        if (this.questions.some((q) => q.requestId === frame.data.requestId)) return
        this.questions = [
          ...this.questions,
          {
            requestId: frame.data.requestId,
            questions: frame.data.questions,
            ...((frame.data as { time?: number }).time !== undefined
              ? { time: (frame.data as { time?: number }).time }
              : {}),
          },
        ]
        break
      case 'question/resolved':
        this.questions = this.questions.filter((q) => q.requestId !== frame.data.requestId)
        break
      default:
        return
    }
    this.changed()
  }

  /**
   * A (re)connected stream is about to re-send the pending approvals and questions: forget the
   * ones held, so a request answered while disconnected does not linger.
   */
  streamOpened(): void {
    if (this.approvals.length === 0 && this.questions.length === 0) return
    this.approvals = []
    this.questions = []
    this.changed()
  }

  /**
   * Replaces the live state a session feed keeps (status, the host's queue count, pending
   * approvals and questions) in one change. Unchanged parts keep their identity.
   */
  syncLive(live: {
    status?: SessionStatus
    queued?: number
    approvals?: readonly PendingApproval[]
    questions?: readonly PendingQuestion[]
  }): void {
    let changed = false
    if (live.status !== undefined && live.status !== this.status) {
      this.status = live.status
      changed = true
    }
    if (live.queued !== undefined && (live.queued !== this.queuedOnHost || this.queued.length > live.queued)) {
      this.setQueuedOnHost(live.queued)
      changed = true
    }
    const sameIds = (a: readonly { requestId: string }[], b: readonly { requestId: string }[]) =>
      a.length === b.length && a.every((x, i) => x.requestId === b[i].requestId)
    if (live.approvals && !sameIds(live.approvals, this.approvals)) {
      this.approvals = live.approvals.map((a) => ({ requestId: a.requestId, request: a.request }))
      changed = true
    }
    if (live.questions && !sameIds(live.questions, this.questions)) {
      this.questions = live.questions.map((q) => ({
        requestId: q.requestId,
        questions: q.questions,
        ...(q.time !== undefined ? { time: q.time } : {}),
      }))
      changed = true
    }
    if (changed) this.changed()
  }

  /**
   * Records a prompt this view sent that the host queued (or handed to the running turn).
   * `sentAfterSeq` is the last seq the view held when it sent: if the log already shows the
   * prompt claimed after it (the answer raced ahead of the reply), nothing is recorded.
   */
  addQueued(text: string, mode: 'queue' | 'steer' = 'queue', sentAfterSeq?: number): QueuedPrompt | undefined {
    this.settleOpen()
    if (
      sentAfterSeq !== undefined &&
      this.nodes.some((n) => n.kind === 'user' && n.seq > sentAfterSeq && n.text === text)
    )
      return undefined
    const prompt = { id: `q${this.nextLocalId++}`, text, mode }
    this.queued = [...this.queued, prompt]
    this.changed()
    return prompt
  }

  /** Drops a queued prompt from the view (the host's queue is cancelled with the turn). */
  removeQueued(id: string): void {
    const next = this.queued.filter((q) => q.id !== id)
    if (next.length === this.queued.length) return
    this.queued = next
    this.changed()
  }

  /** Clears the log-derived view (before refolding a session from seq 0). Queues and takeovers stay. */
  reset(): void {
    this.open = undefined
    this.nodes = []
    this.index.clear()
    this.lastSeq = -1
    this.gapFrom = undefined
    this.turnRunning = false
    this.turn = -1
    this.live = undefined
    this.todos = undefined
    this.title = undefined
    this.model = undefined
    this.usage = emptyUsage()
    this.usageView = undefined
    this.lastInputTokens = undefined
    this.changed()
  }

  snapshot(): ConversationSnapshot {
    if (this.snap && this.snap.version === this.version) return this.snap
    this.settleOpen()
    this.snap = {
      version: this.version,
      nodes: this.nodes.slice(),
      lastSeq: this.lastSeq,
      ...(this.gapFrom !== undefined ? { gapFrom: this.gapFrom } : {}),
      status: this.turnRunning && this.status === 'idle' ? 'running' : this.status,
      turnRunning: this.turnRunning,
      queued: this.queued,
      queuedOnHost: this.queuedOnHost,
      approvals: this.approvals,
      questions: this.questions,
      ...(this.todos ? { todos: this.todos } : {}),
      ...(this.title !== undefined ? { title: this.title } : {}),
      ...(this.model ? { model: this.model } : {}),
      usage: (this.usageView ??= { ...this.usage }),
      ...(this.lastInputTokens !== undefined ? { lastInputTokens: this.lastInputTokens } : {}),
    }
    return this.snap
  }

  /** `listener` runs after each change (once per batch). Returns the unsubscriber. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private batching = 0
  private pendingNotify = false
  private scheduled = false

  batch(fn: () => void): void {
    this.batching++
    try {
      fn()
    } finally {
      this.batching--
      if (this.batching === 0 && this.pendingNotify) {
        this.pendingNotify = false
        this.notify()
      }
    }
  }

  /** Notifies now if a deferred notification is pending (see `schedule`). */
  flush(): void {
    if (!this.scheduled) return
    this.scheduled = false
    for (const listener of [...this.listeners]) listener()
  }

  private changed(): void {
    this.version++
    if (this.batching > 0) {
      this.pendingNotify = true
      return
    }
    this.notify()
  }

  private notify(): void {
    const schedule = this.options.schedule
    if (!schedule) {
      for (const listener of [...this.listeners]) listener()
      return
    }
    if (this.scheduled) return
    this.scheduled = true
    schedule(() => this.flush())
  }

  // ---- folding ----

  private fold(event: WireEvent): void {
    const data = (event.data ?? {}) as Record<string, any>
    if (this.open && event.type !== 'assistant/chunk') this.settleOpen()
    switch (event.type) {
      case 'turn/start':
        this.turn = data.turn
        this.step = 0
        this.turnRunning = true
        break
      case 'step/start':
        this.turn = data.turn
        this.step = data.step
        this.live = undefined
        break
      case 'step/end':
        this.finishLive()
        break
      case 'turn/end':
        this.onTurnEnd(event, data)
        break
      case 'user/message':
        this.onUserMessage(event, data)
        break
      case 'assistant/chunk':
        this.onChunk(event, data.chunk)
        break
      case 'assistant/message':
        this.onAssistantMessage(event, data)
        break
      case 'tool/call':
        this.onToolCall(event, data)
        break
      case 'tool/result':
        this.onToolResult(event, data)
        break
      case 'todo/write':
        if (Array.isArray(data.todos)) this.todos = data.todos as TodoItem[]
        break
      case 'session/title':
        if (typeof data.title === 'string') this.title = data.title
        break
      case 'request/header':
        this.model = { provider: String(data.provider), model: String(data.model) }
        break
      case 'seed/end':
        this.push({
          kind: 'notice',
          key: `n${event.seq}`,
          seq: event.seq,
          code: 'seeded',
          ...(data.fromSession ? { detail: String(data.fromSession) } : {}),
        })
        break
      case 'compaction/end':
        this.push({
          kind: 'notice',
          key: `n${event.seq}`,
          seq: event.seq,
          code: data.status === 'compacted' ? 'compacted' : 'compaction-failed',
          ...(data.error?.message ? { detail: String(data.error.message) } : {}),
        })
        break
      default:
        break
    }
  }

  private onUserMessage(event: WireEvent, data: Record<string, any>): void {
    const { text, images } = textOf(data.content)
    const source = data.source ?? { kind: 'human' }
    if (source.kind === 'human') {
      this.push({ kind: 'user', key: `u${event.seq}`, seq: event.seq, turn: this.turn, text, images, time: event.time })
      // The first queued prompt with this text has been claimed.
      const at = this.queued.findIndex((q) => q.text === text)
      if (at >= 0) this.queued = this.queued.filter((_, i) => i !== at)
      return
    }
    const origin = source.kind === 'plugin' ? `plugin:${source.plugin}` : 'system'
    this.push({
      kind: 'context',
      key: `c${event.seq}`,
      seq: event.seq,
      turn: this.turn,
      text,
      origin,
      ...(source.label ? { label: String(source.label) } : {}),
    })
  }

  /**
   * The node key of a call. `introduce`: the call is being announced (stream, message, tool/call);
   * an id first seen in an earlier step then gets a fresh key, so a log written before call ids
   * were session-unique (two turns both calling `call_0_0`) still folds into one card per call.
   * Otherwise (a result) the key of the latest call with that id.
   */
  private callKey(callId: unknown, introduce: boolean): string {
    const id = String(callId)
    const known = this.callKeys.get(id)
    if (known && (!introduce || (known.turn === this.turn && known.step === this.step))) return known.key
    if (!introduce) return `tool:${id}`
    const uses = (known?.uses ?? 0) + 1
    const key = uses === 1 ? `tool:${id}` : `tool:${id}#${uses}`
    this.callKeys.set(id, { key, turn: this.turn, step: this.step, uses })
    return key
  }

  private liveStep(): LiveStep {
    if (!this.live || this.live.turn !== this.turn || this.live.step !== this.step) {
      this.live = { turn: this.turn, step: this.step, keys: [], counts: { r: 0, t: 0 }, toolIndex: new Map() }
    }
    return this.live
  }

  private stepKey(kind: string, n: number): string {
    return `s${this.turn}.${this.step}:${kind}${n}`
  }

  private onChunk(event: WireEvent, chunk: Record<string, any> | undefined): void {
    if (!chunk) return
    const live = this.liveStep()
    switch (chunk.kind) {
      case 'reasoning-delta':
      case 'text-delta': {
        const kind = chunk.kind === 'reasoning-delta' ? 'r' : 't'
        const text = String(chunk.text ?? '')
        if (kind === 'r') {
          live.reasoningStart ??= event.time
          live.reasoningEnd = event.time
        }
        const open = this.open
        if (open && open.live === live && open.kind === kind && live.lastKind === kind) {
          open.parts.push(text)
          return
        }
        this.settleOpen()
        if (kind === 't' && live.lastKind === 'r') {
          this.closeThinking(live)
        }
        if (live.lastKind !== kind) {
          live.lastKind = kind
          const key = this.stepKey(kind, live.counts[kind]++)
          live.keys.push(key)
          if (kind === 'r')
            this.push({
              kind: 'thinking',
              key,
              turn: this.turn,
              step: this.step,
              text,
              preview: clip(text),
              streaming: true,
            })
          else
            this.push({
              kind: 'assistant',
              key,
              turn: this.turn,
              step: this.step,
              text,
              streaming: true,
              interrupted: false,
            })
          return
        }
        const key = this.stepKey(kind, live.counts[kind] - 1)
        if (this.get(key)) this.open = { key, kind, live, parts: [text] }
        return
      }
      case 'tool-call-start': {
        this.settleOpen()
        if (live.lastKind === 'r') this.closeThinking(live)
        live.lastKind = undefined
        const key = this.callKey(chunk.callId, true)
        live.toolIndex.set(chunk.index, key)
        live.keys.push(key)
        if (!this.get(key))
          this.push({
            kind: 'tool',
            key,
            turn: this.turn,
            step: this.step,
            callId: String(chunk.callId),
            name: String(chunk.name),
            arguments: '',
            status: 'streaming',
          })
        return
      }
      case 'tool-call-delta': {
        this.settleOpen()
        const key = live.toolIndex.get(chunk.index)
        const node = key ? (this.get(key) as ToolNode | undefined) : undefined
        if (node) this.replace({ ...node, arguments: node.arguments + String(chunk.argumentsDelta ?? '') })
        return
      }
      case 'usage':
        return
      default:
        return
    }
  }

  /** Writes the held deltas into their node (see `open`). */
  private settleOpen(): void {
    const open = this.open
    if (!open) return
    this.open = undefined
    const node = this.get(open.key)
    if (node?.kind !== 'thinking' && node?.kind !== 'assistant') return
    const added = open.parts.length === 1 ? open.parts[0] : open.parts.join('')
    // `node.text + added` stays a rope (one cell per write, not per delta) until someone reads the
    // whole text; the thinking row shows `preview` (bounded).
    if (node.kind === 'thinking')
      this.replace({ ...node, text: node.text + added, preview: clip((node.preview ?? '') + added) })
    else this.replace({ ...node, text: node.text + added })
  }

  private closeThinking(live: LiveStep): void {
    const key = this.stepKey('r', live.counts.r - 1)
    const node = this.get(key) as ThinkingNode | undefined
    if (node?.streaming) this.replace({ ...node, streaming: false, ...this.thinkingDuration(live) })
  }

  private thinkingDuration(live: LiveStep | undefined): { durationMs?: number } {
    if (!live || live.reasoningStart === undefined || live.reasoningEnd === undefined) return {}
    return { durationMs: live.reasoningEnd - live.reasoningStart }
  }

  /** The committed message replaces the step's provisional nodes, under the same keys. */
  private onAssistantMessage(event: WireEvent, data: Record<string, any>): void {
    const live = this.live && this.live.turn === this.turn && this.live.step === this.step ? this.live : undefined
    const blocks: Block[] = Array.isArray(data.message?.content) ? data.message.content : []
    const interrupted = data.interrupted === true
    const counts = { r: 0, t: 0 }
    const fresh: ConversationNode[] = []
    const duration = this.thinkingDuration(live)
    for (const block of blocks) {
      if (block.type === 'reasoning') {
        const key = this.stepKey('r', counts.r++)
        const prior = this.get(key) as ThinkingNode | undefined
        fresh.push({
          kind: 'thinking',
          key,
          turn: this.turn,
          step: this.step,
          text: block.text ?? '',
          streaming: false,
          ...(prior?.durationMs !== undefined ? { durationMs: prior.durationMs } : duration),
        })
      } else if (block.type === 'text') {
        fresh.push({
          kind: 'assistant',
          key: this.stepKey('t', counts.t++),
          turn: this.turn,
          step: this.step,
          text: block.text ?? '',
          streaming: false,
          interrupted,
        })
      } else if (block.type === 'tool-call') {
        const key = this.callKey(block.callId, true)
        const prior = this.get(key) as ToolNode | undefined
        const raw = block.arguments ?? ''
        const input = parseArguments(raw)
        fresh.push({
          kind: 'tool',
          key,
          turn: this.turn,
          step: this.step,
          callId: String(block.callId),
          name: String(block.name),
          arguments: raw,
          ...(input ? { input } : {}),
          status: prior && prior.status !== 'streaming' ? prior.status : interrupted ? 'cancelled' : 'running',
          ...(prior?.result ? { result: prior.result } : {}),
        })
      }
    }
    // Remove the provisional nodes (they sit at the tail), then append the committed ones.
    const keys = new Set(live?.keys ?? [])
    for (const node of fresh) keys.add(node.key)
    const keep = this.nodes.filter((n) => !keys.has(n.key))
    // Reuse a provisional node object when the committed one renders the same.
    const reused = fresh.map((node) => {
      const prior = this.get(node.key)
      return prior && sameNode(prior, node) ? prior : node
    })
    this.nodes = [...keep, ...reused]
    this.reindex()
    this.live = undefined
    const usage = data.usage as UsageTotals | undefined
    if (usage) {
      for (const k of ['input', 'output', 'cacheRead', 'cacheWrite', 'reasoning'] as const)
        this.usage[k] += Number(usage[k] ?? 0)
      this.usageView = undefined
      this.lastInputTokens = Number(usage.input ?? 0) + Number(usage.cacheRead ?? 0) + Number(usage.cacheWrite ?? 0)
    }
    void event
  }

  private onToolCall(event: WireEvent, data: Record<string, any>): void {
    const key = this.callKey(data.callId, true)
    const node = this.get(key) as ToolNode | undefined
    const raw = String(data.arguments ?? '')
    const input = parseArguments(raw)
    if (node) {
      this.replace({
        ...node,
        arguments: raw,
        ...(input ? { input } : {}),
        status: node.status === 'streaming' ? 'running' : node.status,
        startedAt: event.time,
      })
      return
    }
    this.push({
      kind: 'tool',
      key,
      turn: this.turn,
      step: this.step,
      callId: String(data.callId),
      name: String(data.name),
      arguments: raw,
      ...(input ? { input } : {}),
      status: 'running',
      startedAt: event.time,
    })
  }

  private onToolResult(event: WireEvent, data: Record<string, any>): void {
    const message = data.message ?? {}
    const key = this.callKey(message.callId, false)
    const { text, images } = textOf(message.content)
    const isError = message.isError === true || data.error !== undefined
    const result: ToolResultView = {
      text,
      images,
      isError,
      ...(data.error ? { error: { code: String(data.error.code), message: String(data.error.message) } } : {}),
      ...(data.meta && typeof data.meta === 'object' ? { meta: data.meta as JsonObject } : {}),
    }
    const status = isError
      ? data.error?.code === 'CANCELLED' || data.error?.code === 'ABORTED'
        ? 'cancelled'
        : 'error'
      : 'done'
    const node = this.get(key) as ToolNode | undefined
    if (node) {
      this.replace({ ...node, status, result, endedAt: event.time })
      return
    }
    this.push({
      kind: 'tool',
      key,
      turn: this.turn,
      step: this.step,
      callId: String(message.callId),
      name: String(message.name ?? '?'),
      arguments: '',
      status,
      result,
      endedAt: event.time,
    })
  }

  private onTurnEnd(event: WireEvent, data: Record<string, any>): void {
    this.finishLive()
    // Calls that never got a result were stopped with the turn.
    for (const node of this.nodes) {
      if (
        node.kind === 'tool' &&
        node.turn === data.turn &&
        (node.status === 'running' || node.status === 'streaming')
      ) {
        this.replace({ ...node, status: 'cancelled' })
      }
    }
    this.turnRunning = false
    const rejected = Array.isArray(data.rejected)
      ? data.rejected.map((r: { content: unknown }) => textOf(r.content).text)
      : []
    if (data.reason !== 'completed' || rejected.length > 0) {
      this.push({
        kind: 'turn-end',
        key: `e${event.seq}`,
        turn: Number(data.turn),
        reason: String(data.reason),
        ...(data.error ? { error: { code: String(data.error.code), message: String(data.error.message) } } : {}),
        rejected,
      })
    }
  }

  /** A step ended (or the turn did) without a committed message: freeze what streamed. */
  private finishLive(): void {
    const live = this.live
    if (!live) return
    for (const key of live.keys) {
      const node = this.get(key)
      if (!node) continue
      if ((node.kind === 'thinking' || node.kind === 'assistant') && node.streaming) {
        this.replace({
          ...node,
          streaming: false,
          ...(node.kind === 'assistant' ? { interrupted: true } : this.thinkingDuration(live)),
        } as ConversationNode)
      }
    }
    this.live = undefined
  }

  private setQueuedOnHost(count: number): void {
    this.queuedOnHost = count
    // The host runs queued prompts oldest first; ones it no longer holds were claimed or dropped.
    if (this.queued.length > count) this.queued = this.queued.slice(this.queued.length - count)
  }

  // ---- node list ----

  private get(key: string): ConversationNode | undefined {
    const at = this.index.get(key)
    return at === undefined ? undefined : this.nodes[at]
  }

  private push(node: ConversationNode): void {
    this.index.set(node.key, this.nodes.length)
    this.nodes.push(node)
  }

  private replace(node: ConversationNode): void {
    const at = this.index.get(node.key)
    if (at === undefined) this.push(node)
    else this.nodes[at] = node
  }

  private reindex(): void {
    this.index.clear()
    this.nodes.forEach((node, i) => {
      this.index.set(node.key, i)
    })
  }
}

function sameNode(a: ConversationNode, b: ConversationNode): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)])
  for (const key of keys) {
    if (key === 'preview') continue // only shown while streaming
    if ((a as unknown as Record<string, unknown>)[key] !== (b as unknown as Record<string, unknown>)[key]) {
      if (key === 'input' && JSON.stringify((a as ToolNode).input) === JSON.stringify((b as ToolNode).input)) continue
      return false
    }
  }
  return true
}

/** Folds frames (or bare log events) into a fresh model's snapshot. */
export function foldConversation(items: ReadonlyArray<SessionStreamEvent | WireEvent>): ConversationSnapshot {
  const model = new ConversationModel()
  model.batch(() => {
    for (const item of items) {
      if ('event' in item) model.applyFrame(item)
      else model.applyEvent(item)
    }
  })
  return model.snapshot()
}
