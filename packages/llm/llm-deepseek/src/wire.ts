// Pure translation between the @dsh/llm vocabulary and DeepSeek's chat-completions wire format
// (OpenAI-compatible JSON plus DeepSeek's `reasoning_content`, `thinking` and cache-hit usage
// fields). No I/O here: the adapter feeds parsed SSE payloads in and sends the bodies built here.
import {
  LlmError,
  type FinishReason,
  type LlmRequest,
  type Message,
  type ReasoningEffort,
  type StreamChunk,
  type TokenUsage,
  type ToolSchema,
} from '@dsh/llm'

// ---- request side ----

export type WireContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } }

export interface WireToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

export type WireMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | WireContentPart[] }
  | { role: 'assistant'; content: string | null; reasoning_content?: string; tool_calls?: WireToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string }

export interface WireTool {
  type: 'function'
  function: { name: string; description: string; parameters: { [key: string]: unknown } }
}

/** Extra body fields sent for one reasoning effort; merged into the request body as-is. */
export type EffortParams = { [field: string]: unknown }
export type EffortTable = Record<ReasoningEffort, EffortParams>

/**
 * What each effort sends by default. `off` turns DeepSeek's thinking mode off; the others turn it
 * on and pass the effort through `reasoning_effort`. A request without an effort sends neither
 * field, so the server default applies.
 */
export const defaultEffortTable = (): EffortTable => ({
  off: { thinking: { type: 'disabled' } },
  low: { thinking: { type: 'enabled' }, reasoning_effort: 'low' },
  high: { thinking: { type: 'enabled' }, reasoning_effort: 'high' },
  max: { thinking: { type: 'enabled' }, reasoning_effort: 'max' },
})

const joinText = (blocks: ReadonlyArray<{ type: string; text?: string }>): string =>
  blocks
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('')

/**
 * Messages in DeepSeek's order: the system prompt first, then the history. Assistant reasoning
 * is sent back as `reasoning_content` (DeepSeek requires it for turns that called tools and
 * ignores it elsewhere); tool results become `role: 'tool'` messages with their text joined.
 */
export function toWireMessages(system: string | undefined, messages: readonly Message[]): WireMessage[] {
  const out: WireMessage[] = []
  if (system) out.push(toWireSystem(system))
  for (const message of messages) {
    const wire = toWireMessage(message)
    if (wire) out.push(wire)
  }
  return out
}

/** The `system` message that carries the system prompt. */
export const toWireSystem = (system: string): WireMessage => ({ role: 'system', content: system })

/**
 * One history message on the wire; a function of that message alone (the incremental body
 * encoder relies on it). Undefined for a role the wire does not know.
 */
export function toWireMessage(message: Message): WireMessage | undefined {
  switch (message.role) {
    case 'user': {
      const hasImage = message.content.some((b) => b.type === 'image')
      if (!hasImage) return { role: 'user', content: joinText(message.content) }
      return {
        role: 'user',
        content: message.content.map(
          (b): WireContentPart =>
            b.type === 'text'
              ? { type: 'text', text: b.text }
              : { type: 'image_url', image_url: { url: `data:${b.mediaType};base64,${b.data}` } },
        ),
      }
    }
    case 'assistant': {
      const text = joinText(message.content)
      const reasoning = message.content
        .filter((b) => b.type === 'reasoning')
        .map((b) => (b.type === 'reasoning' ? b.text : ''))
        .join('')
      const calls: WireToolCall[] = []
      for (const block of message.content) {
        if (block.type === 'tool-call') {
          calls.push({
            id: block.callId,
            type: 'function',
            function: { name: block.name, arguments: block.arguments },
          })
        }
      }
      const wire: WireMessage & { role: 'assistant' } = {
        role: 'assistant',
        content: text === '' && calls.length ? null : text,
      }
      if (reasoning !== '') wire.reasoning_content = reasoning
      if (calls.length) wire.tool_calls = calls
      return wire
    }
    case 'tool': {
      // DeepSeek's tool messages are text-only; an image in a tool result is named, not sent.
      const text = message.content.map((b) => (b.type === 'text' ? b.text : `[image ${b.mediaType} omitted]`)).join('')
      return { role: 'tool', tool_call_id: message.callId, content: text }
    }
    default:
      return undefined
  }
}

export function toWireTools(tools: readonly ToolSchema[]): WireTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }))
}

