// `ctx.api`: the method registry, the HTTP carrier (`POST /api/<method>`) and the SSE downlinks.
// Transport-agnostic core: `call(name, params, call)` validates and dispatches; `handleHttp`
// wraps it for node:http (mounted on ctx.webServer when that service exists).
import type { IncomingMessage, ServerResponse } from 'node:http'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import {
  ApiError,
  checkParams,
  CHUNK_RUNS_PARAM,
  HOST_STREAM_PATH,
  type HostStreamEvent,
  type MethodContract,
} from '@dsh/web-protocol'
import { SseClient, type FrameLog } from './sse.ts'
import * as SessionHostPlugin from './host.ts'

export interface CallInfo {
  /** The caller's socket peer is loopback. */
  loopback: boolean
  /** Aborted when the caller goes away (HTTP request closed). */
  signal: AbortSignal
}

export type MethodHandler<P, R> = (params: P, call: CallInfo) => R | Promise<R>

/** What the carrier knows about a request (the shape ctx.webServer passes). */
export interface RequestInfo {
  url: URL
  loopback: boolean
}

/** One downlink client as a stream provider sees it (SSE today). */
export interface StreamClient {
  readonly closed: boolean
  /** Sends one event (`undefined` event name: the default); `id` only for log events. */
  send(event: string | undefined, data: unknown, id?: number): boolean
  /** Runs a run of sends as one write where the carrier can (optional). */
  batch?(fn: () => void): void
  /**
   * Writes one pre-serialised log frame of the session's FrameLog (optional; carriers that speak
   * SSE write the shared bytes as they are). False when the client is gone.
   */
  writeFrame?(frame: Uint8Array): boolean
  /** Writes the FrameLog's frames after `after` as one write (optional, with writeFrame). */
  replay?(frames: FrameLog, after: number): boolean
  /** Tells the client to refetch and closes it. */
  resync(reason: string): void
  close(): void
  /** Set by the provider: called once when the client goes away. */
  onClose?: () => void
}

/** A session stream provider: the session host registers one (see host.ts). */
export interface SessionStreams {
  /**
   * Attaches a client to a session, replaying the log after `after` (-1: from the start), then
   * live events. Throws ApiError (before writing anything) for an unknown session.
   */
  attach(sessionId: string, client: StreamClient, after: number): Promise<void>
}

export interface ApiGatewayConfig {
  maxBodyBytes: number
  clientBufferBytes: number
  heartbeatMs: number
  /** Mount the session host (the sessions.*, approvals, questions, llm and commands methods). */
  sessions: boolean
  idleMs: number
  metaFile?: string
  maxSteps?: number
  listRescanMs: number
}

declare module 'cordis' {
  interface Context {
    api: ApiGateway
  }
  interface Events {
    /** A host stream client connected or went away; `count` is how many are open now. */
    'api/host-clients'(count: number): void
  }
}

interface Entry {
  contract: MethodContract<any, any>
  handler: MethodHandler<any, any>
}

