// The folds of the conversation model: how each log event changes the view state, as functions of
// an explicit state record (FoldState) and the event. ConversationModel (conversation.ts) owns one
// record and adds what is not folded from the log: the gap check, the stream's state frames
// (status, approvals, questions), the snapshot and the listeners. A fold mutates the record in
// place (the nodes array, a few maps) so a long streamed answer does not allocate per delta;
// nodes themselves are replaced, never mutated, so snapshots keep unchanged nodes' identity.
import type { WireEvent } from '@dsh/web-protocol'
import { imageView } from './images.ts'
import type {
  ConversationNode,
  ImageView,
  JsonObject,
  QueuedPrompt,
  ThinkingNode,
  TodoItem,
  ToolNode,
  ToolResultView,
  UsageTotals,
} from './types.ts'

type Block = {
  type: string
  text?: string
  callId?: string
  name?: string
  arguments?: string
  mediaType?: unknown
  data?: unknown
}

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

export const emptyUsage = (): UsageTotals => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 })

export function parseArguments(raw: string): JsonObject | undefined {
  if (!raw.trim().startsWith('{')) return undefined
  try {
    const value = JSON.parse(raw) as unknown
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : undefined
  } catch {
    return undefined
  }
}

const blocksOf = (content: unknown): Block[] =>
  Array.isArray(content) ? (content as Block[]).filter((b) => b !== null && typeof b === 'object') : []
const textOf = (content: unknown): string =>
  blocksOf(content)
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('\n')
const imagesOf = (content: unknown): ImageView[] =>
  blocksOf(content)
    .filter((b) => b.type === 'image')
    .map(imageView)

/** How long a thinking node's `preview` (the end of its text) is kept, in characters. */
export const PREVIEW_CHARS = 240
const clip = (text: string) => (text.length > PREVIEW_CHARS ? text.slice(-PREVIEW_CHARS) : text)

/** The view state folded from the log (and the prompts this view queued, which the log claims). */
export interface FoldState {
  nodes: ConversationNode[]
  index: Map<string, number>
  turnRunning: boolean
  turn: number
  step: number
  /** The key of the latest call with each id (see callKey). */
  readonly callKeys: Map<string, { key: string; turn: number; step: number; uses: number }>
  live: LiveStep | undefined
  queued: QueuedPrompt[]
  queuedOnHost: number
  todos: TodoItem[] | undefined
  title: string | undefined
  model: { provider: string; model: string } | undefined
  usage: UsageTotals
  /** The usage object snapshots share until the totals change. */
  usageView: UsageTotals | undefined
  lastInputTokens: number | undefined
  /**
   * Streamed text not yet in its node: the deltas that continued the same thinking or answer
   * node since it was last written. A delta only appends here; the node gets the joined text
   * (one new node object, one concatenation, one preview cut) when anything reads the nodes
   * (a snapshot, or any other event). Per delta that is one array slot instead of a new node,
   * a rope cell and a preview string, the garbage that made the scavenges and the final major
   * GC of a 100,000-delta answer long.
   */
  open: { key: string; kind: 'r' | 't'; live: LiveStep; parts: string[] } | undefined
}

export function createFoldState(): FoldState {
  return {
    nodes: [],
    index: new Map(),
    turnRunning: false,
    turn: -1,
    step: 0,
    callKeys: new Map(),
    live: undefined,
    queued: [],
    queuedOnHost: 0,
    todos: undefined,
    title: undefined,
    model: undefined,
    usage: emptyUsage(),
    usageView: undefined,
    lastInputTokens: undefined,
    open: undefined,
  }
}

