// The DeepSeek LlmAdapter: one POST per request, the SSE body framed by eventsource-parser and
// translated chunk by chunk. Every failure leaves as an LlmError with a stable code.
import { nodeFetch } from './http.ts'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { LlmError, type LlmAdapter, type LlmRequest, type ModelInfo, type StreamChunk } from '@dsh/llm'
import { PROVIDER_LABEL, errorFromResponse, transportError } from './errors.ts'
import { StreamTranslator, buildRequestBody, defaultEffortTable, type EffortTable } from './wire.ts'

/** Returns the API key, or undefined/'' when none is configured. Called once per request. */
export type KeySource = () => string | undefined | Promise<string | undefined>

export interface DeepSeekAdapterOptions {
  /** Route name served, e.g. `deepseek-official`. */
  provider: string
  /** API root; `/chat/completions` is appended. */
  baseURL: string
  getKey: KeySource
  /** Named in the missing-key message. */
  apiKeyEnv: string
  models: ModelInfo[]
  /** Reject models outside `models` before any I/O. */
  strictModels?: boolean
  maxTokens?: number
  /** Longest silence (no bytes at all, keep-alive comments included) before `TIMEOUT`. */
  streamIdleTimeoutMs: number
  efforts?: EffortTable
  userAgent: string
  headers?: { [name: string]: string }
  /** Injectable for tests; defaults to `nodeFetch` (node:http, no undici). */
  fetch?: typeof fetch
}

/** Bytes of a non-SSE body quoted in the PROTOCOL error. */
const SNIPPET = 200
/** Bound on one buffered SSE event (a runaway line is a protocol error, not an OOM). */
const MAX_EVENT_CHARS = 32 * 1024 * 1024

export class DeepSeekAdapter implements LlmAdapter {
  readonly provider: string
  private readonly options: DeepSeekAdapterOptions

  constructor(options: DeepSeekAdapterOptions) {
    this.provider = options.provider
    this.options = options
  }

  get endpoint(): string {
    return `${this.options.baseURL.replace(/\/+$/, '')}/chat/completions`
  }

  listModels(): ModelInfo[] {
    return this.options.models.map((m) => ({ ...m, provider: this.provider }))
  }

  stream(request: LlmRequest): AsyncIterable<StreamChunk> {
    return this.run(request)
  }

  private missingKey(): LlmError {
    const env = this.options.apiKeyEnv
    return new LlmError(
      'MISSING_CREDENTIAL',
      `${env} is not set: export it, or put it in $DSH_HOME/.env or the project .env`,
      { provider: this.provider },
    )
  }