const isLoopback = (address: string | undefined) =>
  !!address && (address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.'))

export class ApiGateway extends Service {
  static Config: Schema<ApiGatewayConfig> = Schema.object({
    maxBodyBytes: Schema.natural()
      .min(1)
      .default(1024 * 1024)
      .description('Largest accepted request body (bytes).'),
    clientBufferBytes: Schema.natural()
      .min(1024)
      .default(4 * 1024 * 1024)
      .description('Bytes a stream client may fall behind before it gets resync and is closed.'),
    heartbeatMs: Schema.natural().default(15_000).description('Comment line sent on idle streams (0: none).'),
    sessions: Schema.boolean().default(true).description('Mount the session host.'),
    idleMs: Schema.natural()
      .default(10 * 60_000)
      .description('Unload a live session idle this long (ms).'),
    metaFile: Schema.string().description('Per-session metadata file. Default: $DSH_HOME/web/sessions.json.'),
    maxSteps: Schema.natural().min(1).description('Most model requests per turn; default: the agent-loop row.'),
    listRescanMs: Schema.natural()
      .default(30_000)
      .description(
        'sessions.list re-reads the stored summaries when its index is older than this (ms); live sessions are kept current by their events.',
      ),
  })

  // Mutated in place only (methods may run on a per-caller shadow of `this`).
  private readonly methods = new Map<string, Entry>()
  private readonly hostClients = new Set<SseClient>()
  private readonly streams: { provider?: SessionStreams } = {}
  readonly config: ApiGatewayConfig

  constructor(ctx: Context, config: Partial<ApiGatewayConfig> = {}) {
    super(ctx, 'api')
    this.config = {
      maxBodyBytes: 1024 * 1024,
      clientBufferBytes: 4 * 1024 * 1024,
      heartbeatMs: 15_000,
      sessions: true,
      idleMs: 10 * 60_000,
      listRescanMs: 30_000,
      ...config,
    }
    if (this.config.sessions) {
      ctx.plugin(SessionHostPlugin, {
        idleMs: this.config.idleMs,
        metaFile: this.config.metaFile,
        maxSteps: this.config.maxSteps,
        listRescanMs: this.config.listRescanMs,
      })
    }
    // The HTTP carrier on ctx.webServer, active whenever that service is there.
    ctx.plugin({
      name: 'api-gateway-http',
      inject: ['api', 'webServer'],
      apply(c: Context) {
        const server = (
          c as unknown as {
            webServer: {
              register(route: {
                path: string
                match: 'exact' | 'prefix'
                handle(req: IncomingMessage, res: ServerResponse, info: RequestInfo): unknown
              }): unknown
            }
          }
        ).webServer
        server.register({ path: '/api', match: 'prefix', handle: (req, res, info) => c.api.handleHttp(req, res, info) })
      },
    })
    ctx.effect(
      () => () => {
        for (const client of [...this.hostClients]) client.close()
        this.hostClients.clear()
      },
      'api-gateway: close host streams',
    )
  }

  /**
   * Registers a method. The gateway validates params against `contract.params` before calling
   * `handler`. An effect of the calling plugin; also returns a disposer. Duplicate names throw.
   */
  register<P, R>(contract: MethodContract<P, R>, handler: MethodHandler<P, R>): () => void {
    if (!contract || typeof contract.name !== 'string' || typeof contract.params !== 'function')
      throw new TypeError('api.register: a contract needs a name and a params schema')
    if (typeof handler !== 'function') throw new TypeError(`api.register: ${contract.name} needs a handler function`)
    const methods = this.methods
    if (methods.has(contract.name)) throw new Error(`api.register: method ${contract.name} is already registered`)
    const entry: Entry = { contract, handler }
    const dispose = this.ctx.effect(() => {
      methods.set(contract.name, entry)
      return () => {
        if (methods.get(contract.name) === entry) methods.delete(contract.name)
      }
    }, `api(${contract.name})`)
    return () => void dispose()
  }

  /** Registered method names, sorted. */
  list(): string[] {
    return [...this.methods.keys()].sort()
  }

  /** Validates and runs one call; rejects with ApiError. */
  async call(name: string, raw: unknown, call: CallInfo): Promise<unknown> {
    const entry = this.methods.get(name)
    if (!entry) throw new ApiError('UNKNOWN_METHOD', `unknown method ${JSON.stringify(name)}`)
    if (entry.contract.loopbackOnly && !call.loopback)
      throw new ApiError('FORBIDDEN', `${name} is only available to loopback callers`)
    const params = checkParams(entry.contract, raw)
    return entry.handler(params, call)
  }

  /** How many host stream clients are open (pages of `dsh web`, other subscribers). */
  get hostClientCount(): number {
    return this.hostClients.size
  }

  /** Sends an event to every host stream client. */
  publishHost(event: HostStreamEvent): void {
    for (const client of [...this.hostClients]) client.send(undefined, event)
  }

  /** The session host plugs its streams in here (one provider; an effect of the caller). */
  provideSessionStreams(provider: SessionStreams): () => void {
    const streams = this.streams
    const dispose = this.ctx.effect(() => {
      streams.provider = provider
      return () => {
        if (streams.provider === provider) streams.provider = undefined
      }
    }, 'api: session streams')
    return () => void dispose()
  }

  /** The session stream provider mounted now, if any (the page's host reads a session's replay through it). */
  sessionStreams(): SessionStreams | undefined {
    return this.streams.provider
  }

  /**
   * The HTTP carrier for everything under `/api/`: `POST /api/<method>`, `GET /api/events/host`,
   * `GET /api/events/session/<id>`. `info` defaults to what the socket says.
   */
  async handleHttp(req: IncomingMessage, res: ServerResponse, info?: RequestInfo): Promise<void> {
    const url = info?.url ?? new URL(req.url ?? '/', 'http://localhost')
    const loopback = info?.loopback ?? isLoopback(req.socket.remoteAddress)
    try {
      if (url.pathname === HOST_STREAM_PATH) return this.openHost(req, res)
      const sessionPrefix = '/api/events/session/'
      if (url.pathname.startsWith(sessionPrefix))
        return await this.openSession(req, res, url, decodeURIComponent(url.pathname.slice(sessionPrefix.length)))
      if (!url.pathname.startsWith('/api/'))
        throw new ApiError('NOT_FOUND', `no route ${url.pathname}`, { status: 404 })
      const name = url.pathname.slice('/api/'.length)
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST')
        throw new ApiError('METHOD_NOT_ALLOWED', `${name}: call methods with POST and a JSON body`, { status: 405 })
      }
      const body = await readJsonBody(req, this.config.maxBodyBytes)
      const abort = new AbortController()
      res.on('close', () => {
        if (!res.writableFinished) abort.abort(new Error('the caller went away'))
      })
      const result = await this.call(name, body, { loopback, signal: abort.signal })
      sendJson(res, 200, { result: result ?? {} })
    } catch (error) {
      const apiError =
        error instanceof ApiError ? error : new ApiError('INTERNAL', (error as Error)?.message ?? String(error))
      if (!(error instanceof ApiError)) this.ctx.logger('api').warn(error)
      if (res.headersSent) return void res.end()
      sendJson(res, apiError.status, apiError.toBody())
    }
  }

  private openHost(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'GET')
      throw new ApiError('METHOD_NOT_ALLOWED', 'event streams are read with GET', { status: 405 })
    const clients = this.hostClients
    const client = new SseClient(req, res, {
      maxBufferedBytes: this.config.clientBufferBytes,
      heartbeatMs: this.config.heartbeatMs,
      onClose: () => {
        if (clients.delete(client)) this.ctx.emit('api/host-clients', clients.size)
      },
    })
    clients.add(client)
    client.send(undefined, { type: 'hello' })
    this.ctx.emit('api/host-clients', clients.size)
  }

  private async openSession(req: IncomingMessage, res: ServerResponse, url: URL, sessionId: string): Promise<void> {
    if (req.method !== 'GET')
      throw new ApiError('METHOD_NOT_ALLOWED', 'event streams are read with GET', { status: 405 })
    const provider = this.streams.provider
    if (!provider) throw new ApiError('UNAVAILABLE', 'no session host is mounted')
    const header = req.headers['last-event-id']
    const rawAfter = url.searchParams.get('after') ?? (Array.isArray(header) ? header[0] : header)
    let after = -1
    if (rawAfter !== undefined && rawAfter !== null && rawAfter !== '') {
      if (!/^-?\d+$/.test(rawAfter.trim()) || Number(rawAfter) < -1) {
        throw new ApiError(
          'INVALID_PARAMS',
          `after: expected a session seq (an integer >= -1), got ${JSON.stringify(rawAfter)}`,
          { field: 'after' },
        )
      }
      after = Number(rawAfter)
    }
    const chunks = url.searchParams.get(CHUNK_RUNS_PARAM)
    if (chunks !== null && chunks !== 'runs')
      throw new ApiError('INVALID_PARAMS', `${CHUNK_RUNS_PARAM}: expected "runs", got ${JSON.stringify(chunks)}`, {
        field: CHUNK_RUNS_PARAM,
      })
    // Validate the session before the stream starts, so an unknown id is a JSON 404.
    await provider.attach(
      sessionId,
      new LazySse(req, res, {
        maxBufferedBytes: this.config.clientBufferBytes,
        heartbeatMs: this.config.heartbeatMs,
        chunkRuns: chunks === 'runs',
      }),
      after,
    )
  }
}