export interface BodyOptions {
  /** Used when the request names no `maxTokens`. */
  maxTokens?: number
  efforts?: EffortTable
}

/** The JSON body of one streaming chat-completions request. */
export function buildRequestBody(request: LlmRequest, options: BodyOptions = {}): { [key: string]: unknown } {
  return bodyAround(request, options, toWireMessages(request.system, request.messages))
}

/**
 * The body of `request` with `messages` as the value of its `messages` field, every other field
 * as `buildRequestBody` sends it (in the same order).
 */
export function bodyAround(request: LlmRequest, options: BodyOptions, messages: unknown): { [key: string]: unknown } {
  const body: { [key: string]: unknown } = {
    model: request.model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
  }
  if (request.tools?.length) body.tools = toWireTools(request.tools)
  const maxTokens = request.maxTokens ?? options.maxTokens
  if (maxTokens !== undefined) body.max_tokens = maxTokens
  if (request.reasoningEffort) {
    const params = (options.efforts ?? defaultEffortTable())[request.reasoningEffort]
    if (params) Object.assign(body, structuredClone(params))
  }
  return body
}

// ---- response side ----

export interface WireUsage {
  prompt_tokens?: number
  completion_tokens?: number
  total_tokens?: number
  prompt_cache_hit_tokens?: number
  prompt_cache_miss_tokens?: number
  completion_tokens_details?: { reasoning_tokens?: number } | null
}

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0)

/**
 * DeepSeek usage as disjoint TokenUsage: `input` is the cache-miss prompt share (falling back to
 * prompt minus hits), `cacheRead` the hits, `output` the completion minus its reasoning tokens.
 * DeepSeek reports no cache writes.
 */
export function mapUsage(usage: WireUsage): TokenUsage {
  const prompt = count(usage.prompt_tokens)
  const hit = count(usage.prompt_cache_hit_tokens)
  const miss =
    usage.prompt_cache_miss_tokens === undefined ? Math.max(0, prompt - hit) : count(usage.prompt_cache_miss_tokens)
  const completion = count(usage.completion_tokens)
  const reasoning = Math.min(completion, count(usage.completion_tokens_details?.reasoning_tokens))
  return { input: miss, output: completion - reasoning, cacheRead: hit, cacheWrite: 0, reasoning }
}

/**
 * A wire finish reason as a FinishReason, or an LlmError for reasons that mean the response was
 * cut short by the server (`insufficient_system_resource`).
 */
export function mapFinishReason(reason: string): FinishReason | LlmError {
  switch (reason) {
    case 'stop':
      return 'stop'
    case 'tool_calls':
    case 'function_call':
      return 'tool-calls'
    case 'length':
      return 'length'
    case 'content_filter':
      return 'content-filter'
    case 'insufficient_system_resource':
      return new LlmError('SERVER', 'DeepSeek ended the response early: insufficient system resource')
    default:
      return 'other'
  }
}

interface ToolSlot {
  callId?: string
  name?: string
  /** Argument text received before the call's name was known. */
  pending: string
  started: boolean
  ended: boolean
}

/**
 * Folds the parsed `data:` payloads of one response into StreamChunks. Text, reasoning and
 * tool-call deltas are emitted as they arrive; usage and finish are held back and emitted by
 * `finish()`, because DeepSeek sends usage after the finish reason (a trailing chunk with empty
 * `choices`) or on the finish chunk itself.
 */
export class StreamTranslator {
  private readonly tools = new Map<number, ToolSlot>()
  private usage: TokenUsage | undefined
  private finishReason: FinishReason | undefined
  private content = false
  private progressed = false

  /**
   * Whether the payloads pushed since the last call carried anything: text, reasoning, a tool
   * call's id, name or arguments, usage or a finish reason. Reading it resets it. A chunk with an
   * empty delta, empty strings or no choices is not progress (it must not hold a stream open).
   */
  takeProgress(): boolean {
    const progressed = this.progressed
    this.progressed = false
    return progressed
  }

  /** Whether any text, reasoning or tool call has been produced. */
  get hasContent(): boolean {
    return this.content
  }

  get finished(): boolean {
    return this.finishReason !== undefined
  }

  /** Whether any tool call was started. */
  get hadToolCalls(): boolean {
    return [...this.tools.values()].some((slot) => slot.started)
  }

