import {
  LlmError,
  emptyUsage,
  type FinishReason,
  type LlmAdapter,
  type LlmErrorCode,
  type LlmRequest,
  type ModelInfo,
  type StreamChunk,
  type TokenUsage,
} from '@dsh/llm'

export interface ScriptedToolCall {
  name: string
  /** An object is serialized; a string is sent verbatim (so tests can send malformed JSON). */
  arguments: string | object
  callId?: string
}

export interface ScriptedStep {
  reasoning?: string
  text?: string
  toolCalls?: ScriptedToolCall[]
  usage?: Partial<TokenUsage>
  finish?: FinishReason
  /** Fail the request with this LlmError (after the chunks above, if any). */
  error?: { code: LlmErrorCode; message?: string; retryAfterMs?: number }
  /** Emit the chunks above, then stall until the request is aborted. */
  hang?: boolean
  /** Exact chunks, instead of the fields above. */
  chunks?: StreamChunk[]
}

export type ScriptEntry = ScriptedStep | ((request: LlmRequest, index: number) => ScriptedStep)

export const SCRIPTED_PROVIDER = 'scripted'
export const SCRIPTED_MODEL = 'scripted-1'

/** Splits text into a few deltas so consumers see real streaming. */
function deltas(text: string): string[] {
  if (text.length < 8) return [text]
  const cut = Math.ceil(text.length / 2)
  return [text.slice(0, cut), text.slice(cut)]
}

export function chunksFor(step: ScriptedStep, index: number): StreamChunk[] {
  if (step.chunks) return step.chunks
  const out: StreamChunk[] = []
  if (step.reasoning) for (const t of deltas(step.reasoning)) out.push({ kind: 'reasoning-delta', text: t })
  if (step.text) for (const t of deltas(step.text)) out.push({ kind: 'text-delta', text: t })
  step.toolCalls?.forEach((call, i) => {
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments)
    out.push({ kind: 'tool-call-start', index: i, callId: call.callId ?? `call_${index}_${i}`, name: call.name })
    for (const d of deltas(args)) out.push({ kind: 'tool-call-delta', index: i, argumentsDelta: d })
    out.push({ kind: 'tool-call-end', index: i })
  })
  if (step.error || step.hang) return out
  out.push({ kind: 'usage', usage: { ...emptyUsage(), input: 10, output: 5, ...step.usage } })
  out.push({ kind: 'finish', reason: step.finish ?? (step.toolCalls?.length ? 'tool-calls' : 'stop') })
  return out
}

/**
 * An in-process model adapter answering each request with the next scripted step. It records
 * every request (without its AbortSignal) so tests can assert what the model saw.
 */
export class ScriptedModel implements LlmAdapter {
  readonly provider: string
  readonly requests: LlmRequest[] = []
  private cursor = 0

  constructor(
    private readonly script: ScriptEntry[],
    options: { provider?: string } = {},
  ) {
    this.provider = options.provider ?? SCRIPTED_PROVIDER
  }

  /** Steps not yet consumed. */
  get remaining(): number {
    return this.script.length - this.cursor
  }

  push(...entries: ScriptEntry[]): void {
    this.script.push(...entries)
  }

  listModels(): ModelInfo[] {
    return [
      {
        provider: this.provider,
        id: SCRIPTED_MODEL,
        contextWindow: 128_000,
        maxOutputTokens: 8192,
        supportsTools: true,
      },
    ]
  }

  async *stream(request: LlmRequest): AsyncIterable<StreamChunk> {
    // Requests built by the loop carry frozen history snapshots, so a shallow copy records them
    // faithfully without an O(history) clone per request.
    const { signal, ...recorded } = request
    this.requests.push(recorded)
    const index = this.cursor++
    const entry = this.script[index]
    if (!entry) {
      throw new LlmError(
        'EMPTY_RESPONSE',
        `the scripted model has no step ${index + 1} (script has ${this.script.length})`,
      )
    }
    const step = typeof entry === 'function' ? entry(request, index) : entry
    for (const chunk of chunksFor(step, index)) {
      if (signal?.aborted) throw new LlmError('ABORTED', 'aborted')
      await Promise.resolve()
      yield chunk
    }
    if (step.hang) {
      await new Promise<void>((resolve) => {
        if (signal?.aborted) return resolve()
        signal?.addEventListener('abort', () => resolve(), { once: true })
      })
      throw new LlmError('ABORTED', 'aborted')
    }
    if (step.error) {
      throw new LlmError(step.error.code, step.error.message ?? `scripted ${step.error.code}`, {
        retryAfterMs: step.error.retryAfterMs,
      })
    }
  }
}
