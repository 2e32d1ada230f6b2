// Recipe: an LLM adapter for any OpenAI-compatible chat-completions endpoint (a local server, a
// gateway). It registers one route with ctx.llm; an agent uses it with `--model <route>/<model>`
// or the deployment default. It speaks the wire format with fetch and a small SSE reader: text,
// reasoning, streamed tool calls, usage and finish reason become dsh StreamChunks, and every
// failure becomes an LlmError with a stable code (so retry and error handling work unchanged).
import type { Context } from 'cordis'
import Schema from 'schemastery'
import {
  LlmError,
  type LlmAdapter,
  type LlmErrorCode,
  type LlmRequest,
  type Message,
  type ModelInfo,
  type StreamChunk,
  type FinishReason,
} from '@dsh/llm'

export const name = 'cookbook-openai-compatible'
export const inject = ['llm']

export interface Config {
  route: string
  baseURL: string
  /** Name of the environment variable holding the key; the key itself never sits in config. */
  apiKeyEnv?: string
  models: { id: string; contextWindow: number }[]
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  route: Schema.string().default('openai-compatible').description('Route name requests select (`provider`).'),
  baseURL: Schema.string().required().description('Endpoint base, e.g. http://127.0.0.1:8080/v1'),
  apiKeyEnv: Schema.string().description(
    'Environment variable with the bearer token (absent: no Authorization header).',
  ),
  models: Schema.array(
    Schema.object({ id: Schema.string().required(), contextWindow: Schema.natural().default(128_000) }),
  ).default([]),
})

type WireMessage = Record<string, unknown>

/** dsh messages -> OpenAI chat messages (tool results become `role: tool` messages). */
export function toWire(request: LlmRequest): WireMessage[] {
  const out: WireMessage[] = request.system ? [{ role: 'system', content: request.system }] : []
  const text = (m: Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  for (const m of request.messages) {
    if (m.role === 'assistant') {
      const calls = m.content.filter((b) => b.type === 'tool-call')
      out.push({
        role: 'assistant',
        content: text(m) || null,
        ...(calls.length
          ? {
              tool_calls: calls.map((c) => ({
                id: c.callId,
                type: 'function',
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      })
    } else if (m.role === 'tool') out.push({ role: 'tool', tool_call_id: m.callId, content: text(m) })
    else out.push({ role: 'user', content: text(m) })
  }
  return out
}

const FINISH: Record<string, FinishReason> = {
  stop: 'stop',
  tool_calls: 'tool-calls',
  length: 'length',
  content_filter: 'content-filter',
}

function statusCode(status: number): LlmErrorCode {
  if (status === 401 || status === 403) return 'INVALID_CREDENTIAL'
  if (status === 429) return 'RATE_LIMIT'
  if (status >= 500) return 'SERVER'
  return 'BAD_REQUEST'
}

/** Yields the `data:` payloads of an SSE body, one per event. */
async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const bytes of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true })
    let end: number
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const event = buffer.slice(0, end)
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '')
      const data = event
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n')
      if (data) yield data
    }
  }
}

export class OpenAICompatibleAdapter implements LlmAdapter {
  constructor(
    readonly config: Config,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  get provider() {
    return this.config.route
  }

  listModels(): ModelInfo[] {
    return this.config.models.map((m) => ({
      provider: this.config.route,
      id: m.id,
      contextWindow: m.contextWindow,
      supportsTools: true,
    }))
  }

  async *stream(request: LlmRequest): AsyncIterable<StreamChunk> {
    const provider = this.config.route
    const key = this.config.apiKeyEnv ? this.env[this.config.apiKeyEnv] : undefined
    if (this.config.apiKeyEnv && !key)
      throw new LlmError('MISSING_CREDENTIAL', `${this.config.apiKeyEnv} is not set`, { provider })
    let response: Response
    try {
      response = await fetch(`${this.config.baseURL.replace(/\/$/, '')}/chat/completions`, {
        method: 'POST',
        signal: request.signal,
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify({
          model: request.model,
          stream: true,
          stream_options: { include_usage: true },
          messages: toWire(request),
          ...(request.tools?.length ? { tools: request.tools.map((t) => ({ type: 'function', function: t })) } : {}),
          ...(request.maxTokens ? { max_tokens: request.maxTokens } : {}),
        }),
      })
    } catch (error) {
      if (request.signal?.aborted) throw new LlmError('ABORTED', 'the request was aborted', { provider })
      throw new LlmError('TRANSPORT', `cannot reach ${this.config.baseURL}: ${(error as Error).message}`, {
        provider,
        cause: error,
      })
    }
    if (!response.ok || !response.body) {
      const text = (await response.text().catch(() => '')).slice(0, 300)
      throw new LlmError(statusCode(response.status), `HTTP ${response.status}: ${text}`, {
        provider,
        status: response.status,
      })
    }
    const open = new Map<number, boolean>()
    let finished = false
    for await (const data of sseData(response.body)) {
      if (data === '[DONE]') break
      let frame: {
        choices?: { delta?: Record<string, any>; finish_reason?: string | null }[]
        usage?: Record<string, number>
      }
      try {
        frame = JSON.parse(data)
      } catch {
        throw new LlmError('PROTOCOL', `not a JSON frame: ${data.slice(0, 80)}`, { provider })
      }
      const choice = frame.choices?.[0]
      const delta = choice?.delta ?? {}
      if (delta.reasoning_content) yield { kind: 'reasoning-delta', text: String(delta.reasoning_content) }
      if (delta.content) yield { kind: 'text-delta', text: String(delta.content) }
      for (const call of (delta.tool_calls ?? []) as {
        index: number
        id?: string
        function?: { name?: string; arguments?: string }
      }[]) {
        if (!open.has(call.index)) {
          open.set(call.index, true)
          yield {
            kind: 'tool-call-start',
            index: call.index,
            callId: call.id ?? `call_${call.index}`,
            name: call.function?.name ?? '',
          }
        }
        if (call.function?.arguments)
          yield { kind: 'tool-call-delta', index: call.index, argumentsDelta: call.function.arguments }
      }
      if (choice?.finish_reason) {
        for (const index of open.keys()) yield { kind: 'tool-call-end', index }
        open.clear()
        yield { kind: 'finish', reason: FINISH[choice.finish_reason] ?? 'other' }
        finished = true
      }
      if (frame.usage) {
        const cached = frame.usage.prompt_cache_hit_tokens ?? 0
        yield {
          kind: 'usage',
          usage: {
            input: (frame.usage.prompt_tokens ?? 0) - cached,
            output: frame.usage.completion_tokens ?? 0,
            cacheRead: cached,
            cacheWrite: 0,
            reasoning: 0,
          },
        }
      }
    }
    if (!finished) throw new LlmError('EMPTY_RESPONSE', 'the stream ended without a finish reason', { provider })
  }
}

export function apply(ctx: Context, config: Config) {
  // The registration is an effect of this plugin: unloading the row removes the route.
  ctx.llm.registerAdapter(new OpenAICompatibleAdapter(config))
}
