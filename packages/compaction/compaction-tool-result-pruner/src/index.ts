// @dsh/compaction-tool-result-pruner: `ctx.toolResultPruner`, model-free pruning of old tool
// results. When the next request passes a pressure trigger, every tool result outside the recent
// budget whose text is over budget is rewritten on the surface to a head, an omission marker and
// a tail, by one logged `surface/replace` per result; the full `tool/result` stays in the log.
// Pruning runs in batches (only when the trigger is passed), so the provider's prompt cache is
// invalidated once per batch rather than on every step.
import { Service, type Context } from 'cordis'
import Schema from 'schemastery'
import type { PreStepDecision, PreStepPayload } from '@dsh/agent'
import type { Message, ToolMessage, UserMessage } from '@dsh/llm'
import type { Session } from '@dsh/session'
import { measureNextRequest, messageTokens, type Estimator } from '@dsh/compaction'
import type {} from '@dsh/token-meter'

export const PRUNER = '@dsh/compaction-tool-result-pruner'

declare module 'cordis' {
  interface Context {
    toolResultPruner: ToolResultPruner
  }
}

export interface Config {
  /** Prune automatically before a request that passes the trigger. */
  auto: boolean
  /** Context window in tokens; overrides the model catalog. */
  contextWindow?: number
  /** Prune when the next request is estimated above this fraction of the window. */
  triggerRatio: number
  /** Tool results estimated above this many tokens are pruned once they are old. */
  maxResultTokens: number
  /** Characters kept from the start of a pruned result. */
  headChars: number
  /** Characters kept from the end of a pruned result. */
  tailChars: number
  /** Tool results within this many of the most recent tokens are never pruned. */
  keepRecentTokens: number
  /**
   * An automatic batch runs only when it saves at least this many tokens: each batch rewrites
   * history and so costs a prompt-cache miss from the earliest result it rewrites.
   */
  minBatchTokens: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  auto: Schema.boolean().default(true).description('Prune before a request that passes the trigger.'),
  contextWindow: Schema.natural().min(1024).description('Context window in tokens; overrides the model catalog.'),
  triggerRatio: Schema.number()
    .min(0.05)
    .max(0.98)
    .default(0.5)
    .description('Fraction of the window at which to prune.'),
  maxResultTokens: Schema.natural()
    .min(16)
    .default(1_000)
    .description('Old results above this many tokens are pruned.'),
  headChars: Schema.natural().default(1_500).description('Characters kept from the start of a pruned result.'),
  tailChars: Schema.natural().default(500).description('Characters kept from the end of a pruned result.'),
  keepRecentTokens: Schema.natural().default(16_000).description('The most recent tokens are never pruned.'),
  minBatchTokens: Schema.natural().default(8_000).description('Smallest saving for which an automatic batch runs.'),
})

interface PruneTarget {
  /** The node's index on the surface when it was found. */
  index: number
  seq: number
  before: Message
  after: ToolMessage
}

export interface PruneResult {
  /** Tool results rewritten by this call. */
  pruned: number
  /** Estimated tokens removed from the next request. */
  savedTokens: number
}

/** The omission marker placed between head and tail. Fixed wording; only the counts vary. */
export function omissionMarker(omittedChars: number, omittedImages: number): string {
  const images = omittedImages ? ` and ${omittedImages} image${omittedImages === 1 ? '' : 's'}` : ''
  return `\n[... ${omittedChars} characters${images} of this tool result omitted to save context; run the tool again if you need them ...]\n`
}

/** Cuts at `index` without splitting a UTF-16 surrogate pair (moves the cut left). */
function safeCut(text: string, index: number): number {
  if (index <= 0 || index >= text.length) return Math.max(0, Math.min(index, text.length))
  const code = text.charCodeAt(index)
  return code >= 0xdc00 && code <= 0xdfff ? index - 1 : index
}

export class ToolResultPruner extends Service {
  static inject = ['llm', 'sessions', 'tokenMeter']
  static Config = Config

  private readonly estimate: Estimator
  private readonly windows = new Map<string, number | undefined>()
  /**
   * Per surface: nodes `[0, checked)` were looked at, and `targets` are the prunable ones among
   * them. A step then checks only the nodes that left the recent budget since (issue 42: once a
   * session passes the trigger with nothing worth pruning, every step used to re-check every
   * result). Exact while the session's last `surface/replace` is `replace` (nodes are only
   * appended between rewrites, and whether a frozen result is prunable never changes for one
   * config); any rewrite, pruning included, or another surface (a fork) scans afresh.
   */
  private readonly scans = new WeakMap<
    object,
    { replace: object | undefined; checked: number; targets: PruneTarget[] }
  >()

