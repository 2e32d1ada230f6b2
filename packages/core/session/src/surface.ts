// The surface: an ordered projection of the message-producing events of one session log.
//
// Node kinds and the message each contributes:
//   user/message       -> { role: 'user', content }
//   assistant/message  -> data.message, as-is, also when `interrupted: true` (the streamed prefix
//                         the model produced is part of the history it will see next), except that
//                         a tool call whose `arguments` exceed the replay limit is projected as a
//                         bounded excerpt plus a marker (see `boundToolArguments`)
//   tool/result        -> data.message
//   surface/replace    -> one node per replacement message, standing in for every node produced by
//                         events in [fromSeq, toSeq) (including earlier replacements fully inside it)
// Every other event type is not message-producing.
import type { AssistantMessage, ContentBlock, Message } from '@dsh/llm'
import type { AnySessionEvent, SessionEvent, SessionEventMap } from './types.ts'

/** Default replay limit for one tool call's `arguments` string, in UTF-16 code units. */
export const DEFAULT_MAX_TOOL_ARGUMENT_CHARS = 100_000
/** Most characters of an oversized `arguments` string kept as the excerpt. */
export const TOOL_ARGUMENT_EXCERPT_CHARS = 1_000
/** Key of the marker object that stands in for oversized arguments. */
export const OMITTED_ARGUMENTS_KEY = 'dsh_arguments_omitted'

const group = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')

/**
 * The `arguments` string replayed for a call whose real arguments are longer than `max`: a JSON
 * object (adapters that need an object can parse it) with a note and the first characters.
 */
export function omittedArguments(raw: string, max: number): string {
  let excerpt = raw.slice(0, Math.min(TOOL_ARGUMENT_EXCERPT_CHARS, max))
  // Never end on half a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(excerpt)) excerpt = excerpt.slice(0, -1)
  return JSON.stringify({
    [OMITTED_ARGUMENTS_KEY]:
      `These arguments were ${group(raw.length)} characters long, over the ${group(max)}-character replay limit, so only ` +
      `the first ${group(excerpt.length)} are shown here. The tool received them whole; the session log keeps them.`,
    excerpt,
  })
}

/**
 * `message` with every tool call whose `arguments` exceed `max` characters projected by
 * `omittedArguments`; the same object when nothing is over the limit.
 */
export function boundToolArguments<M extends Message>(message: M, max: number): M {
  if (message.role !== 'assistant') return message
  const over = (b: ContentBlock) => b.type === 'tool-call' && b.arguments.length > max
  if (!message.content.some(over)) return message
  const content = message.content.map((b) =>
    b.type === 'tool-call' && over(b) ? Object.freeze({ ...b, arguments: omittedArguments(b.arguments, max) }) : b,
  )
  return Object.freeze({ ...(message as AssistantMessage), content: Object.freeze(content) }) as unknown as M
}

export type SurfaceNodeKind = 'user/message' | 'assistant/message' | 'tool/result' | 'surface/replace'

export interface SurfaceNode {
  /** Seq of the event that produced the node (for a replacement: the `surface/replace` event). */
  readonly seq: number
  readonly kind: SurfaceNodeKind
  readonly message: Message
  /** Set on replacement nodes: the raw range `[fromSeq, toSeq)` they stand in for. */
  readonly replaces?: { readonly fromSeq: number; readonly toSeq: number }
}

export type SurfaceReplaceData = SessionEventMap['surface/replace']

/** Where a node sits on the log's timeline: its own seq, or the start of the range it replaces. */
const position = (node: SurfaceNode): number => node.replaces?.fromSeq ?? node.seq

/**
 * The message an event contributes, or `undefined` when it is not message-producing. Tool-call
 * arguments longer than `maxToolArgumentChars` are replaced by a bounded excerpt and a marker.
 */
export function messageOf(
  event: AnySessionEvent,
  maxToolArgumentChars = DEFAULT_MAX_TOOL_ARGUMENT_CHARS,
): Message | undefined {
  switch (event.type) {
    case 'user/message':
      return Object.freeze({ role: 'user', content: event.data.content }) as Message
    case 'assistant/message':
      return boundToolArguments(event.data.message, maxToolArgumentChars)
    case 'tool/result':
      return event.data.message
    default:
      return undefined
  }
}

/**
 * Why a `surface/replace` payload cannot apply to `nodes` at log length `length`, or `undefined`.
 * A range must satisfy `0 <= fromSeq <= toSeq <= length` and must not cut the nodes of an earlier
 * replacement in two (it may contain them whole, which re-compacts them). An earlier replacement
 * with no messages left no nodes, so there is nothing to cut.
 */
export function checkReplace(
  nodes: readonly SurfaceNode[],
  data: SurfaceReplaceData,
  length: number,
): { path: string; reason: string } | undefined {
  const { fromSeq, toSeq } = data
  if (!Number.isSafeInteger(fromSeq) || fromSeq < 0)
    return { path: 'data.fromSeq', reason: 'must be a non-negative integer' }
  if (!Number.isSafeInteger(toSeq) || toSeq < fromSeq)
    return { path: 'data.toSeq', reason: `must be an integer >= fromSeq (${fromSeq})` }
  if (toSeq > length) return { path: 'data.toSeq', reason: `is past the end of the log (length ${length})` }
  if (!Array.isArray(data.messages)) return { path: 'data.messages', reason: 'must be an array of messages' }
  for (let i = 0; i < data.messages.length; i++) {
    const message = data.messages[i] as Partial<Message> | null
    if (
      !message ||
      (message.role !== 'user' && message.role !== 'assistant' && message.role !== 'tool') ||
      !Array.isArray(message.content)
    ) {
      return { path: `data.messages[${i}]`, reason: 'is not a user, assistant or tool message' }
    }
  }
  for (const node of nodes) {
    if (!node.replaces) continue
    const inside = node.replaces.fromSeq >= fromSeq && node.replaces.toSeq <= toSeq
    const disjoint = node.replaces.toSeq <= fromSeq || node.replaces.fromSeq >= toSeq
    // An empty earlier range at the very edge counts as disjoint; otherwise it must be whole.
    if (!inside && !disjoint) {
      return {
        path: 'data.fromSeq',
        reason: `range [${fromSeq}, ${toSeq}) cuts the earlier replacement of [${node.replaces.fromSeq}, ${node.replaces.toSeq}) (seq ${node.seq})`,
      }
    }
  }
  return undefined
}

