import type { UserContentBlock } from '@dsh/llm'
import type { InjectedContext, TurnResult } from '@dsh/agent'
import type { MessageSource } from '@dsh/session'

export interface QueuedInput {
  content: UserContentBlock[]
  source: MessageSource
  /** Human input resolves with the result of the turn that claimed it; injected context has none. */
  settle?: { resolve(result: TurnResult): void; reject(error: unknown): void }
  human: boolean
}

export function toBlocks(content: string | UserContentBlock[]): UserContentBlock[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content
}

/**
 * Two queues: human messages (which start turns and steer running ones) and injected context
 * (which only rides along with the next admitted request). Claiming drains both, context first,
 * so a context note precedes the human message it was computed for.
 */
export class Inbox {
  private human: QueuedInput[] = []
  private context: QueuedInput[] = []

  pushHuman(input: QueuedInput): void {
    this.human.push(input)
  }
  pushContext(ctx: InjectedContext): void {
    this.context.push({ content: toBlocks(ctx.content), source: ctx.source, human: false })
  }
  get hasHuman(): boolean {
    return this.human.length > 0
  }
  get size(): number {
    return this.human.length + this.context.length
  }
  claimAll(): QueuedInput[] {
    const claimed = [...this.context, ...this.human]
    this.context = []
    this.human = []
    return claimed
  }
  /** Puts claimed input back at the front (a step that never entered it). */
  restore(inputs: QueuedInput[]): void {
    this.context.unshift(...inputs.filter((i) => !i.human))
    this.human.unshift(...inputs.filter((i) => i.human))
  }
  drainHuman(): QueuedInput[] {
    const out = this.human
    this.human = []
    return out
  }
}
