// The trajectory of a session, derived from its log alone: one row per model request (a step)
// with its token usage, latency and time to first token, each tool call's duration, grouped by
// turn, with totals and (when a price is known for the model) cost. Pure and browser-safe.

/** The log fields this reads (a WireEvent or a SessionEvent). */
export interface LogEvent {
  seq: number
  type: string
  time: number
  data: unknown
}

export interface Usage {
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  reasoning: number
}

/** USD per million tokens. `cacheRead`/`cacheWrite` default to `input`. */
export interface Price {
  input: number
  output: number
  cacheRead?: number
  cacheWrite?: number
}

export interface ToolSpan {
  callId: string
  name: string
  start: number
  end?: number
  /** end - start; absent while the call runs (or when the turn ended without a result). */
  durationMs?: number
  isError?: boolean
}

export interface RequestRow {
  turn: number
  step: number
  provider?: string
  model?: string
  /** step/start time. */
  start: number
  /** Time of the first streamed chunk. */
  firstChunk?: number
  /** Time the assistant message was logged. */
  end?: number
  ttftMs?: number
  latencyMs?: number
  usage?: Usage
  finish?: string
  interrupted?: boolean
  /** USD, when a price is known for the model and the request reported usage. */
  cost?: number
  tools: ToolSpan[]
}

export interface TurnRow {
  turn: number
  start: number
  end?: number
  reason?: string
  requests: RequestRow[]
}

export interface Totals extends Usage {
  requests: number
  toolCalls: number
  /** Sum of request latencies and of tool durations. */
  latencyMs: number
  toolMs: number
  /** Sum of the costs that are known. */
  cost: number
  /** Requests with usage but no price (their cost is not in `cost`). */
  unpriced: number
}

export interface Trajectory {
  turns: TurnRow[]
  totals: Totals
}

const emptyUsage = (): Usage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 })
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

function usageOf(raw: unknown): Usage | undefined {
  if (!raw || typeof raw !== 'object') return undefined
  const u = raw as Record<string, unknown>
  return {
    input: num(u.input),
    output: num(u.output),
    cacheRead: num(u.cacheRead),
    cacheWrite: num(u.cacheWrite),
    reasoning: num(u.reasoning),
  }
}

/** The price of `provider/model`, else of the bare model id. */
export function priceOf(
  prices: Readonly<Record<string, Price>> | undefined,
  provider: string | undefined,
  model: string | undefined,
): Price | undefined {
  if (!prices || !model) return undefined
  return (provider ? prices[`${provider}/${model}`] : undefined) ?? prices[model]
}

/** Cost in USD; reasoning tokens bill as output. */
export function costOf(usage: Usage, price: Price): number {
  return (
    (usage.input * price.input +
      usage.cacheRead * (price.cacheRead ?? price.input) +
      usage.cacheWrite * (price.cacheWrite ?? price.input) +
      (usage.output + usage.reasoning) * price.output) /
    1_000_000
  )
}

export function buildTrajectory(events: readonly LogEvent[], prices?: Readonly<Record<string, Price>>): Trajectory {
  const turns: TurnRow[] = []
  let turn: TurnRow | undefined
  let request: RequestRow | undefined
  let header: { provider?: string; model?: string } = {}
  const open = new Map<string, ToolSpan>()
  const totals: Totals = { ...emptyUsage(), requests: 0, toolCalls: 0, latencyMs: 0, toolMs: 0, cost: 0, unpriced: 0 }

  for (const event of events) {
    const data = (event.data ?? {}) as Record<string, any>
    switch (event.type) {
      case 'turn/start':
        turn = { turn: num(data.turn), start: event.time, requests: [] }
        turns.push(turn)
        request = undefined
        break
      case 'turn/end':
        if (turn) {
          turn.end = event.time
          turn.reason = typeof data.reason === 'string' ? data.reason : undefined
        }
        turn = undefined
        request = undefined
        break
      case 'request/header':
        header = { provider: data.provider, model: data.model }
        if (request && request.end === undefined) Object.assign(request, header)
        break
      case 'step/start':
        if (!turn) {
          // A step outside a recorded turn (a log that starts mid-turn): give it its own group.
          turn = { turn: num(data.turn), start: event.time, requests: [] }
          turns.push(turn)
        }
        request = { turn: num(data.turn), step: num(data.step), start: event.time, tools: [], ...header }
        turn.requests.push(request)
        totals.requests++
        break
      case 'assistant/chunk':
        if (request && request.firstChunk === undefined) {
          request.firstChunk = event.time
          request.ttftMs = event.time - request.start
        }
        break
      case 'assistant/message': {
        if (!request || request.end !== undefined) break
        request.end = event.time
        request.latencyMs = event.time - request.start
        totals.latencyMs += request.latencyMs
        if (data.interrupted) request.interrupted = true
        if (typeof data.finish === 'string') request.finish = data.finish
        const usage = usageOf(data.usage)
        if (usage) {
          request.usage = usage
          for (const k of ['input', 'output', 'cacheRead', 'cacheWrite', 'reasoning'] as const) totals[k] += usage[k]
          const price = priceOf(prices, request.provider, request.model)
          if (price) {
            request.cost = costOf(usage, price)
            totals.cost += request.cost
          } else totals.unpriced++
        }
        break
      }
      case 'tool/call': {
        if (!request) break
        const span: ToolSpan = { callId: String(data.callId), name: String(data.name), start: event.time }
        request.tools.push(span)
        open.set(span.callId, span)
        totals.toolCalls++
        break
      }
      case 'tool/result': {
        const callId = data.message?.callId
        const span = typeof callId === 'string' ? open.get(callId) : undefined
        if (!span) break
        open.delete(callId)
        span.end = event.time
        span.durationMs = event.time - span.start
        totals.toolMs += span.durationMs
        if (data.message?.isError || data.error) span.isError = true
        break
      }
      case 'step/end':
        if (request && typeof data.finish === 'string') request.finish ??= data.finish
        break
    }
  }
  return { turns, totals }
}

/** The time range a turn covers, for its timeline (the last known time when it has not ended). */
export function turnRange(turn: TurnRow): { start: number; end: number } {
  let end = turn.end ?? turn.start
  for (const r of turn.requests) {
    end = Math.max(end, r.end ?? r.firstChunk ?? r.start)
    for (const t of r.tools) end = Math.max(end, t.end ?? t.start)
  }
  return { start: turn.start, end }
}

export function formatMs(ms: number | undefined): string {
  if (ms === undefined) return '–'
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`
}

export function formatCost(usd: number): string {
  if (usd === 0) return '$0'
  return usd < 0.01 ? `$${usd.toFixed(5)}` : `$${usd.toFixed(4)}`
}
