// @dsh/compaction-basic: the basic compaction backend (`ctx.compaction`).
//
// Pressure: the next request's size (`measureNextRequest`, calibrated by `ctx.tokenMeter`) against
// the model's context window. Retention: a token budget of the most recent messages stays
// verbatim, and so does the pinned head (session-start context and the first human message).
// Summary: one direct model call that replays the conversation prefix up to the cut exactly as the
// last request carried it (same provider, model, system, tools and messages), followed by one
// summary instruction, so the provider's prompt cache covers everything but the instruction.
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent, PreStepDecision, PreStepPayload, RequestErrorDecision, RequestErrorPayload } from '@dsh/agent'
import { LlmError, type LlmRequest, type Message, type UserMessage } from '@dsh/llm'
import type { AnySessionEvent, LoggedError, Session } from '@dsh/session'
import {
  CompactionEngine,
  COMPACTION_EVENT_TYPES,
  asCompactionId,
  measureNextRequest,
  nodePosition,
  nodesTokens,
  pinnedHeadLength,
  type CompactOptions,
  type CompactionResult,
  type Estimator,
  type ReclaimOptions,
} from '@dsh/compaction'
import type {} from '@dsh/token-meter'

export const ENGINE = '@dsh/compaction-basic'

/** Opening line of the summary message that replaces the compacted range. */
export const SUMMARY_HEADER =
  '[Context compacted: the earlier part of this conversation was replaced by the summary below.]'

export const DEFAULT_INSTRUCTION = [
  'Stop the task for a moment: the conversation above is about to be compacted.',
  'Write a summary that will replace it, so that you can continue the work from the summary alone.',
  'Cover: the goal and every requirement the user stated; decisions made and why;',
  'files read, created or changed (with paths) and what matters in them; commands run and their results;',
  'errors met and how they were resolved; what is done, what is in progress and the exact next steps.',
  'Keep identifiers, paths and numbers exact. Do not call any tool; answer with the summary text only.',
].join(' ')

export interface Config {
  /** Automatic compaction before a request whose estimated size passes the trigger. */
  auto: boolean
  /** One compaction and one retry after a provider's context-overflow error. */
  overflowRetry: boolean
  /** Context window in tokens; overrides the model catalog (`ctx.llm.resolveModelInfo`). */
  contextWindow?: number
  /** Compact when the next request is estimated above this fraction of the window. */
  triggerRatio: number
  /** Token budget of the most recent messages kept verbatim (capped at half the trigger). */
  keepRecentTokens: number
  /** Keep the session-start user messages up to the first human one verbatim. */
  pinHead: boolean
  /** A head larger than this is summarized like the rest. */
  pinHeadMaxTokens: number
  /** `maxTokens` of the summary request. */
  summaryMaxTokens: number
  /** Summaries shorter than this many characters count as empty (a failure). */
  minSummaryChars: number
  /** The summary request is aborted after this long. */
  timeoutMs: number
  instruction: string
  /** After a compaction, ask V8 for a memory-reducing full collection (RSS falls with the context). */
  reclaimMemory: boolean
  /** ... only when V8 holds at least this many MB committed but unused (young generation, free pages). */
  reclaimMinSlackMb: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  auto: Schema.boolean()
    .default(true)
    .description('Compact automatically before a request that would pass the trigger.'),
  overflowRetry: Schema.boolean()
    .default(true)
    .description('After CONTEXT_OVERFLOW, compact once and retry the request once.'),
  contextWindow: Schema.natural().min(1024).description('Context window in tokens; overrides the model catalog.'),
  triggerRatio: Schema.number()
    .min(0.1)
    .max(0.98)
    .default(0.8)
    .description('Fraction of the window at which to compact.'),
  keepRecentTokens: Schema.natural().min(0).default(20_000).description('Recent tokens kept verbatim.'),
  pinHead: Schema.boolean()
    .default(true)
    .description('Keep the first human message and the context before it verbatim.'),
  pinHeadMaxTokens: Schema.natural().default(8_000).description('Largest head that is pinned.'),
  summaryMaxTokens: Schema.natural().min(256).default(4_096).description('maxTokens of the summary request.'),
  minSummaryChars: Schema.natural().min(1).default(20).description('A shorter summary counts as empty.'),
  timeoutMs: Schema.natural().min(1).default(180_000).description('Abort the summary request after this long.'),
  instruction: Schema.string()
    .default(DEFAULT_INSTRUCTION)
    .description('The summary instruction sent as the last user message.'),
  reclaimMemory: Schema.boolean()
    .default(true)
    .description(
      "After a compaction, run V8's memory-reducing full collection so resident memory falls with the context.",
    ),
  reclaimMinSlackMb: Schema.natural()
    .default(16)
    .description('Run that collection only when V8 has at least this many MB committed but unused.'),
})

const textOf = (content: readonly { type: string; text?: string }[]): string =>
  content.map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join('')

const logged = (error: unknown): LoggedError =>
  LlmError.is(error)
    ? { code: error.code, message: error.message }
    : { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) }