export function foldEvent(s: FoldState, event: WireEvent): void {
  const data = (event.data ?? {}) as Record<string, any>
  if (s.open && event.type !== 'assistant/chunk') settleOpen(s)
  switch (event.type) {
    case 'turn/start':
      s.turn = data.turn
      s.step = 0
      s.turnRunning = true
      break
    case 'step/start':
      s.turn = data.turn
      s.step = data.step
      s.live = undefined
      break
    case 'step/end':
      finishLive(s)
      break
    case 'turn/end':
      onTurnEnd(s, event, data)
      break
    case 'user/message':
      onUserMessage(s, event, data)
      break
    case 'assistant/chunk':
      onChunk(s, event, data.chunk)
      break
    case 'assistant/message':
      onAssistantMessage(s, event, data)
      break
    case 'tool/call':
      onToolCall(s, event, data)
      break
    case 'tool/result':
      onToolResult(s, event, data)
      break
    case 'tool/progress':
      onToolProgress(s, data)
      break
    case 'todo/write':
      if (Array.isArray(data.todos)) s.todos = data.todos as TodoItem[]
      break
    case 'session/title':
      if (typeof data.title === 'string') s.title = data.title
      break
    case 'request/header':
      s.model = { provider: String(data.provider), model: String(data.model) }
      break
    case 'seed/end':
      push(s, {
        kind: 'notice',
        key: `n${event.seq}`,
        seq: event.seq,
        code: 'seeded',
        ...(data.fromSession ? { detail: String(data.fromSession) } : {}),
      })
      break
    case 'compaction/end':
      push(s, {
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

function onUserMessage(s: FoldState, event: WireEvent, data: Record<string, any>): void {
  const text = textOf(data.content)
  const source = data.source ?? { kind: 'human' }
  if (source.kind === 'human') {
    const images = imagesOf(data.content)
    push(s, { kind: 'user', key: `u${event.seq}`, seq: event.seq, turn: s.turn, text, images, time: event.time })
    // The first queued prompt with this text has been claimed.
    const at = s.queued.findIndex((q) => q.text === text)
    if (at >= 0) s.queued = s.queued.filter((_, i) => i !== at)
    return
  }
  const origin = source.kind === 'plugin' ? `plugin:${source.plugin}` : 'system'
  push(s, {
    kind: 'context',
    key: `c${event.seq}`,
    seq: event.seq,
    turn: s.turn,
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
function callKey(s: FoldState, callId: unknown, introduce: boolean): string {
  const id = String(callId)
  const known = s.callKeys.get(id)
  if (known && (!introduce || (known.turn === s.turn && known.step === s.step))) return known.key
  if (!introduce) return `tool:${id}`
  const uses = (known?.uses ?? 0) + 1
  const key = uses === 1 ? `tool:${id}` : `tool:${id}#${uses}`
  s.callKeys.set(id, { key, turn: s.turn, step: s.step, uses })
  return key
}

function liveStep(s: FoldState): LiveStep {
  if (!s.live || s.live.turn !== s.turn || s.live.step !== s.step) {
    s.live = { turn: s.turn, step: s.step, keys: [], counts: { r: 0, t: 0 }, toolIndex: new Map() }
  }
  return s.live
}

function stepKey(s: FoldState, kind: string, n: number): string {
  return `s${s.turn}.${s.step}:${kind}${n}`
}

function onChunk(s: FoldState, event: WireEvent, chunk: Record<string, any> | undefined): void {
  if (!chunk) return
  const live = liveStep(s)
  switch (chunk.kind) {
    case 'reasoning-delta':
    case 'text-delta': {
      const kind = chunk.kind === 'reasoning-delta' ? 'r' : 't'
      const text = String(chunk.text ?? '')
      if (kind === 'r') {
        live.reasoningStart ??= event.time
        live.reasoningEnd = event.time
      }
      const open = s.open
      if (open && open.live === live && open.kind === kind && live.lastKind === kind) {
        open.parts.push(text)
        return
      }
      settleOpen(s)
      if (kind === 't' && live.lastKind === 'r') {
        closeThinking(s, live)
      }
      if (live.lastKind !== kind) {
        live.lastKind = kind
        const key = stepKey(s, kind, live.counts[kind]++)
        live.keys.push(key)
        if (kind === 'r')
          push(s, {
            kind: 'thinking',
            key,
            turn: s.turn,
            step: s.step,
            text,
            preview: clip(text),
            streaming: true,
          })
        else
          push(s, {
            kind: 'assistant',
            key,
            turn: s.turn,
            step: s.step,
            text,
            streaming: true,
            interrupted: false,
          })
        return
      }
      const key = stepKey(s, kind, live.counts[kind] - 1)
      if (nodeAt(s, key)) s.open = { key, kind, live, parts: [text] }
      return
    }
    case 'tool-call-start': {
      settleOpen(s)
      if (live.lastKind === 'r') closeThinking(s, live)
      live.lastKind = undefined
      const key = callKey(s, chunk.callId, true)
      live.toolIndex.set(chunk.index, key)
      live.keys.push(key)
      if (!nodeAt(s, key))
        push(s, {
          kind: 'tool',
          key,
          turn: s.turn,
          step: s.step,
          callId: String(chunk.callId),
          name: String(chunk.name),
          arguments: '',
          status: 'streaming',
        })
      return
    }
    case 'tool-call-delta': {
      settleOpen(s)
      const key = live.toolIndex.get(chunk.index)
      const node = key ? (nodeAt(s, key) as ToolNode | undefined) : undefined
      if (node) replace(s, { ...node, arguments: node.arguments + String(chunk.argumentsDelta ?? '') })
      return
    }
    case 'usage':
      return
    default:
      return
  }
}

/** Writes the held deltas into their node (see `open`). */
export function settleOpen(s: FoldState): void {
  const open = s.open
  if (!open) return
  s.open = undefined
  const node = nodeAt(s, open.key)
  if (node?.kind !== 'thinking' && node?.kind !== 'assistant') return
  const added = open.parts.length === 1 ? open.parts[0] : open.parts.join('')
  // `node.text + added` stays a rope (one cell per write, not per delta) until someone reads the
  // whole text; the thinking row shows `preview` (bounded).
  if (node.kind === 'thinking')
    replace(s, { ...node, text: node.text + added, preview: clip((node.preview ?? '') + added) })
  else replace(s, { ...node, text: node.text + added })
}

function closeThinking(s: FoldState, live: LiveStep): void {
  const key = stepKey(s, 'r', live.counts.r - 1)
  const node = nodeAt(s, key) as ThinkingNode | undefined
  if (node?.streaming) replace(s, { ...node, streaming: false, ...thinkingDuration(s, live) })
}

function thinkingDuration(s: FoldState, live: LiveStep | undefined): { durationMs?: number } {
  if (!live || live.reasoningStart === undefined || live.reasoningEnd === undefined) return {}
  return { durationMs: live.reasoningEnd - live.reasoningStart }
}

/** The committed message replaces the step's provisional nodes, under the same keys. */
function onAssistantMessage(s: FoldState, event: WireEvent, data: Record<string, any>): void {
  const live = s.live && s.live.turn === s.turn && s.live.step === s.step ? s.live : undefined
  const blocks: Block[] = Array.isArray(data.message?.content) ? data.message.content : []
  const interrupted = data.interrupted === true
  const counts = { r: 0, t: 0 }
  const fresh: ConversationNode[] = []
  const duration = thinkingDuration(s, live)
  for (const block of blocks) {
    if (block.type === 'reasoning') {
      const key = stepKey(s, 'r', counts.r++)
      const prior = nodeAt(s, key) as ThinkingNode | undefined
      fresh.push({
        kind: 'thinking',
        key,
        turn: s.turn,
        step: s.step,
        text: block.text ?? '',
        streaming: false,
        ...(prior?.durationMs !== undefined ? { durationMs: prior.durationMs } : duration),
      })
    } else if (block.type === 'text') {
      fresh.push({
        kind: 'assistant',
        key: stepKey(s, 't', counts.t++),
        turn: s.turn,
        step: s.step,
        text: block.text ?? '',
        streaming: false,
        interrupted,
        seq: event.seq,
      })
    } else if (block.type === 'tool-call') {
      const key = callKey(s, block.callId, true)
      const prior = nodeAt(s, key) as ToolNode | undefined
      const raw = block.arguments ?? ''
      const input = parseArguments(raw)
      fresh.push({
        kind: 'tool',
        key,
        turn: s.turn,
        step: s.step,
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
  const keep = s.nodes.filter((n) => !keys.has(n.key))
  // Reuse a provisional node object when the committed one renders the same.
  const reused = fresh.map((node) => {
    const prior = nodeAt(s, node.key)
    return prior && sameNode(prior, node) ? prior : node
  })
  s.nodes = [...keep, ...reused]
  reindex(s)
  s.live = undefined
  const usage = data.usage as UsageTotals | undefined
  if (usage) {
    for (const k of ['input', 'output', 'cacheRead', 'cacheWrite', 'reasoning'] as const)
      s.usage[k] += Number(usage[k] ?? 0)
    s.usageView = undefined
    s.lastInputTokens = Number(usage.input ?? 0) + Number(usage.cacheRead ?? 0) + Number(usage.cacheWrite ?? 0)
  }
  void event
}

function onToolCall(s: FoldState, event: WireEvent, data: Record<string, any>): void {
  const key = callKey(s, data.callId, true)
  const node = nodeAt(s, key) as ToolNode | undefined
  const raw = String(data.arguments ?? '')
  const input = parseArguments(raw)
  if (node) {
    replace(s, {
      ...node,
      arguments: raw,
      ...(input ? { input } : {}),
      status: node.status === 'streaming' ? 'running' : node.status,
      startedAt: event.time,
    })
    return
  }
  push(s, {
    kind: 'tool',
    key,
    turn: s.turn,
    step: s.step,
    callId: String(data.callId),
    name: String(data.name),
    arguments: raw,
    ...(input ? { input } : {}),
    status: 'running',
    startedAt: event.time,
  })
}

/** A running call's latest progress (`tool/progress`, e.g. an MCP server's notifications/progress). */
function onToolProgress(s: FoldState, data: Record<string, any>): void {
  const node = nodeAt(s, callKey(s, data.callId, false)) as ToolNode | undefined
  if (!node || node.kind !== 'tool' || typeof data.progress !== 'number') return
  replace(s, {
    ...node,
    progress: {
      progress: data.progress,
      ...(typeof data.total === 'number' ? { total: data.total } : {}),
      ...(typeof data.message === 'string' && data.message !== '' ? { message: data.message } : {}),
    },
  })
}

function onToolResult(s: FoldState, event: WireEvent, data: Record<string, any>): void {
  const message = data.message ?? {}
  const key = callKey(s, message.callId, false)
  const text = textOf(message.content)
  const images = imagesOf(message.content)
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
  const node = nodeAt(s, key) as ToolNode | undefined
  if (node) {
    replace(s, { ...node, status, result, endedAt: event.time })
    return
  }
  push(s, {
    kind: 'tool',
    key,
    turn: s.turn,
    step: s.step,
    callId: String(message.callId),
    name: String(message.name ?? '?'),
    arguments: '',
    status,
    result,
    endedAt: event.time,
  })
}

function onTurnEnd(s: FoldState, event: WireEvent, data: Record<string, any>): void {
  finishLive(s)
  // Calls that never got a result were stopped with the turn.
  for (const node of s.nodes) {
    if (node.kind === 'tool' && node.turn === data.turn && (node.status === 'running' || node.status === 'streaming')) {
      replace(s, { ...node, status: 'cancelled' })
    }
  }
  s.turnRunning = false
  const rejected = Array.isArray(data.rejected) ? data.rejected.map((r: { content: unknown }) => textOf(r.content)) : []
  if (data.reason !== 'completed' || rejected.length > 0) {
    push(s, {
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
function finishLive(s: FoldState): void {
  const live = s.live
  if (!live) return
  for (const key of live.keys) {
    const node = nodeAt(s, key)
    if (!node) continue
    if ((node.kind === 'thinking' || node.kind === 'assistant') && node.streaming) {
      replace(s, {
        ...node,
        streaming: false,
        ...(node.kind === 'assistant' ? { interrupted: true } : thinkingDuration(s, live)),
      } as ConversationNode)
    }
  }
  s.live = undefined
}

export function setQueuedOnHost(s: FoldState, count: number): void {
  s.queuedOnHost = count
  // The host runs queued prompts oldest first; ones it no longer holds were claimed or dropped.
  if (s.queued.length > count) s.queued = s.queued.slice(s.queued.length - count)
}

// ---- node list ----

function nodeAt(s: FoldState, key: string): ConversationNode | undefined {
  const at = s.index.get(key)
  return at === undefined ? undefined : s.nodes[at]
}

function push(s: FoldState, node: ConversationNode): void {
  s.index.set(node.key, s.nodes.length)
  s.nodes.push(node)
}

function replace(s: FoldState, node: ConversationNode): void {
  const at = s.index.get(node.key)
  if (at === undefined) push(s, node)
  else s.nodes[at] = node
}

function reindex(s: FoldState): void {
  s.index.clear()
  s.nodes.forEach((node, i) => {
    s.index.set(node.key, i)
  })
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
