// Pure helpers estimating the size of the next request, shared by compaction backends and the
// tool-result pruner. They take the estimator and the provider's last reported input size as
// arguments, so the seam needs no token-meter dependency.
import type { Message, ToolSchema } from '@dsh/llm'
import type { Session, SurfaceNode } from '@dsh/session'

/** Tokens counted for one image block (providers bill images far above their base64 length / 4). */
export const IMAGE_TOKENS = 1_600
/** Per-message framing tokens (role markers and separators). */
export const MESSAGE_OVERHEAD_TOKENS = 4

export type Estimator = (text: string) => number

// Messages in the log are frozen and shared, so their estimate is computed once per estimator.
const cache = new WeakMap<Estimator, WeakMap<object, number>>()

/** Estimated tokens of one message. Cached per (estimator, message object). */
export function messageTokens(message: Message, estimate: Estimator): number {
  let perEstimator = cache.get(estimate)
  if (!perEstimator) cache.set(estimate, (perEstimator = new WeakMap()))
  const hit = perEstimator.get(message)
  if (hit !== undefined) return hit
  let tokens = MESSAGE_OVERHEAD_TOKENS
  for (const block of message.content) {
    switch (block.type) {
      case 'text':
      case 'reasoning':
        tokens += estimate(block.text)
        break
      case 'tool-call':
        tokens += estimate(block.name) + estimate(block.arguments)
        break
      case 'image':
        tokens += IMAGE_TOKENS
        break
    }
  }
  if (Object.isFrozen(message)) perEstimator.set(message, tokens)
  return tokens
}

// The logged `request/header` is frozen and stays the session's header until the prompt or the
// tools change, while every step measures it (a JSON of all tool schemas, ~20 KB): once per
// estimator and header object.
const headerCache = new WeakMap<Estimator, WeakMap<object, number>>()

/** Estimated tokens of the system prompt and tool schemas of a request header. Cached per (estimator, frozen header). */
export function headerTokens(
  header: { system?: string; tools?: ToolSchema[] } | undefined,
  estimate: Estimator,
): number {
  if (!header) return 0
  let perEstimator = headerCache.get(estimate)
  if (!perEstimator) headerCache.set(estimate, (perEstimator = new WeakMap()))
  const hit = perEstimator.get(header)
  if (hit !== undefined) return hit
  const tokens = estimate(header.system ?? '') + (header.tools?.length ? estimate(JSON.stringify(header.tools)) : 0)
  // Only a header that cannot change under the cache (the log deep-freezes its events).
  if (
    Object.isFrozen(header) &&
    (header.tools === undefined ||
      (Object.isFrozen(header.tools) && header.tools.every((tool) => Object.isFrozen(tool))))
  ) {
    perEstimator.set(header, tokens)
  }
  return tokens
}

export interface MeasureOptions {
  estimate: Estimator
  /** Prompt tokens the provider reported for the most recent request (`tokenMeter.lastRequestInput`). */
  lastRequestInput?: number
  /** Messages the next request will carry beyond the current surface. */
  pending?: readonly Message[]
}

/**
 * Estimated prompt tokens of the next request of `session`: the last `request/header` plus the
 * surface plus `pending`. When the provider reported the input of the last request and the
 * surface was not rewritten since, the result is at least that figure plus what was appended
 * after it (the provider's count beats the heuristic; the heuristic covers the tail).
 */
export function measureNextRequest(session: Session, options: MeasureOptions): number {
  const { estimate } = options
  const nodes = session.surface.nodes
  const header = session.last('request/header')?.data
  const surface = surfaceTokens(session, estimate)
  let pending = 0
  for (const message of options.pending ?? []) pending += messageTokens(message, estimate)
  const estimated = headerTokens(header, estimate) + surface + pending
  const lastAssistant = session.last('assistant/message')
  const lastReplace = session.last('surface/replace')
  if (options.lastRequestInput === undefined || !lastAssistant?.data.usage) return estimated
  if (lastReplace && lastReplace.seq > lastAssistant.seq) return estimated
  // Everything from the answer of the last request on was not part of its input.
  let tail = 0
  for (let i = nodes.length - 1; i >= 0 && nodes[i].seq >= lastAssistant.seq; i--)
    tail += messageTokens(nodes[i].message, estimate)
  return Math.max(estimated, options.lastRequestInput + tail + pending)
}

// The surface's total, kept per (estimator, surface) and extended by the nodes appended since the
// last call, so a step costs O(new nodes), not O(history) (issue 42: both the pruner and compaction
// measure before every step). The surface changes in two ways only: an event appends a node at
// the end, or a logged `surface/replace` rewrites a range. So the running total is exact while
// the session's last `surface/replace` is the one it was taken under and the surface has not
// shrunk; any other state (a new replacement, a different session or fork: another surface
// object) is summed afresh. Only frozen messages are counted into a kept total: a mutable one
// could change under it.
interface SurfaceTotal {
  replace: object | undefined
  count: number
  tokens: number
}
const surfaceTotals = new WeakMap<Estimator, WeakMap<object, SurfaceTotal>>()

/** Estimated tokens of every message on `session`'s surface (incremental; see above). */
export function surfaceTokens(session: Session, estimate: Estimator): number {
  const nodes = session.surface.nodes
  const replace = session.last('surface/replace')
  let perEstimator = surfaceTotals.get(estimate)
  if (!perEstimator) surfaceTotals.set(estimate, (perEstimator = new WeakMap()))
  const kept = perEstimator.get(session.surface)
  const valid = kept !== undefined && kept.replace === replace && kept.count <= nodes.length
  let tokens = valid ? kept.tokens : 0
  let frozen = true
  for (let i = valid ? kept.count : 0; i < nodes.length; i++) {
    const message = nodes[i].message
    tokens += messageTokens(message, estimate)
    if (frozen && !Object.isFrozen(message)) frozen = false
  }
  if (frozen) perEstimator.set(session.surface, { replace, count: nodes.length, tokens })
  else perEstimator.delete(session.surface)
  return tokens
}

/** Sum of the estimated tokens of `nodes[from..to)`. */
export function nodesTokens(nodes: readonly SurfaceNode[], estimate: Estimator, from = 0, to = nodes.length): number {
  let total = 0
  for (let i = from; i < to; i++) total += messageTokens(nodes[i].message, estimate)
  return total
}
