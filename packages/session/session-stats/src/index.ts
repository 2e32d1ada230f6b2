// @dsh/session-stats: the `sessionStats` projection unit. Whole-log figures of a session and of each
// of its turns, folded from the log alone: turns, steps, model calls, tokens (input, output, cache
// read and write, reasoning), cost where a price is configured, time to first token, decode time,
// model time, and tool time by tool. Times are differences of event `time` stamps (milliseconds).
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { AnySessionEvent } from '@dsh/session'
import type { TokenUsage } from '@dsh/llm'
import type { ProjectionUnit } from '@dsh/session-projection'
import type {} from '@dsh/session-title'

export const name = '@dsh/session-stats'
export const inject = ['sessionProjections']

/** Price of one million tokens, in `currency`. */
export interface ModelPrice {
  provider?: string
  model: string
  input: number
  output: number
  cacheRead?: number
  cacheWrite?: number
  currency?: string
}

export interface ToolFigures {
  calls: number
  errors: number
  /** From `tool/call` (or `tool/started`) to `tool/result`. */
  ms: number
}

export interface Figures {
  steps: number
  modelCalls: number
  /** Model calls whose usage was reported. */
  usageReported: number
  tokens: TokenUsage
  /** Sum over priced calls; absent when no call had a price. */
  cost?: number
  currency?: string
  /** Model calls without a configured price. */
  unpricedCalls: number
  /** Sum of each call's time from step start to its first streamed chunk, and the count summed. */
  firstTokenMs: number
  firstTokenCalls: number
  /** Sum of each call's time from its first chunk to its assembled message. */
  decodeMs: number
  /** Sum of each call's time from step start to its assembled message. */
  modelMs: number
  toolMs: number
  tools: { [name: string]: ToolFigures }
}

export interface TurnFigures extends Figures {
  turn: number
  startedAt: number
  endedAt?: number
  reason?: string
}

/** Model calls made outside turns (e.g. title requests): counts, tokens and cost only. */
export interface CallFigures {
  calls: number
  usageReported: number
  tokens: TokenUsage
  cost?: number
  currency?: string
  unpricedCalls: number
}

export interface SessionStats extends Figures {
  /**
   * Title requests (`title/usage` events of @dsh/session-title). A title call is not a turn: it is
   * in the session's `modelCalls`, `tokens` and `cost`, and never in `perTurn`.
   */
  titleCalls: CallFigures
  turns: number
  /** Turns copied from another session (before the last `seed/end`), included in the figures. */
  seededEvents: number
  perTurn: TurnFigures[]
  /** Provider and model of the latest request header. */
  model?: { provider: string; model: string }
}

interface State {
  stats: SessionStats
  /** Open step: start time, and the first chunk of its current call. */
  stepStart?: number
  firstChunk?: number
  /** Tool calls awaiting a result: callId -> [name, start]. */
  calls: { [callId: string]: [string, number] }
  /** Only in states of fold version 2 and earlier; the price table is the unit's, not the state's. */
  prices?: ModelPrice[]
}

const zeroTokens = (): TokenUsage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 })

export function emptyFigures(): Figures {
  return {
    steps: 0,
    modelCalls: 0,
    usageReported: 0,
    tokens: zeroTokens(),
    unpricedCalls: 0,
    firstTokenMs: 0,
    firstTokenCalls: 0,
    decodeMs: 0,
    modelMs: 0,
    toolMs: 0,
    tools: {},
  }
}

export function emptyCallFigures(): CallFigures {
  return { calls: 0, usageReported: 0, tokens: zeroTokens(), unpricedCalls: 0 }
}

export function emptyStats(): SessionStats {
  return { ...emptyFigures(), titleCalls: emptyCallFigures(), turns: 0, seededEvents: 0, perTurn: [] }
}

/** The price of a model: an entry naming the provider wins over one naming only the model. */
export function priceOf(
  prices: readonly ModelPrice[],
  provider: string | undefined,
  model: string | undefined,
): ModelPrice | undefined {
  if (!model) return undefined
  return (
    prices.find((p) => p.model === model && p.provider === provider) ??
    prices.find((p) => p.model === model && p.provider === undefined)
  )
}

/** Cost of one call's usage at `price` (per million tokens); cache prices default to the input price. */
export function costOf(usage: TokenUsage, price: ModelPrice): number {
  return (
    (usage.input * price.input +
      usage.output * price.output +
      usage.cacheRead * (price.cacheRead ?? price.input) +
      usage.cacheWrite * (price.cacheWrite ?? price.input)) /
    1_000_000
  )
}

const n = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : 0)

function addCall(
  f: Figures | CallFigures,
  usage: Partial<TokenUsage> | undefined,
  cost: number | undefined,
  currency: string | undefined,
): void {
  if ('calls' in f) f.calls++
  else f.modelCalls++
  if (usage) {
    f.usageReported++
    f.tokens.input += n(usage.input)
    f.tokens.output += n(usage.output)
    f.tokens.cacheRead += n(usage.cacheRead)
    f.tokens.cacheWrite += n(usage.cacheWrite)
    f.tokens.reasoning += n(usage.reasoning)
  }
  if (cost === undefined) f.unpricedCalls++
  else {
    f.cost = (f.cost ?? 0) + cost
    if (currency) f.currency = currency
  }
}