export class BasicCompactionEngine extends CompactionEngine {
  static inject = ['llm', 'sessions', 'tokenMeter']
  static Config = Config

  private readonly estimate: Estimator
  private readonly windows = new Map<string, number | undefined>()
  /** Sessions whose automatic compaction failed in a turn: no second automatic try in it. */
  private readonly failedInTurn = new Map<string, number>()
  /** Sessions retried once after an overflow, until the next answer or turn end. */
  private readonly overflowRetried = new Set<string>()
  private readonly log: ReturnType<Context['logger']>

  constructor(
    ctx: Context,
    readonly config: Config,
  ) {
    super(ctx, ENGINE)
    this.log = ctx.logger('compaction')
    const meter = ctx.tokenMeter
    this.estimate = (text) => meter.estimate(text)
    ctx.inject(['sessionPersistence'], (inner) => {
      const persistence = (inner as unknown as { sessionPersistence: { registerEventType(type: string): () => void } })
        .sessionPersistence
      // The call is bound to `inner`, so the registrations unwind with this plugin.
      for (const type of COMPACTION_EVENT_TYPES) persistence.registerEventType(type)
    })
    ctx.on('agent/pre-step', (payload, next) => this.preStep(payload, next))
    ctx.on('agent/request-error', (payload, next) => this.requestError(payload, next), { prepend: true })
    ctx.on('session/event', (session: Session, event: AnySessionEvent) => {
      if (event.type === 'assistant/message' || event.type === 'turn/end') this.overflowRetried.delete(session.id)
      if (event.type === 'turn/end') this.failedInTurn.delete(session.id)
    })
    ctx.on('compaction/reclaimed', (session, r) =>
      this.log.debug(
        'session %s: after compaction RSS %d -> %d MB (%d ms CPU)',
        session.id,
        Math.round(r.rssBefore / 2 ** 20),
        Math.round(r.rssAfter / 2 ** 20),
        Math.round(r.cpuMs),
      ),
    )
    ctx.on('session/deleted', (session: Session) => {
      this.overflowRetried.delete(session.id)
      this.failedInTurn.delete(session.id)
    })
  }

  protected reclaimMemoryAfterCompaction(): ReclaimOptions | undefined {
    const { reclaimMemory, reclaimMinSlackMb } = this.config
    return reclaimMemory ? { minSlackBytes: reclaimMinSlackMb * 2 ** 20 } : undefined
  }

  /** The context window used for `provider`/`model` (config override, else the catalog). */
  async contextWindow(provider: string, model: string): Promise<number | undefined> {
    if (this.config.contextWindow) return this.config.contextWindow
    const key = `${provider}\u0000${model}`
    if (!this.windows.has(key)) {
      const info = await this.ctx.llm.resolveModelInfo(provider, model).catch(() => undefined)
      this.windows.set(key, info?.contextWindow)
    }
    return this.windows.get(key)
  }

  /** Estimated prompt tokens of the next request of `session`. */
  pressure(session: Session, pending: readonly Message[] = []): number {
    return measureNextRequest(session, {
      estimate: this.estimate,
      lastRequestInput: this.ctx.tokenMeter.lastRequestInput(session),
      pending,
    })
  }

  /** Compacts when the next request would pass the trigger; otherwise does nothing. */
  async maybeCompact(
    session: Session,
    options: Omit<CompactOptions, 'reason'> = {},
  ): Promise<CompactionResult | undefined> {
    await this.settled(session)
    const header = session.last('request/header')?.data
    if (!header) return undefined
    const window = await this.contextWindow(header.provider, header.model)
    if (!window) return undefined
    if (this.pressure(session, options.pending) <= window * this.config.triggerRatio) return undefined
    return this.compact(session, { ...options, reason: 'auto' })
  }