/** Defers writing the SSE head until the provider first uses the client (errors stay JSON). */
class LazySse implements StreamClient {
  private client: SseClient | undefined
  onClose?: () => void
  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly options: { maxBufferedBytes: number; heartbeatMs: number; chunkRuns: boolean },
  ) {}
  private open(): SseClient {
    this.client ??= new SseClient(this.req, this.res, { ...this.options, onClose: () => this.onClose?.() })
    return this.client
  }
  get closed(): boolean {
    return this.client?.closed ?? false
  }
  send(event: string | undefined, data: unknown, id?: number): boolean {
    return this.open().send(event, data, id)
  }
  batch(fn: () => void): void {
    this.open().batch(fn)
  }
  writeFrame(frame: Uint8Array): boolean {
    return this.open().writeFrame(frame)
  }
  replay(frames: FrameLog, after: number): boolean {
    return this.open().replay(frames, after)
  }
  resync(reason: string): void {
    this.open().resync(reason)
  }
  close(): void {
    this.client?.close()
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  })
  res.end(text)
}

/** Reads a JSON body of at most `maxBytes`; an empty body is `{}`. */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const type = String(req.headers['content-type'] ?? '')
  const declared = Number(req.headers['content-length'] ?? NaN)
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume()
    throw new ApiError('PAYLOAD_TOO_LARGE', `request body of ${declared} bytes is over the ${maxBytes}-byte limit`)
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > maxBytes) {
      req.resume()
      throw new ApiError('PAYLOAD_TOO_LARGE', `request body is over the ${maxBytes}-byte limit`)
    }
    chunks.push(chunk)
  }
  const text = Buffer.concat(chunks).toString('utf8')
  if (text.trim() === '') return {}
  if (type && !/^application\/json\b/i.test(type))
    throw new ApiError(
      'UNSUPPORTED_MEDIA_TYPE',
      `expected Content-Type: application/json, got ${JSON.stringify(type)}`,
      { status: 415 },
    )
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new ApiError('INVALID_JSON', `request body is not JSON: ${(error as Error).message}`)
  }
}