  constructor(
    ctx: Context,
    readonly config: Config,
  ) {
    super(ctx, 'toolResultPruner')
    const meter = ctx.tokenMeter
    this.estimate = (text) => meter.estimate(text)
    // Before `next()`: pruning lands ahead of anything later listeners (compaction) measure.
    ctx.on('agent/pre-step', async (payload: PreStepPayload, next: () => Promise<PreStepDecision>) => {
      if (this.config.auto) {
        const pending: UserMessage[] = payload.messages.map((m) => ({
          role: 'user',
          content: typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content,
        }))
        await this.maybePrune(payload.agent.session, pending)
      }
      return next()
    })
  }

  /**
   * The pruned form of `message`, or undefined when its text is within `maxResultTokens`.
   * Text blocks are joined; images of a pruned result are dropped and counted in the marker.
   */
  pruneMessage(message: ToolMessage): ToolMessage | undefined {
    if (messageTokens(message, this.estimate) <= this.config.maxResultTokens) return undefined
    const text = message.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
    const images = message.content.filter((block) => block.type === 'image').length
    const { headChars, tailChars } = this.config
    if (text.length <= headChars + tailChars && images === 0) return undefined
    const headEnd = safeCut(text, Math.min(headChars, text.length))
    const tailStart = Math.max(headEnd, safeCut(text, text.length - tailChars))
    const omitted = tailStart - headEnd
    if (omitted === 0 && images === 0) return undefined
    const pruned = text.slice(0, headEnd) + omissionMarker(omitted, images) + text.slice(tailStart)
    const out: ToolMessage = {
      role: 'tool',
      callId: message.callId,
      name: message.name,
      content: [{ type: 'text', text: pruned }],
    }
    if (message.isError) out.isError = true
    return out
  }

  /**
   * Prunes every over-budget tool result of `session` older than the recent budget, one logged
   * `surface/replace` each. Results already replaced (pruned or compacted) are left alone.
   */
  prune(session: Session, options: { keepRecentTokens?: number; minSavedTokens?: number } = {}): PruneResult {
    const keep = options.keepRecentTokens ?? this.config.keepRecentTokens
    const nodes = session.surface.nodes
    let recent = 0
    let end = nodes.length
    while (end > 0 && recent + messageTokens(nodes[end - 1].message, this.estimate) <= keep) {
      recent += messageTokens(nodes[end - 1].message, this.estimate)
      end--
    }
    // Only the nodes not looked at since the surface was last rewritten are checked (see `scans`).
    const replace = session.last('surface/replace')
    const kept = this.scans.get(session.surface)
    const valid = kept !== undefined && kept.replace === replace && kept.checked <= nodes.length
    let targets: PruneTarget[] = valid ? kept.targets : []
    const from = valid ? kept.checked : 0
    if (from > end) {
      // A larger recent budget than the scan was taken with: its targets past `end` are recent now.
      targets = targets.filter((t) => t.index < end)
    } else {
      targets = targets.slice()
      let frozen = true
      for (let i = from; i < end; i++) {
        const node = nodes[i]
        if (node.kind !== 'tool/result' || node.message.role !== 'tool') continue
        if (frozen && !Object.isFrozen(node.message)) frozen = false
        const after = this.pruneMessage(node.message)
        if (after) targets.push({ index: i, seq: node.seq, before: node.message, after })
      }
      if (frozen) this.scans.set(session.surface, { replace, checked: end, targets })
      else this.scans.delete(session.surface)
    }
    let savedTokens = 0
    for (const { before, after } of targets)
      savedTokens += messageTokens(before, this.estimate) - messageTokens(after, this.estimate)
    if (targets.length === 0 || savedTokens < (options.minSavedTokens ?? 0)) return { pruned: 0, savedTokens: 0 }
    for (const { seq, before, after } of targets) {
      const original = before.content.reduce((n, block) => n + (block.type === 'text' ? block.text.length : 0), 0)
      session.surface.replaceRange(seq, seq + 1, [after], { by: PRUNER, originalChars: original })
    }
    return { pruned: targets.length, savedTokens }
  }

  /** Prunes when the next request (with `pending`) passes the trigger; otherwise does nothing. */
  async maybePrune(session: Session, pending: readonly Message[] = []): Promise<PruneResult | undefined> {
    const header = session.last('request/header')?.data
    if (!header) return undefined
    const window = await this.contextWindow(header.provider, header.model)
    if (!window) return undefined
    const tokens = measureNextRequest(session, {
      estimate: this.estimate,
      lastRequestInput: this.ctx.tokenMeter.lastRequestInput(session),
      pending,
    })
    if (tokens <= window * this.config.triggerRatio) return undefined
    return this.prune(session, { minSavedTokens: this.config.minBatchTokens })
  }

  async contextWindow(provider: string, model: string): Promise<number | undefined> {
    if (this.config.contextWindow) return this.config.contextWindow
    const key = `${provider}\u0000${model}`
    if (!this.windows.has(key)) {
      const info = await this.ctx.llm.resolveModelInfo(provider, model).catch(() => undefined)
      this.windows.set(key, info?.contextWindow)
    }
    return this.windows.get(key)
  }
}

export default ToolResultPruner
