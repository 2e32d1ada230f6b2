// One LlmAdapter per route: resolves the model and the key before any I/O, streams through a
// pi-ai Models collection holding the route's provider, and maps events and failures.
import type {
  AssistantMessage as PiAssistantMessage,
  AuthContext,
  MutableModels,
  ThinkingLevel,
} from '@earendil-works/pi-ai'
import {
  LlmError,
  redactError,
  secretList,
  type LlmAdapter,
  type LlmRequest,
  type ModelInfo,
  type ReasoningEffort,
  type StreamChunk,
} from '@dsh/llm'
import type { PiRoot, RouteRuntime } from './catalog.ts'
import type { RouteConfig } from './config.ts'
import { EventMapper, toFinishReason, toPiContext, toTokenUsage } from './convert.ts'
import { mapFailure, recordingFetch, type WireRecord } from './errors.ts'

/**
 * Reads a credential by name. Resolves `undefined` when unset; rejects with a sentence naming
 * where it can be set when the caller asked for it (`required`).
 */
export type KeyLookup = (name: string, hint?: string) => Promise<string | undefined>

export interface PiAiAdapterOptions {
  runtime: RouteRuntime
  row: RouteConfig
  root: PiRoot
  lookup: KeyLookup
  /** Explains where `name` can be set (e.g. ctx.credentials' layers); used in MISSING_CREDENTIAL. */
  whereToSet: (name: string) => Promise<string>
  userAgent: string
  /** Test seam: the fetch pi-ai's SDKs use (wrapped by the recorder). */
  fetch?: typeof fetch
  /** Told each API key the adapter sends (the plugin passes `ctx.llm.rememberSecret`). */
  rememberSecret?: (value: string) => void
}

/** Placeholder key for keyless routes: the OpenAI SDK refuses to run without one. */
const KEYLESS = 'no-key'

const EFFORT: { [effort in ReasoningEffort]: ThinkingLevel | 'off' } = {
  off: 'off',
  low: 'low',
  high: 'high',
  max: 'max',
}

export class PiAiAdapter implements LlmAdapter {
  readonly provider: string
  private readonly models: MutableModels
  /** Values pi-ai's provider auth read through `lookup` (keys it may send): scrubbed from errors. */
  private readonly looked = new Set<string>()

  constructor(private readonly options: PiAiAdapterOptions) {
    this.provider = options.runtime.route
    const authContext: AuthContext = {
      env: async (name) => {
        const value = await options.lookup(name)
        if (value) this.looked.add(value)
        return value
      },
      fileExists: async (path) => {
        const { access } = await import('node:fs/promises')
        return access(path).then(
          () => true,
          () => false,
        )
      },
    }
    this.models = options.root.createModels({ authContext, identity: { userAgent: { custom: options.userAgent } } })
    this.models.setProvider(options.runtime.provider)
  }

  listModels(): ModelInfo[] {
    return this.options.runtime.infos.map((info) => ({ ...info }))
  }

  stream(request: LlmRequest): AsyncIterable<StreamChunk> {
    return this.redacted(request)
  }

  /** Every error leaving the adapter is scrubbed of the key it sent and of what pi-ai's auth read. */
  private async *redacted(request: LlmRequest): AsyncGenerator<StreamChunk> {
    const used: { key?: string } = {}
    try {
      yield* this.run(request, used)
    } catch (error) {
      throw redactError(error, secretList([used.key, ...this.looked]))
    }
  }

  private error(
    code: ConstructorParameters<typeof LlmError>[0],
    message: string,
    extra: { cause?: unknown } = {},
  ): LlmError {
    return new LlmError(code, `${this.provider}: ${message}`, { provider: this.provider, ...extra })
  }

  /** The key to send, or undefined to let pi-ai's provider auth resolve it. Throws MISSING_CREDENTIAL. */
  private async resolveKey(): Promise<string | undefined> {
    const { runtime, row, lookup } = this.options
    if (row.apiKeyEnv) {
      let key: string | undefined
      try {
        key = await lookup(row.apiKeyEnv)
      } catch (cause) {
        throw this.error('MISSING_CREDENTIAL', `cannot read credential ${row.apiKeyEnv}: ${(cause as Error).message}`, {
          cause,
        })
      }
      if (key) return key
      throw this.error(
        'MISSING_CREDENTIAL',
        `missing credential ${row.apiKeyEnv} (API key of route ${this.provider}); set it in one of: ${await this.options.whereToSet(row.apiKeyEnv)}`,
      )
    }
    if (runtime.keyless) return KEYLESS
    let check: unknown
    try {
      check = await this.models.checkAuth(runtime.kind)
    } catch (cause) {
      throw this.error(
        'MISSING_CREDENTIAL',
        `pi-ai could not resolve credentials of ${runtime.kind}: ${(cause as Error).message}`,
        { cause },
      )
    }
    if (check) return undefined
    const names = await this.probeNames()
    const where = names.length
      ? `set ${names.join(' or ')} (${await this.options.whereToSet(names[0])})`
      : `set routes.${this.provider}.apiKeyEnv to the credential holding the key`
    throw this.error('MISSING_CREDENTIAL', `no credential for pi-ai provider ${runtime.kind}; ${where}`)
  }

  /** The variable names the provider's key auth consults, learnt by asking it with nothing set. */
  private async probeNames(): Promise<string[]> {
    const auth = this.options.runtime.provider.auth.apiKey
    if (!auth) return []
    const asked: string[] = []
    const ctx: AuthContext = { env: async (name) => void asked.push(name), fileExists: async () => false }
    try {
      await auth.resolve({ ctx, signal: new AbortController().signal })
    } catch {
      // only the names matter
    }
    return [...new Set(asked)]
  }