function replacementNodes(seq: number, data: SurfaceReplaceData, max: number): SurfaceNode[] {
  const replaces = Object.freeze({ fromSeq: data.fromSeq, toSeq: data.toSeq })
  return data.messages.map((message) =>
    Object.freeze({ seq, kind: 'surface/replace' as const, message: boundToolArguments(message, max), replaces }),
  )
}

/** Index of the first node whose position is >= `seq` (nodes are sorted by position). */
function lowerBound(nodes: readonly SurfaceNode[], seq: number): number {
  let lo = 0
  let hi = nodes.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (position(nodes[mid]) < seq) lo = mid + 1
    else hi = mid
  }
  return lo
}

/**
 * The live surface of one session, maintained incrementally by `Session.append`.
 * Appending a message-producing event costs O(1); a replacement costs O(nodes) (rare).
 */
export class SessionSurface {
  private readonly list: SurfaceNode[] = []
  private readonly history: Message[] = []
  private snapshot: Message[] | undefined
  private revision = 0

  constructor(
    private readonly appendReplace: (data: SurfaceReplaceData) => AnySessionEvent,
    /** Replay limit for tool-call arguments (see `messageOf`). */
    readonly maxToolArgumentChars = DEFAULT_MAX_TOOL_ARGUMENT_CHARS,
  ) {}

  /** The nodes in model order. Read-only view of the live array. */
  get nodes(): readonly SurfaceNode[] {
    return this.list
  }

  get length(): number {
    return this.list.length
  }

  /** Increments whenever the surface changes. */
  get version(): number {
    return this.revision
  }

  /**
   * The LLM history: a fresh frozen array of the nodes' messages (messages are the frozen log
   * objects). Recomputed only when the surface changed since the previous call.
   */
  messages(): Message[] {
    this.snapshot ??= Object.freeze(this.history.slice()) as Message[]
    return this.snapshot
  }

  /**
   * Replaces, on the surface only, the nodes produced by events `fromSeq <= seq < toSeq` with
   * `replacement` (the raw log keeps every event). The replacement is itself logged as a
   * `surface/replace` event, so a replay or fork of the log reproduces the same surface and the
   * model-visible history stays reconstructable from the log. `meta` is free-form lossless JSON
   * (e.g. `{ by: '@dsh/compaction', summaryOf: 120 }`). Throws `SessionAppendError` for a range
   * that is out of bounds or cuts an earlier replacement. Returns the logged event.
   *
   * The caller is responsible for keeping tool calls and their results together: a range that
   * drops an assistant tool call but keeps its result (or the reverse) yields a history that
   * providers reject.
   */
  replaceRange(
    fromSeq: number,
    toSeq: number,
    replacement: Message[],
    meta?: { [key: string]: unknown },
  ): SessionEvent<'surface/replace'> {
    const data: SurfaceReplaceData =
      meta === undefined ? { fromSeq, toSeq, messages: replacement } : { fromSeq, toSeq, messages: replacement, meta }
    return this.appendReplace(data) as SessionEvent<'surface/replace'>
  }

  /** @internal Called by `Session` for every appended event, in order. */
  ingest(event: AnySessionEvent): void {
    if (event.type === 'surface/replace') {
      const { fromSeq, toSeq } = event.data
      const start = lowerBound(this.list, fromSeq)
      const end = lowerBound(this.list, toSeq)
      const nodes = replacementNodes(event.seq, event.data, this.maxToolArgumentChars)
      this.list.splice(start, end - start, ...nodes)
      this.history.splice(start, end - start, ...nodes.map((node) => node.message))
      this.changed()
      return
    }
    const message = messageOf(event, this.maxToolArgumentChars)
    if (message === undefined) return
    this.list.push(Object.freeze({ seq: event.seq, kind: event.type as SurfaceNodeKind, message }))
    this.history.push(message)
    this.changed()
  }

  private changed(): void {
    this.snapshot = undefined
    this.revision++
  }
}

/**
 * Reference derivation: scans `events` from scratch and returns the history the surface would
 * hold after them. O(events); used by invariants and tests as an independent re-derivation.
 */
export function deriveMessagesFromEvents(
  events: readonly AnySessionEvent[],
  maxToolArgumentChars = DEFAULT_MAX_TOOL_ARGUMENT_CHARS,
): Message[] {
  let nodes: SurfaceNode[] = []
  for (const event of events) {
    if (event.type === 'surface/replace') {
      const { fromSeq, toSeq } = event.data
      const before = nodes.filter((node) => position(node) < fromSeq)
      const after = nodes.filter((node) => position(node) >= toSeq)
      nodes = [...before, ...replacementNodes(event.seq, event.data, maxToolArgumentChars), ...after]
      continue
    }
    const message = messageOf(event, maxToolArgumentChars)
    if (message !== undefined) nodes.push({ seq: event.seq, kind: event.type as SurfaceNodeKind, message })
  }
  return nodes.map((node) => node.message)
}