function addTool(f: Figures, name: string, ms: number, error: boolean): void {
  const t = (f.tools[name] ??= { calls: 0, errors: 0, ms: 0 })
  t.calls++
  t.ms += ms
  if (error) t.errors++
  f.toolMs += ms
}

/**
 * Folds one event; `state` is mutated and returned. `prices` is the unit's table: it is kept out of
 * the state so the cached checkpoint of every session does not carry a copy of it.
 */
export function foldStats(
  state: State,
  event: AnySessionEvent,
  prices: readonly ModelPrice[] = state.prices ?? [],
): State {
  const s = state.stats
  const turn = s.perTurn.at(-1)
  const open = turn && turn.endedAt === undefined ? turn : undefined
  const both = (apply: (f: Figures) => void) => {
    apply(s)
    if (open) apply(open)
  }
  switch (event.type) {
    case 'turn/start':
      s.turns++
      s.perTurn.push({ ...emptyFigures(), turn: event.data.turn, startedAt: event.time })
      break
    case 'turn/end':
      if (open) {
        open.endedAt = event.time
        open.reason = event.data.reason
      }
      state.stepStart = undefined
      break
    case 'step/start':
      both((f) => f.steps++)
      state.stepStart = event.time
      state.firstChunk = undefined
      break
    case 'request/header':
      s.model = { provider: event.data.provider, model: event.data.model }
      break
    case 'assistant/chunk':
      state.firstChunk ??= event.time
      break
    case 'assistant/message': {
      const price = priceOf(prices, s.model?.provider, s.model?.model)
      const usage = event.data.usage
      const cost = price && usage ? costOf({ ...zeroTokens(), ...usage }, price) : undefined
      const start = state.stepStart
      const first = state.firstChunk
      both((f) => {
        addCall(f, usage, cost, price?.currency)
        if (start !== undefined) f.modelMs += event.time - start
        if (start !== undefined && first !== undefined) {
          f.firstTokenMs += first - start
          f.firstTokenCalls++
          f.decodeMs += event.time - first
        }
      })
      // A second call in the same step (a retry or a continuation) times from here.
      state.stepStart = event.time
      state.firstChunk = undefined
      break
    }
    case 'tool/call':
      state.calls[event.data.callId] = [event.data.name, event.time]
      break
    case 'tool/started': {
      const call = state.calls[event.data.callId]
      if (call) call[1] = event.time
      break
    }
    case 'tool/result': {
      const callId = event.data.message.callId
      const call = state.calls[callId]
      if (!call) break
      delete state.calls[callId]
      both((f) =>
        addTool(
          f,
          call[0],
          event.time - call[1],
          event.data.error !== undefined || event.data.message.isError === true,
        ),
      )
      break
    }
    case 'title/usage': {
      // Priced by the title request's own model (it may differ from the turns' model).
      const price = priceOf(prices, event.data.provider, event.data.model)
      const usage = event.data.usage
      const cost = price && usage ? costOf({ ...zeroTokens(), ...usage }, price) : undefined
      addCall(s, usage, cost, price?.currency)
      addCall((s.titleCalls ??= emptyCallFigures()), usage, cost, price?.currency)
      break
    }
    case 'seed/end':
      s.seededEvents = event.seq
      break
  }
  return state
}

/** Bumped whenever `foldStats` or its state changes (2: title requests; 3: no price table in the state). */
const FOLD_VERSION = 3

/** The unit, with a price table (changing prices changes the unit version, so caches are rebuilt). */
export function statsUnit(prices: readonly ModelPrice[] = []): ProjectionUnit<State, SessionStats> {
  const table = prices.map((price) => ({ ...price }))
  return {
    name: 'sessionStats',
    version: FOLD_VERSION * 1_000_000 + hash(JSON.stringify(prices)),
    init: () => ({ stats: emptyStats(), calls: {} }),
    fold: (state, event) => foldStats(state, event, table),
    value: (state) => state.stats,
  }
}

/** Stats of a whole log (no registry needed). */
export function statsOf(events: Iterable<AnySessionEvent>, prices: readonly ModelPrice[] = []): SessionStats {
  const unit = statsUnit(prices)
  let state = unit.init()
  for (const event of events) state = unit.fold(state, event)
  return unit.value!(state)
}

function hash(text: string): number {
  let h = 0
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0
  return h % 1_000_000
}

export interface Config {
  prices: ModelPrice[]
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  prices: Schema.array(
    Schema.object({
      provider: Schema.string().description('Route; absent: any route serving this model id.'),
      model: Schema.string().required(),
      input: Schema.number().min(0).required().description('Price per million uncached input tokens.'),
      output: Schema.number().min(0).required().description('Price per million output tokens.'),
      cacheRead: Schema.number().min(0).description('Per million cache-read tokens; default: input.'),
      cacheWrite: Schema.number().min(0).description('Per million cache-write tokens; default: input.'),
      currency: Schema.string().default('USD'),
    }),
  )
    .default([])
    .description('Model prices; calls of other models are counted as unpriced.'),
})

export function apply(ctx: Context, config: Config): void {
  ctx.sessionProjections.register(statsUnit(config.prices))
}