  private async *run(request: LlmRequest, used: { key?: string }): AsyncGenerator<StreamChunk> {
    const { runtime, row } = this.options
    const model = runtime.models.get(request.model)
    if (!model) {
      const known = [...runtime.models.keys()]
      const list = known.length > 12 ? `${known.slice(0, 12).join(', ')}, ... (${known.length})` : known.join(', ')
      throw new LlmError(
        'UNKNOWN_MODEL',
        `${this.provider}: no model '${request.model}'; configured: ${list || '(none)'}`,
        { provider: this.provider },
      )
    }
    if (request.signal?.aborted) throw this.error('ABORTED', 'aborted before the request was sent')
    const apiKey = await this.resolveKey()
    if (apiKey !== undefined && apiKey !== KEYLESS) {
      used.key = apiKey
      this.options.rememberSecret?.(apiKey)
    }
    if (request.signal?.aborted) throw this.error('ABORTED', 'aborted before the request was sent')

    const own = new AbortController()
    const signal = request.signal ? AbortSignal.any([request.signal, own.signal]) : own.signal
    let timedOut = false
    let pastDeadline = false
    const deadline =
      row.requestTimeoutMs > 0
        ? setTimeout(() => {
            pastDeadline = true
            own.abort()
          }, row.requestTimeoutMs)
        : undefined
    let timer: ReturnType<typeof setTimeout> | undefined
    const arm = () => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        timedOut = true
        own.abort()
      }, row.streamIdleTimeoutMs)
    }
    const wire: WireRecord = { attempts: 0 }
    const maxTokens = request.maxTokens ?? row.maxTokens
    const events = this.models.streamSimple(model, toPiContext(request, model), {
      ...(apiKey !== undefined ? { apiKey } : {}),
      signal,
      fetch: recordingFetch(wire, this.options.fetch, {
        maxBytes: row.maxResponseBytes,
        onTooLarge: () => own.abort(),
      }),
      maxRetries: 0,
      ...(Object.keys(row.headers).length ? { headers: row.headers } : {}),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      ...(request.reasoningEffort ? { reasoning: EFFORT[request.reasoningEffort] as ThinkingLevel } : {}),
    })
    const mapper = new EventMapper()
    let finished = false
    let produced = false
    try {
      // The idle budget is refilled only by an event that produced something (text, reasoning, a
      // tool call or its arguments) or ends the response: pi-ai also emits events for chunks that
      // carry nothing (block starts, empty tool-call deltas), and a server repeating those is idle.
      arm()
      for await (const event of events) {
        if (event.type === 'done') {
          clearTimeout(timer)
          finished = true
          if (!produced && event.reason !== 'length')
            throw this.error('EMPTY_RESPONSE', 'the response had no text, reasoning or tool call')
          yield { kind: 'usage', usage: toTokenUsage(event.message.usage) }
          yield { kind: 'finish', reason: toFinishReason(event.reason) }
          return
        }
        if (event.type === 'error') {
          clearTimeout(timer)
          finished = true
          yield* this.failure(event.error, wire, timedOut, pastDeadline, request.signal, model.contextWindow)
          return
        }
        const chunks = mapper.map(event)
        if (chunks.length === 0) continue
        // The consumer's time between chunks is not the server's idleness.
        clearTimeout(timer)
        for (const chunk of chunks) {
          produced ||=
            chunk.kind === 'text-delta' || chunk.kind === 'reasoning-delta' || chunk.kind === 'tool-call-start'
          yield chunk
        }
        arm()
      }
      finished = true
      throw this.error('PROTOCOL', 'pi-ai stream ended without a result')
    } finally {
      clearTimeout(timer)
      clearTimeout(deadline)
      // A consumer that stops early cancels the request.
      if (!finished) own.abort()
    }
  }

  private *failure(
    message: PiAssistantMessage,
    wire: WireRecord,
    timedOut: boolean,
    pastDeadline: boolean,
    caller: AbortSignal | undefined,
    contextWindow: number,
  ): Generator<StreamChunk> {
    const text = message.errorMessage ?? ''
    const { row } = this.options
    if (wire.tooLarge) {
      throw this.error(
        'RESPONSE_TOO_LARGE',
        `the response passed ${row.maxResponseBytes} bytes (maxResponseBytes); the rest was not read`,
      )
    }
    if (pastDeadline)
      throw this.error(
        'DEADLINE_EXCEEDED',
        `the response did not finish within ${row.requestTimeoutMs} ms (requestTimeoutMs)`,
      )
    if (timedOut)
      throw new LlmError(
        'TIMEOUT',
        `${this.provider}: no content for ${this.options.row.streamIdleTimeoutMs} ms (streamIdleTimeoutMs)`,
        { provider: this.provider },
      )
    if (caller?.aborted || message.stopReason === 'aborted')
      throw this.error('ABORTED', 'request aborted by the caller')
    // pi-ai reports a content-filter stop as an error; it is a finish reason here.
    if (/finish_reason: content_filter/.test(text)) {
      yield { kind: 'usage', usage: toTokenUsage(message.usage) }
      yield { kind: 'finish', reason: 'content-filter' }
      return
    }
    if (wire.attempts === 0 && /no api key|not configured/i.test(text)) throw this.error('MISSING_CREDENTIAL', text)
    const overflow = this.options.root.isContextOverflow(message, contextWindow)
    throw mapFailure({ route: this.provider, message: text, wire, overflow })
  }
}