  private async *run(request: LlmRequest): AsyncGenerator<StreamChunk> {
    const { signal } = request
    const aborted = () => new LlmError('ABORTED', 'the request was aborted', { provider: this.provider })
    if (signal?.aborted) throw aborted()
    if (this.options.strictModels && !this.options.models.some((m) => m.id === request.model)) {
      const known = this.options.models.map((m) => m.id).join(', ') || '(none)'
      throw new LlmError('UNKNOWN_MODEL', `${PROVIDER_LABEL} route '${this.provider}' has no model '${request.model}'; configured: ${known}`, {
        provider: this.provider,
      })
    }
    const key = await this.options.getKey()
    if (!key) throw this.missingKey()
    if (signal?.aborted) throw aborted()

    const controller = new AbortController()
    // Why the internal controller fired: the caller's abort or the idle watchdog.
    let stop: 'abort' | 'idle' | undefined
    const onAbort = () => {
      stop ??= 'abort'
      controller.abort()
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    const idleMs = this.options.streamIdleTimeoutMs
    let timer: ReturnType<typeof setTimeout> | undefined
    const arm = () => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        stop ??= 'idle'
        controller.abort()
      }, idleMs)
    }
    const disarm = () => clearTimeout(timer)
    const withProvider = (error: LlmError): LlmError =>
      error.provider
        ? error
        : new LlmError(error.code, error.message, { status: error.status, provider: this.provider, retryAfterMs: error.retryAfterMs, cause: error.cause })
    const fault = (cause: unknown, phase: 'connect' | 'read'): LlmError => {
      if (stop === 'abort') return aborted()
      if (stop === 'idle') {
        return new LlmError('TIMEOUT', `${PROVIDER_LABEL} sent nothing for ${idleMs} ms (streamIdleTimeoutMs)`, { provider: this.provider })
      }
      if (LlmError.is(cause)) return withProvider(cause)
      return withProvider(transportError(cause, phase))
    }

    let reader: ReadableStreamDefaultReader<string> | undefined
    try {
      const headers: { [name: string]: string } = {
        ...this.options.headers,
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${key}`,
        'user-agent': this.options.userAgent,
      }
      const body = JSON.stringify(buildRequestBody(request, { maxTokens: this.options.maxTokens, efforts: this.options.efforts ?? defaultEffortTable() }))
      const doFetch = this.options.fetch ?? (nodeFetch as typeof fetch)
      arm()
      let response: Response
      try {
        response = await doFetch(this.endpoint, { method: 'POST', headers, body, signal: controller.signal })
      } catch (cause) {
        throw fault(cause, 'connect')
      }
      if (!response.ok) {
        let text = ''
        try {
          text = await response.text()
        } catch (cause) {
          if (stop) throw fault(cause, 'read')
        }
        throw withProvider(errorFromResponse(response.status, response.headers, text))
      }
      const contentType = response.headers.get('content-type') ?? ''
      if (!response.body || /json|html|xml/i.test(contentType)) {
        let text = ''
        try {
          text = await response.text()
        } catch (cause) {
          throw fault(cause, 'read')
        }
        throw new LlmError('PROTOCOL', `${PROVIDER_LABEL} answered with ${contentType || 'no content type'} instead of an SSE stream: ${snippet(text)}`, {
          provider: this.provider,
          status: response.status,
        })
      }

      const translator = new StreamTranslator()
      const events: EventSourceMessage[] = []
      let parseFailure: LlmError | undefined
      const parser = createParser({
        onEvent: (event) => events.push(event),
        // Keep-alive comments need no handling: any bytes already re-armed the watchdog.
        onError: (error) => {
          // Unknown field names are ignored per the SSE spec; only a runaway buffer is fatal.
          if (error.type === 'max-buffer-size-exceeded') {
            parseFailure = new LlmError('PROTOCOL', `${PROVIDER_LABEL} sent an SSE event over ${MAX_EVENT_CHARS} characters`, { provider: this.provider })
          }
        },
        maxBufferSize: MAX_EVENT_CHARS,
      })
      reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      let head = ''
      let sawEvent = false
      let done = false
      while (!done) {
        arm()
        let read: Awaited<ReturnType<typeof reader.read>>
        try {
          read = await reader.read()
        } catch (cause) {
          throw fault(cause, 'read')
        } finally {
          disarm()
        }
        if (read.done) {
          parser.reset({ consume: true })
        } else {
          if (head.length < SNIPPET) head += read.value.slice(0, SNIPPET - head.length)
          parser.feed(read.value)
        }
        if (parseFailure) throw parseFailure
        const batch: StreamChunk[] = []
        for (const event of events.splice(0)) {
          sawEvent = true
          const data = event.data.trim()
          if (data === '[DONE]') {
            done = true
            break
          }
          if (data === '') continue
          let payload: unknown
          try {
            payload = JSON.parse(data)
          } catch {
            throw new LlmError('PROTOCOL', `${PROVIDER_LABEL} sent an SSE event that is not JSON: ${snippet(data)}`, { provider: this.provider })
          }
          try {
            batch.push(...translator.push(payload))
          } catch (error) {
            throw LlmError.is(error) ? withProvider(error) : error
          }
        }
        for (const chunk of batch) {
          yield chunk
          if (signal?.aborted) throw aborted()
        }
        if (read.done) break
      }

      if (!done && !translator.finished) {
        if (!sawEvent) {
          throw new LlmError('PROTOCOL', `${PROVIDER_LABEL} answered with a body that is not an SSE stream: ${snippet(head)}`, { provider: this.provider })
        }
        throw new LlmError('TRANSPORT', `${PROVIDER_LABEL} closed the stream before the response finished`, { provider: this.provider })
      }
      if (!translator.hasContent) {
        throw new LlmError('EMPTY_RESPONSE', `${PROVIDER_LABEL} finished the response without any text, reasoning or tool call`, { provider: this.provider })
      }
      const closing = translator.finish()
      if (!closing.some((c) => c.kind === 'finish')) {
        // [DONE] without a finish reason: infer it from what was produced.
        closing.push({ kind: 'finish', reason: translator.hadToolCalls ? 'tool-calls' : 'stop' })
      }
      for (const chunk of closing) yield chunk
    } finally {
      disarm()
      signal?.removeEventListener('abort', onAbort)
      if (reader) void reader.cancel().catch(() => {})
      // Releases the socket when the consumer stopped early or an error left the body unread.
      controller.abort()
    }
  }
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  if (flat === '') return '(empty body)'
  return JSON.stringify(flat.length > SNIPPET ? `${flat.slice(0, SNIPPET)}...` : flat)
}