  /** Translates one payload. Throws LlmError for a payload that is not a completion chunk. */
  push(payload: unknown): StreamChunk[] {
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
      throw new LlmError('PROTOCOL', `DeepSeek sent a stream event that is not a JSON object: ${preview(payload)}`)
    }
    const record = payload as { [key: string]: unknown }
    if (record.error !== undefined) throw streamError(record.error)
    const out: StreamChunk[] = []
    if (record.usage && typeof record.usage === 'object') {
      this.usage = mapUsage(record.usage as WireUsage)
      this.progressed = true
    }
    const choices = record.choices
    if (choices === undefined || choices === null) return out
    if (!Array.isArray(choices)) throw new LlmError('PROTOCOL', 'DeepSeek sent a chunk whose `choices` is not an array')
    for (const choice of choices as Array<{ [key: string]: unknown }>) {
      // Only one completion is ever requested.
      if (!choice || typeof choice !== 'object' || (choice.index !== undefined && choice.index !== 0)) continue
      const delta = (choice.delta ?? {}) as { [key: string]: unknown }
      if (typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '') {
        this.content = true
        this.progressed = true
        out.push({ kind: 'reasoning-delta', text: delta.reasoning_content })
      }
      if (typeof delta.content === 'string' && delta.content !== '') {
        this.content = true
        this.progressed = true
        out.push({ kind: 'text-delta', text: delta.content })
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const call of delta.tool_calls as Array<{ [key: string]: unknown }>) this.toolDelta(call, out)
      }
      if (typeof choice.finish_reason === 'string') {
        const mapped = mapFinishReason(choice.finish_reason)
        if (mapped instanceof LlmError) throw mapped
        this.finishReason = mapped
        this.progressed = true
        this.endTools(out)
      }
    }
    return out
  }

  /** Chunks that close the response: open tool calls, then usage, then finish (if any arrived). */
  finish(): StreamChunk[] {
    const out: StreamChunk[] = []
    this.endTools(out)
    if (this.usage) out.push({ kind: 'usage', usage: this.usage })
    if (this.finishReason) out.push({ kind: 'finish', reason: this.finishReason })
    return out
  }

  private toolDelta(call: { [key: string]: unknown }, out: StreamChunk[]): void {
    const index =
      typeof call.index === 'number' && Number.isInteger(call.index) && call.index >= 0 ? call.index : undefined
    if (index === undefined) throw new LlmError('PROTOCOL', 'DeepSeek sent a tool-call delta without a valid index')
    let slot = this.tools.get(index)
    if (!slot) {
      slot = { pending: '', started: false, ended: false }
      this.tools.set(index, slot)
    }
    if (slot.ended) throw new LlmError('PROTOCOL', `DeepSeek sent a delta for tool call ${index} after it ended`)
    const fn = (call.function ?? {}) as { name?: unknown; arguments?: unknown }
    if (typeof call.id === 'string' && call.id !== '' && !slot.callId) {
      slot.callId = call.id
      this.progressed = true
    }
    // A name may in principle arrive in pieces before the call starts; once started it is fixed.
    if (typeof fn.name === 'string' && fn.name !== '' && !slot.started) {
      slot.name = (slot.name ?? '') + fn.name
      this.progressed = true
    }
    const args = typeof fn.arguments === 'string' ? fn.arguments : ''
    if (args !== '') this.progressed = true
    if (!slot.started) {
      if (!slot.name) {
        slot.pending += args
        return
      }
      this.content = true
      slot.started = true
      out.push({ kind: 'tool-call-start', index, callId: slot.callId ?? `call_${index}`, name: slot.name })
      const first = slot.pending + args
      slot.pending = ''
      if (first !== '') out.push({ kind: 'tool-call-delta', index, argumentsDelta: first })
      return
    }
    if (args !== '') out.push({ kind: 'tool-call-delta', index, argumentsDelta: args })
  }

  private endTools(out: StreamChunk[]): void {
    for (const [index, slot] of [...this.tools].sort((a, b) => a[0] - b[0])) {
      if (slot.ended) continue
      if (!slot.started) throw new LlmError('PROTOCOL', `DeepSeek sent tool call ${index} without a function name`)
      slot.ended = true
      out.push({ kind: 'tool-call-end', index })
    }
  }
}

function preview(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value)
  return (text ?? String(value)).slice(0, 120)
}

/** An `{"error": ...}` object sent inside the stream. */
function streamError(error: unknown): LlmError {
  const message =
    error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string'
      ? (error as { message: string }).message
      : preview(error)
  return new LlmError('SERVER', `DeepSeek reported an error mid-stream: ${message}`)
}