  private async preStep(payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision> {
    const decision = await next()
    if (decision.action !== 'enter') return decision
    const { agent, turn } = payload
    // A step never starts while a compaction of its session (e.g. a /compact) is running.
    await this.settled(agent.session)
    if (!this.config.auto) return decision
    if (this.failedInTurn.get(agent.session.id) === turn) return decision
    const pending: UserMessage[] = decision.messages.map((m) => ({
      role: 'user',
      content: typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content,
    }))
    const result = await this.maybeCompact(agent.session, { agent, pending })
    if (result?.status === 'failed') this.failedInTurn.set(agent.session.id, turn)
    return decision
  }

  private async requestError(
    payload: RequestErrorPayload,
    next: () => Promise<RequestErrorDecision>,
  ): Promise<RequestErrorDecision> {
    const { agent, error } = payload
    if (error.code !== 'CONTEXT_OVERFLOW' || !this.config.overflowRetry) return next()
    const session = agent.session
    if (this.overflowRetried.has(session.id)) return next()
    const result = await this.compact(session, { reason: 'overflow', agent })
    if (result.status !== 'compacted') return next()
    this.overflowRetried.add(session.id)
    return { action: 'retry', delayMs: 0 }
  }

  protected async run(session: Session, options: CompactOptions): Promise<CompactionResult> {
    const header = session.last('request/header')?.data
    if (!header) return { status: 'skipped', reason: 'no model request has been made in this session yet' }
    const { provider, model } = header
    const window = await this.contextWindow(provider, model)
    const nodes = session.surface.nodes
    const { estimate, config } = this
    let head = config.pinHead ? pinnedHeadLength(session, nodes) : 0
    if (head > 0 && nodesTokens(nodes, estimate, 0, head) > config.pinHeadMaxTokens) head = 0
    // The recent budget is capped so that keeping it can never by itself re-trigger compaction.
    let keep = config.keepRecentTokens
    if (window) keep = Math.min(keep, Math.floor((window * config.triggerRatio) / 2))
    // Overflow and a human's /compact ask for room now: keep half as much.
    if (options.reason !== 'auto') keep = Math.floor(keep / 2)
    // The cut is the earliest node such that the nodes from it on fit `keep` and it does not
    // start with a tool result (its call would be summarized away).
    let cut = nodes.length
    let kept = 0
    for (let i = nodes.length - 1; i >= head; i--) {
      kept += nodesTokens(nodes, estimate, i, i + 1)
      if (kept > keep) break
      if (nodes[i].message.role !== 'tool') cut = i
    }
    const range = nodes.slice(head, cut)
    if (range.length === 0 || range.every((node) => this.isSummaryNode(session, node.seq))) {
      return { status: 'skipped', reason: 'nothing to compact: the history is within the recent budget' }
    }
    const fromSeq = nodePosition(nodes[head])
    const toSeq = cut < nodes.length ? nodePosition(nodes[cut]) : session.length
    const tokensBefore = this.pressure(session, options.pending)
    const focus = options.focus?.trim() || undefined
    const instruction = focus ? `${config.instruction}\n\nGive particular attention to: ${focus}` : config.instruction
    const id = asCompactionId(randomUUID())
    session.append('compaction/start', {
      id,
      reason: options.reason,
      engine: ENGINE,
      provider,
      model,
      fromSeq,
      toSeq,
      tokensBefore,
      instruction,
      ...(focus ? { focus } : {}),
    })
    const fail = (error: LoggedError): CompactionResult => {
      session.append('compaction/end', { id, status: 'failed', error })
      this.log.warn('compaction of session %s failed: %s: %s', session.id, error.code, error.message)
      return { status: 'failed', id, error }
    }
    // The prefix exactly as the last request carried it: frozen log messages, unchanged.
    const messages: Message[] = session.surface.messages().slice(0, cut)
    messages.push({ role: 'user', content: [{ type: 'text', text: instruction }] })
    const timeout = AbortSignal.timeout(config.timeoutMs)
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout
    const request: LlmRequest = {
      provider,
      model,
      system: header.system,
      messages,
      tools: header.tools,
      maxTokens: config.summaryMaxTokens,
      signal,
      metadata: { sessionId: session.id, purpose: 'compaction', compaction: id },
    }
    const effort = options.agent?.model.provider === provider ? options.agent.model.reasoningEffort : undefined
    if (effort !== undefined) request.reasoningEffort = effort
    let summary: string
    try {
      const response = await this.ctx.llm.complete(request)
      summary = textOf(response.message.content).trim()
      session.append('compaction/summary', { id, text: summary, ...(response.usage ? { usage: response.usage } : {}) })
    } catch (error) {
      return fail(logged(error))
    }
    if (summary.length < config.minSummaryChars) {
      return fail({
        code: 'EMPTY_SUMMARY',
        message: `the summary had ${summary.length} characters (at least ${config.minSummaryChars} needed)`,
      })
    }
    const replacement: UserMessage = {
      role: 'user',
      content: [{ type: 'text', text: `${SUMMARY_HEADER}\n\n${summary}` }],
    }
    let replaceSeq: number
    try {
      replaceSeq = session.surface.replaceRange(fromSeq, toSeq, [replacement], { by: ENGINE, compaction: id }).seq
    } catch (error) {
      return fail({ code: 'REPLACE_FAILED', message: error instanceof Error ? error.message : String(error) })
    }
    const tokensAfter = measureNextRequest(session, { estimate, pending: options.pending })
    session.append('compaction/end', { id, status: 'compacted', replaceSeq, tokensAfter })
    this.log.info('compacted session %s (%s): ~%d -> ~%d tokens', session.id, options.reason, tokensBefore, tokensAfter)
    return { status: 'compacted', id, fromSeq, toSeq, tokensBefore, tokensAfter, summary }
  }

  /** Whether the node at `seq` is a summary this engine wrote (re-summarizing it alone is useless). */
  private isSummaryNode(session: Session, seq: number): boolean {
    const event = session.at(seq)
    return event?.type === 'surface/replace' && event.data.meta?.by === ENGINE
  }
}

export type { Agent }
export default BasicCompactionEngine
