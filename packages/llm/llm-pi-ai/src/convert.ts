// Translation between the dsh LLM vocabulary and pi-ai's: request messages and tools into a
// pi-ai Context, pi-ai stream events into StreamChunks.
import type {
  Api,
  AssistantMessage as PiAssistantMessage,
  AssistantMessageEvent,
  Context as PiContext,
  JsonObject,
  Message as PiMessage,
  Model,
  StopReason,
  Tool as PiTool,
  Usage as PiUsage,
} from '@earendil-works/pi-ai'
import type { FinishReason, LlmRequest, StreamChunk, TokenUsage } from '@dsh/llm'

const emptyPiUsage = (): PiUsage => ({
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
})

/**
 * Tool-call arguments are kept as the raw string the model produced; pi-ai wants an object.
 * A string that is not a JSON object is replayed as `{}` (the model already saw the tool's
 * error result for it).
 */
export function argumentsObject(raw: string): JsonObject {
  try {
    const value: unknown = JSON.parse(raw)
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as JsonObject
  } catch {
    // fall through
  }
  return {}
}

/**
 * The request as a pi-ai Context. Past assistant messages are attributed to `model`, so pi-ai
 * replays their reasoning signatures to the same provider unchanged.
 */
export function toPiContext(request: LlmRequest, model: Model<Api>): PiContext {
  const now = Date.now()
  const messages: PiMessage[] = []
  for (const message of request.messages) {
    if (message.role === 'user') {
      messages.push({
        role: 'user',
        content: message.content.map((block) =>
          block.type === 'text'
            ? { type: 'text' as const, text: block.text }
            : { type: 'image' as const, data: block.data, mimeType: block.mediaType },
        ),
        timestamp: now,
      })
    } else if (message.role === 'assistant') {
      const content: PiAssistantMessage['content'] = []
      for (const block of message.content) {
        if (block.type === 'text') content.push({ type: 'text', text: block.text })
        else if (block.type === 'reasoning')
          content.push({
            type: 'thinking',
            thinking: block.text,
            ...(block.signature !== undefined ? { thinkingSignature: block.signature } : {}),
          })
        else if (block.type === 'tool-call')
          content.push({
            type: 'toolCall',
            id: block.callId,
            name: block.name,
            arguments: argumentsObject(block.arguments),
          })
        // An image in an assistant message has no pi-ai form; providers do not accept it either.
      }
      messages.push({
        role: 'assistant',
        content,
        api: model.api,
        provider: model.provider,
        model: model.id,
        usage: emptyPiUsage(),
        stopReason: content.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop',
        timestamp: now,
      })
    } else {
      messages.push({
        role: 'toolResult',
        toolCallId: message.callId,
        toolName: message.name,
        content: message.content.map((block) =>
          block.type === 'text'
            ? { type: 'text' as const, text: block.text }
            : { type: 'image' as const, data: block.data, mimeType: block.mediaType },
        ),
        isError: message.isError === true,
        timestamp: now,
      })
    }
  }
  const tools: PiTool[] | undefined = request.tools?.map((tool) => ({
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
  }))
  return {
    ...(request.system !== undefined && request.system !== '' ? { systemPrompt: request.system } : {}),
    messages,
    ...(tools?.length ? { tools } : {}),
  }
}

/** pi-ai's usage (output includes reasoning) as disjoint TokenUsage. */
export function toTokenUsage(usage: PiUsage): TokenUsage {
  const reasoning = Math.max(0, usage.reasoning ?? 0)
  return {
    input: Math.max(0, usage.input),
    output: Math.max(0, usage.output - reasoning),
    cacheRead: Math.max(0, usage.cacheRead),
    cacheWrite: Math.max(0, usage.cacheWrite),
    reasoning,
  }
}

export function toFinishReason(reason: StopReason): FinishReason {
  switch (reason) {
    case 'stop':
      return 'stop'
    case 'length':
      return 'length'
    case 'toolUse':
      return 'tool-calls'
    default:
      return 'other'
  }
}

interface ToolState {
  index: number
  started: boolean
  argumentsSent: boolean
}

/**
 * Turns one response's pi-ai events into StreamChunks. Tool calls get dense indexes in order of
 * appearance; a call whose id or name is not known at `toolcall_start` is announced at its first
 * argument delta (or its end).
 */
export class EventMapper {
  private readonly tools = new Map<number, ToolState>()
  private nextToolIndex = 0
  private readonly signatures = new Map<number, string>()

  map(event: AssistantMessageEvent): StreamChunk[] {
    switch (event.type) {
      case 'text_delta':
        return event.delta ? [{ kind: 'text-delta', text: event.delta }] : []
      case 'thinking_delta': {
        if (!event.delta) return []
        const signature = this.newSignature(event.contentIndex, event.partial)
        return [{ kind: 'reasoning-delta', text: event.delta, ...(signature !== undefined ? { signature } : {}) }]
      }
      case 'thinking_end': {
        // Some wires settle the signature only at the end of the block (possibly after text).
        const signature = this.newSignature(event.contentIndex, event.partial)
        this.signatures.delete(event.contentIndex)
        return signature !== undefined ? [{ kind: 'reasoning-delta', text: '', signature }] : []
      }
      case 'toolcall_start': {
        const state: ToolState = { index: this.nextToolIndex++, started: false, argumentsSent: false }
        this.tools.set(event.contentIndex, state)
        return this.announce(event.contentIndex, event.partial, false)
      }
      case 'toolcall_delta': {
        const out = this.announce(event.contentIndex, event.partial, true)
        const state = this.tools.get(event.contentIndex)
        if (state && event.delta) {
          state.argumentsSent = true
          out.push({ kind: 'tool-call-delta', index: state.index, argumentsDelta: event.delta })
        }
        return out
      }
      case 'toolcall_end': {
        const out = this.announce(event.contentIndex, event.partial, true, event.toolCall.id, event.toolCall.name)
        const state = this.tools.get(event.contentIndex)
        if (!state) return out
        // Providers that deliver arguments whole (no deltas) still produce the argument text.
        if (!state.argumentsSent)
          out.push({
            kind: 'tool-call-delta',
            index: state.index,
            argumentsDelta: JSON.stringify(event.toolCall.arguments ?? {}),
          })
        out.push({ kind: 'tool-call-end', index: state.index })
        this.tools.delete(event.contentIndex)
        return out
      }
      default:
        return []
    }
  }

  /** The block's signature when it differs from the one already sent with this block. */
  private newSignature(contentIndex: number, partial: PiAssistantMessage): string | undefined {
    const block = partial.content[contentIndex]
    const signature = block?.type === 'thinking' ? block.thinkingSignature : undefined
    if (!signature || this.signatures.get(contentIndex) === signature) return undefined
    this.signatures.set(contentIndex, signature)
    return signature
  }

  private announce(
    contentIndex: number,
    partial: PiAssistantMessage,
    force: boolean,
    id?: string,
    name?: string,
  ): StreamChunk[] {
    let state = this.tools.get(contentIndex)
    if (!state) {
      state = { index: this.nextToolIndex++, started: false, argumentsSent: false }
      this.tools.set(contentIndex, state)
    }
    if (state.started) return []
    const block = partial.content[contentIndex]
    const callId = id || (block?.type === 'toolCall' ? block.id : '')
    const toolName = name || (block?.type === 'toolCall' ? block.name : '')
    if (!force && (!callId || !toolName)) return []
    state.started = true
    return [{ kind: 'tool-call-start', index: state.index, callId: callId || `call_${state.index}`, name: toolName }]
  }
}
