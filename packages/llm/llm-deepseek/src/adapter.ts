// The DeepSeek LlmAdapter: one POST per request, the SSE body framed by eventsource-parser and
// translated chunk by chunk. Every failure leaves as an LlmError with a stable code.
import { bodyReader, nodeFetch, type BodyReader } from './http.ts'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import {
  LlmError,
  redactError,
  secretList,
  type LlmAdapter,
  type LlmRequest,
  type ModelInfo,
  type StreamChunk,
} from '@dsh/llm'
import { PROVIDER_LABEL, errorFromResponse, transportError } from './errors.ts'
import { StreamTranslator, defaultEffortTable, type EffortTable } from './wire.ts'
import { BodyEncoder, concatBody } from './body.ts'

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
  /**
   * Longest wait for real data before `TIMEOUT`: response headers or an SSE event. Keep-alive
   * comments do not count, so a server sending only comments still times out.
   */
  streamIdleTimeoutMs: number
  /** Body bytes read from one response before `RESPONSE_TOO_LARGE`. Default `DEFAULT_MAX_RESPONSE_BYTES`. */
  maxResponseBytes?: number
  /** Wall-clock bound on one whole request, headers to last byte, before `DEADLINE_EXCEEDED`; 0 disables. */
  requestTimeoutMs?: number
  efforts?: EffortTable
  userAgent: string
  headers?: { [name: string]: string }
  /** Injectable for tests; defaults to `nodeFetch` (node:http, no undici). */
  fetch?: typeof fetch
}

/** Bytes of a non-SSE body quoted in the PROTOCOL error. */
const SNIPPET = 200
/** Bytes read of an error or non-SSE body: enough for any real message, bounded for a runaway one. */
const ERROR_BODY_BYTES = 64 * 1024
/** Default response byte cap: far above the SSE framing of the largest real answer (~100 MB). */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
/** Default overall request deadline: one hour. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 3_600_000
/** Bound on one buffered SSE event (a runaway line is a protocol error, not an OOM). */
const MAX_EVENT_CHARS = 32 * 1024 * 1024

