// Folds a stream of StreamChunks into an AssistantMessage.
//
// Block order follows arrival: a text or reasoning delta extends the last block when that block has
// the same type, otherwise it opens a new block; a `tool-call-start` opens a tool-call block at the
// current position, and later deltas for its `index` extend it in place even when other blocks
// arrived in between (interleaved tool calls keep their start positions).
//
// Usage chunks are NOT summed: each one replaces the previous, so an adapter that reports running
// totals and one that reports a single final figure both end with the right number.
import {
  LlmError,
  type AssistantMessage,
  type ContentBlock,
  type FinishReason,
  type ReasoningBlock,
  type StreamChunk,
  type TextBlock,
  type TokenUsage,
  type ToolCallBlock,
} from './types.ts'

export interface AssembledResponse {
  message: AssistantMessage
  usage?: TokenUsage
  finish?: FinishReason
}

interface ToolSlot {
  block: ToolCallBlock
  ended: boolean
}

const cloneBlock = (block: ContentBlock): ContentBlock => ({ ...block })

export class BlockAssembler {
  private readonly blocks: ContentBlock[] = []
  private readonly tools = new Map<number, ToolSlot>()
  private _usage: TokenUsage | undefined
  private _finish: FinishReason | undefined
  private _count = 0

  /** Folds every chunk of `chunks` into a fresh assembler. */
  static fold(chunks: Iterable<StreamChunk>): BlockAssembler {
    const assembler = new BlockAssembler()
    for (const chunk of chunks) assembler.push(chunk)
    return assembler
  }

  /** The last usage chunk seen (replacing, not cumulative). */
  get usage(): TokenUsage | undefined {
    return this._usage === undefined ? undefined : { ...this._usage }
  }

  /** The last finish chunk seen. */
  get finish(): FinishReason | undefined {
    return this._finish
  }

  /** Number of chunks pushed so far. */
  get chunkCount(): number {
    return this._count
  }

  /** Folds one chunk. Throws `LlmError('PROTOCOL')` for a chunk that contradicts earlier ones. */
  push(chunk: StreamChunk): void {
    const position = this._count
    switch (chunk.kind) {
      case 'text-delta': {
        if (typeof chunk.text !== 'string') throw protocol(position, 'text-delta without a string `text`')
        if (chunk.text === '') break
        const last = this.blocks.at(-1)
        if (last?.type === 'text') (last as TextBlock).text += chunk.text
        else this.blocks.push({ type: 'text', text: chunk.text })
        break
      }
      case 'reasoning-delta': {
        if (typeof chunk.text !== 'string') throw protocol(position, 'reasoning-delta without a string `text`')
        if (chunk.text === '' && chunk.signature === undefined) break
        const last = this.blocks.at(-1)
        let block: ReasoningBlock
        if (last?.type === 'reasoning') {
          block = last
          block.text += chunk.text
        } else {
          block = { type: 'reasoning', text: chunk.text }
          this.blocks.push(block)
        }
        // A signature is a complete opaque token, not a fragment: the latest one wins.
        if (chunk.signature !== undefined) block.signature = chunk.signature
        break
      }
      case 'tool-call-start': {
        checkIndex(position, chunk.index)
        if (this.tools.has(chunk.index)) {
          throw protocol(position, `tool-call-start for index ${chunk.index}, which was already started`)
        }
        if (typeof chunk.callId !== 'string' || typeof chunk.name !== 'string') {
          throw protocol(position, `tool-call-start for index ${chunk.index} needs string callId and name`)
        }
        const block: ToolCallBlock = { type: 'tool-call', callId: chunk.callId, name: chunk.name, arguments: '' }
        this.tools.set(chunk.index, { block, ended: false })
        this.blocks.push(block)
        break
      }
      case 'tool-call-delta': {
        const slot = this.openSlot(position, chunk.index, 'tool-call-delta')
        if (typeof chunk.argumentsDelta !== 'string') {
          throw protocol(position, `tool-call-delta for index ${chunk.index} without a string argumentsDelta`)
        }
        slot.block.arguments += chunk.argumentsDelta
        break
      }
      case 'tool-call-end': {
        this.openSlot(position, chunk.index, 'tool-call-end').ended = true
        break
      }
      case 'usage':
        if (chunk.usage === null || typeof chunk.usage !== 'object')
          throw protocol(position, 'usage chunk without usage')
        this._usage = { ...chunk.usage }
        break
      case 'finish':
        this._finish = chunk.reason
        break
      default:
        throw protocol(position, `unknown chunk kind ${JSON.stringify((chunk as { kind?: unknown }).kind)}`)
    }
    this._count++
  }

  /** The message so far, including tool calls still streaming (with their partial arguments). */
  snapshot(): AssistantMessage {
    return { role: 'assistant', content: this.blocks.map(cloneBlock) }
  }

  /** `{message: snapshot(), usage, finish}`; keys without a value are omitted (lossless JSON). */
  result(): AssembledResponse {
    const out: AssembledResponse = { message: this.snapshot() }
    if (this._usage !== undefined) out.usage = { ...this._usage }
    if (this._finish !== undefined) out.finish = this._finish
    return out
  }

  /** The prefix to keep after an interruption: tool-call blocks without `tool-call-end` are dropped. */
  finalizeInterrupted(): AssistantMessage {
    const incomplete = new Set<ContentBlock>()
    for (const slot of this.tools.values()) if (!slot.ended) incomplete.add(slot.block)
    return { role: 'assistant', content: this.blocks.filter((b) => !incomplete.has(b)).map(cloneBlock) }
  }

  /** Tool calls that received `tool-call-end`, in message order. */
  completedToolCalls(): ToolCallBlock[] {
    const complete = new Set<ContentBlock>()
    for (const slot of this.tools.values()) if (slot.ended) complete.add(slot.block)
    return this.blocks.filter((b): b is ToolCallBlock => complete.has(b)).map((b) => ({ ...b }))
  }

  /** True when some started tool call has not ended yet. */
  hasOpenToolCalls(): boolean {
    for (const slot of this.tools.values()) if (!slot.ended) return true
    return false
  }

  private openSlot(position: number, index: number, kind: string): ToolSlot {
    checkIndex(position, index)
    const slot = this.tools.get(index)
    if (!slot) throw protocol(position, `${kind} for index ${index}, which was never started`)
    if (slot.ended) throw protocol(position, `${kind} for index ${index}, which has already ended`)
    return slot
  }
}

function checkIndex(position: number, index: unknown): asserts index is number {
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) {
    throw protocol(position, `tool-call index must be a non-negative integer, got ${JSON.stringify(index)}`)
  }
}

function protocol(position: number, message: string): LlmError {
  return new LlmError('PROTOCOL', `stream chunk #${position}: ${message}`)
}