export class DeepSeekAdapter implements LlmAdapter {
  readonly provider: string
  private readonly options: DeepSeekAdapterOptions
  /** Keeps the encoded bytes of recently sent history messages (see body.ts). */
  private readonly encoder = new BodyEncoder()

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
    return this.redacted(request)
  }

  /** Every error leaving the adapter is scrubbed of the key it sent (a server may echo headers). */
  private async *redacted(request: LlmRequest): AsyncGenerator<StreamChunk> {
    const used: { key?: string } = {}
    try {
      yield* this.run(request, used)
    } catch (error) {
      throw redactError(error, secretList([used.key]))
    }
  }

  private missingKey(): LlmError {
    const env = this.options.apiKeyEnv
    return new LlmError(
      'MISSING_CREDENTIAL',
      `${env} is not set: export it, or put it in $DSH_HOME/.env or the project .env`,
      { provider: this.provider },
    )
  }

  private async *run(request: LlmRequest, used: { key?: string }): AsyncGenerator<StreamChunk> {
    const { signal } = request
    const aborted = () => new LlmError('ABORTED', 'the request was aborted', { provider: this.provider })
    if (signal?.aborted) throw aborted()
    if (this.options.strictModels && !this.options.models.some((m) => m.id === request.model)) {
      const known = this.options.models.map((m) => m.id).join(', ') || '(none)'
      throw new LlmError(
        'UNKNOWN_MODEL',
        `${PROVIDER_LABEL} route '${this.provider}' has no model '${request.model}'; configured: ${known}`,
        {
          provider: this.provider,
        },
      )
    }
    let key: string | undefined
    try {
      key = await this.options.getKey()
    } catch (cause) {
      // A broken credentials file is the user's to fix, not a network failure to retry.
      throw new LlmError(
        'MISSING_CREDENTIAL',
        `cannot read credential ${this.options.apiKeyEnv}: ${(cause as Error)?.message ?? cause}`,
        { provider: this.provider, cause },
      )
    }
    if (!key) throw this.missingKey()
    used.key = key
    if (signal?.aborted) throw aborted()

    const controller = new AbortController()
    // Why the internal controller fired: the caller's abort, the idle watchdog or the deadline.
    let stop: 'abort' | 'idle' | 'deadline' | undefined
    const onAbort = () => {
      stop ??= 'abort'
      controller.abort()
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    const deadlineMs = this.options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
    const deadline =
      deadlineMs > 0
        ? setTimeout(() => {
            stop ??= 'deadline'
            controller.abort()
          }, deadlineMs)
        : undefined
    const maxBytes = this.options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
    // The idle budget is spent only while waiting on the socket, and refilled only by progress
    // (the response headers, then events carrying text, reasoning, a tool call, usage or a
    // finish): keep-alive comments and chunks that carry nothing keep the socket busy but do not
    // refill it, so a server repeating them ends at streamIdleTimeoutMs, not at the deadline.
    const idleMs = this.options.streamIdleTimeoutMs
    let idleLeft = idleMs
    let waitStart = 0
    // What arrived since the last refill, for the TIMEOUT message: nothing, or the last kind of
    // traffic that did not count as progress.
    let idleTraffic: 'keep-alive comments' | 'chunks without content' | undefined
    let timer: ReturnType<typeof setTimeout> | undefined
    const disarm = () => {
      if (timer === undefined) return
      clearTimeout(timer)
      timer = undefined
      idleLeft -= Date.now() - waitStart
    }
    const arm = () => {
      disarm()
      waitStart = Date.now()
      timer = setTimeout(
        () => {
          stop ??= 'idle'
          controller.abort()
        },
        Math.max(0, idleLeft),
      )
    }
    const refill = () => {
      idleLeft = idleMs
      idleTraffic = undefined
    }
    const withProvider = (error: LlmError): LlmError =>
      error.provider
        ? error
        : new LlmError(error.code, error.message, {
            status: error.status,
            provider: this.provider,
            retryAfterMs: error.retryAfterMs,
            cause: error.cause,
          })
    const fault = (cause: unknown, phase: 'connect' | 'read'): LlmError => {
      if (stop === 'abort') return aborted()
      if (stop === 'idle') {
        const what = idleTraffic ? `only ${idleTraffic}` : 'nothing'
        return new LlmError('TIMEOUT', `${PROVIDER_LABEL} sent ${what} for ${idleMs} ms (streamIdleTimeoutMs)`, {
          provider: this.provider,
        })
      }
      if (stop === 'deadline') {
        return new LlmError(
          'DEADLINE_EXCEEDED',
          `${PROVIDER_LABEL} did not finish the response within ${deadlineMs} ms (requestTimeoutMs)`,
          {
            provider: this.provider,
          },
        )
      }
      if (LlmError.is(cause)) return withProvider(cause)
      return withProvider(transportError(cause, phase, this.options.baseURL))
    }

    let reader: BodyReader | undefined
    let completed = false
    try {
      const headers: { [name: string]: string } = {
        ...this.options.headers,
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${key}`,
        'user-agent': this.options.userAgent,
      }
      const encoded = this.encoder.encode(request, {
        maxTokens: this.options.maxTokens,
        efforts: this.options.efforts ?? defaultEffortTable(),
      })
      // Our client writes the chunks as they are; any other fetch gets them as one buffer.
      const body = this.options.fetch ? concatBody(encoded) : encoded.chunks
      const doFetch = this.options.fetch ?? (nodeFetch as typeof fetch)
      arm()
      let response: Response
      try {
        response = await doFetch(this.endpoint, {
          method: 'POST',
          headers,
          body: body as RequestInit['body'],
          signal: controller.signal,
        })
      } catch (cause) {
        throw fault(cause, 'connect')
      }
      disarm()
      refill()
      arm()
      if (!response.ok) {
        let text = ''
        try {
          text = await readCapped(response, ERROR_BODY_BYTES)
        } catch (cause) {
          if (stop) throw fault(cause, 'read')
        }
        throw withProvider(errorFromResponse(response.status, response.headers, text))
      }
      const contentType = response.headers.get('content-type') ?? ''
      const nodeReader = bodyReader(response)
      if (!(nodeReader || response.body) || /json|html|xml/i.test(contentType)) {
        let text = ''
        try {
          text = await readCapped(response, ERROR_BODY_BYTES, nodeReader ?? response.body?.getReader())
        } catch (cause) {
          throw fault(cause, 'read')
        }
        throw new LlmError(
          'PROTOCOL',
          `${PROVIDER_LABEL} answered with ${contentType || 'no content type'} instead of an SSE stream: ${snippet(text)}`,
          {
            provider: this.provider,
            status: response.status,
          },
        )
      }

      const translator = new StreamTranslator()
      const events: EventSourceMessage[] = []
      let parseFailure: LlmError | undefined
      const parser = createParser({
        onEvent: (event) => events.push(event),
        // Comments (keep-alives) deliberately leave the idle budget alone; noted for the message.
        onComment: () => void (idleTraffic = 'keep-alive comments'),
        onError: (error) => {
          // Unknown field names are ignored per the SSE spec; only a runaway buffer is fatal.
          if (error.type === 'max-buffer-size-exceeded') {
            parseFailure = new LlmError(
              'PROTOCOL',
              `${PROVIDER_LABEL} sent an SSE event over ${MAX_EVENT_CHARS} characters`,
              { provider: this.provider },
            )
          }
        },
        maxBufferSize: MAX_EVENT_CHARS,
      })
      // Bytes are counted and decoded inline: two TransformStreams (a byte cap, TextDecoderStream)
      // in between cost several promise hops per chunk on every response.
      reader = nodeReader ?? response.body!.getReader()
      const decoder = new TextDecoder()
      let seen = 0
      let head = ''
      let sawEvent = false
      let done = false
      while (!done) {
        arm()
        let read: Awaited<ReturnType<typeof reader.read>>
        let text: string
        try {
          read = await reader.read()
          if (read.done) {
            text = decoder.decode()
          } else {
            seen += read.value.byteLength
            if (seen > maxBytes) throw tooLarge(maxBytes, this.provider)
            text = decoder.decode(read.value, { stream: true })
          }
        } catch (cause) {
          throw fault(cause, 'read')
        } finally {
          disarm()
        }
        if (text) {
          if (head.length < SNIPPET) head += text.slice(0, SNIPPET - head.length)
          parser.feed(text)
        }
        if (read.done) parser.reset({ consume: true })
        if (parseFailure) throw parseFailure
        const batch: StreamChunk[] = []
        const received = events.length > 0
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
            throw new LlmError('PROTOCOL', `${PROVIDER_LABEL} sent an SSE event that is not JSON: ${snippet(data)}`, {
              provider: this.provider,
            })
          }
          try {
            batch.push(...translator.push(payload))
          } catch (error) {
            throw LlmError.is(error) ? withProvider(error) : error
          }
        }
        if (done || translator.takeProgress()) refill()
        else if (received) idleTraffic = 'chunks without content'
        for (const chunk of batch) {
          yield chunk
          if (signal?.aborted) throw aborted()
        }
        if (read.done) break
      }
      // The body was read to its end (or to [DONE], after which only the terminator follows):
      // whatever happens next, its connection is fit for the next request.
      completed = true

      if (!done && !translator.finished) {
        if (!sawEvent) {
          throw new LlmError(
            'PROTOCOL',
            `${PROVIDER_LABEL} answered with a body that is not an SSE stream: ${snippet(head)}`,
            { provider: this.provider },
          )
        }
        throw new LlmError('TRANSPORT', `${PROVIDER_LABEL} closed the stream before the response finished`, {
          provider: this.provider,
        })
      }
      if (!translator.hasContent) {
        throw new LlmError(
          'EMPTY_RESPONSE',
          `${PROVIDER_LABEL} finished the response without any text, reasoning or tool call`,
          { provider: this.provider },
        )
      }
      const closing = translator.finish()
      if (!closing.some((c) => c.kind === 'finish')) {
        // [DONE] without a finish reason: infer it from what was produced.
        closing.push({ kind: 'finish', reason: translator.hadToolCalls ? 'tool-calls' : 'stop' })
      }
      for (const chunk of closing) yield chunk
    } finally {
      disarm()
      clearTimeout(deadline)
      signal?.removeEventListener('abort', onAbort)
      if (completed && reader?.release) {
        // A finished stream keeps its connection: the next request reuses it (no new TCP and TLS
        // handshake per model turn).
        reader.release()
      } else {
        if (reader) void reader.cancel().catch(() => {})
        // Releases the socket when the consumer stopped early or an error left the body unread.
        controller.abort()
      }
    }
  }
}

/** The error of a response body past `limit` bytes (the rest is not read). */
function tooLarge(limit: number, provider: string): LlmError {
  return new LlmError(
    'RESPONSE_TOO_LARGE',
    `${PROVIDER_LABEL} sent more than ${limit} bytes in one response (maxResponseBytes); the rest was not read`,
    {
      provider,
    },
  )
}

/** The first `limit` bytes of the body as UTF-8 (the rest is left unread and the body cancelled). */
async function readCapped(
  response: Response,
  limit: number,
  reader: BodyReader | undefined = bodyReader(response) ?? response.body?.getReader(),
): Promise<string> {
  if (!reader) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    while (size < limit) {
      const { value, done } = await reader.read()
      if (done) break
      const part = value.byteLength > limit - size ? value.subarray(0, limit - size) : value
      chunks.push(part)
      size += part.byteLength
    }
  } finally {
    void reader.cancel().catch(() => {})
  }
  return Buffer.concat(chunks).toString('utf8')
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  if (flat === '') return '(empty body)'
  return JSON.stringify(flat.length > SNIPPET ? `${flat.slice(0, SNIPPET)}...` : flat)
}
