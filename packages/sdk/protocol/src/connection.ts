// Newline-delimited JSON-RPC 2.0: framing and one symmetric connection object used by the server
// and by the TypeScript client. One frame is one JSON value on one line, terminated by "\n";
// JSON.stringify never emits a raw newline, so no escaping is needed.
import { StringDecoder } from 'node:string_decoder'
import { ERROR_CODES, type ErrorCode, type JsonRpcErrorObject, type JsonRpcFailure, type JsonRpcId } from './wire.ts'

/** A JSON-RPC error with a stable string code (`data.code`). */
export class RpcError extends Error {
  override name = 'RpcError'
  readonly rpcCode: number
  constructor(
    readonly code: ErrorCode | string,
    message: string,
    readonly details: Record<string, unknown> = {},
    rpcCode?: number,
  ) {
    super(message)
    this.rpcCode = rpcCode ?? (ERROR_CODES as Record<string, number>)[code] ?? -32000
  }

  toJSON(): JsonRpcErrorObject {
    return { code: this.rpcCode, message: this.message, data: { ...this.details, code: this.code } }
  }

  static fromWire(error: JsonRpcErrorObject): RpcError {
    const data = (error.data ?? {}) as Record<string, unknown>
    const { code, ...details } = data
    const stable = typeof code === 'string' ? code : codeForNumber(error.code)
    return new RpcError(stable, String(error.message), details, error.code)
  }
}

function codeForNumber(n: number): string {
  for (const [name, value] of Object.entries(ERROR_CODES)) if (value === n) return name
  return 'INTERNAL'
}

/** The connection itself failed: the peer went away, or sent something that is not the protocol. */
export class ConnectionError extends Error {
  override name = 'ConnectionError'
  constructor(
    readonly code: 'CONNECTION_CLOSED' | 'PROTOCOL_ERROR',
    message: string,
  ) {
    super(message)
  }
}

/**
 * Splits a byte or text stream into lines (without the "\n"; a trailing "\r" is dropped). A line
 * longer than `maxLineLength` is reported once through `onOverflow` and skipped up to its newline:
 * none of its characters (the tail included) ever reaches `onLine`.
 */
export class LineDecoder {
  private rest = ''
  /** Inside an oversized line: characters are discarded until the next newline. */
  private dropping = false
  private readonly text = new StringDecoder('utf8')

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLineLength = 64 * 1024 * 1024,
    private readonly onOverflow: (length: number) => void = () => {},
  ) {}

  push(chunk: Buffer | string): void {
    const s = typeof chunk === 'string' ? chunk : this.text.write(chunk)
    let start = 0
    for (;;) {
      const nl = s.indexOf('\n', start)
      if (nl < 0) {
        if (this.dropping) return
        this.rest += start === 0 ? s : s.slice(start)
        if (this.rest.length > this.maxLineLength) this.overflow()
        return
      }
      if (this.dropping) {
        this.dropping = false
        start = nl + 1
        continue
      }
      let line = this.rest + s.slice(start, nl)
      this.rest = ''
      start = nl + 1
      if (line.length > this.maxLineLength) {
        this.onOverflow(line.length)
        continue
      }
      if (line.endsWith('\r')) line = line.slice(0, -1)
      this.onLine(line)
    }
  }

  /** The input ended; returns an unterminated last line, if any. */
  end(): string | undefined {
    const tail = this.rest + this.text.end()
    const dropped = this.dropping
    this.rest = ''
    this.dropping = false
    return tail.length && !dropped ? tail : undefined
  }

  private overflow(): void {
    const length = this.rest.length
    this.rest = ''
    this.dropping = true
    this.onOverflow(length)
  }
}

export const encodeFrame = (message: unknown): string => JSON.stringify(message) + '\n'

export interface ConnectionOptions {
  /** Writes encoded frames (one or more whole lines). */
  write(text: string): void
  /** Answers a request; throw (or reject with) an RpcError for a protocol-level failure. */
  onRequest?(method: string, params: unknown): unknown
  onNotification?(method: string, params: unknown): void
  /**
   * Server mode (default false): an invalid incoming frame is answered with a JSON-RPC error and
   * the connection continues. Strict (client) mode: it is fatal, `onFatal` is called and every
   * pending request rejects with a ConnectionError('PROTOCOL_ERROR').
   */
  strict?: boolean
  onFatal?(error: ConnectionError): void
  /** Longest accepted frame in characters (default 64 Mi). */
  maxFrameLength?: number
  /** Join the frames of one macrotask into one write, issued from setImmediate (default true). */
  coalesce?: boolean
}

interface Pending {
  method: string
  resolve(value: unknown): void
  reject(error: Error): void
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isId = (v: unknown): v is JsonRpcId => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))

export class JsonRpcConnection {
  private readonly decoder: LineDecoder
  private readonly pending = new Map<JsonRpcId, Pending>()
  private nextId = 1
  private out: string[] = []
  private scheduled = false
  private closedWith: ConnectionError | undefined

  constructor(private readonly options: ConnectionOptions) {
    this.decoder = new LineDecoder(
      (line) => this.onLine(line),
      options.maxFrameLength,
      (length) =>
        this.invalid(
          null,
          'PARSE_ERROR',
          `frame longer than ${options.maxFrameLength ?? 64 * 1024 * 1024} characters (${length}+)`,
        ),
    )
  }

  get closed(): boolean {
    return this.closedWith !== undefined
  }

  /** Feeds bytes or text read from the peer. */
  receive(chunk: Buffer | string): void {
    if (this.closedWith) return
    this.decoder.push(chunk)
  }

  /** The peer's output ended (or it died): rejects every pending request with `error`. */
  end(error: ConnectionError = new ConnectionError('CONNECTION_CLOSED', 'the connection closed')): void {
    if (this.closedWith) return
    const tail = this.decoder.end()
    if (tail !== undefined && tail.trim() !== '') this.onLine(tail)
    this.fail(error)
  }

  request<R = unknown>(method: string, params?: unknown): Promise<R> {
    if (this.closedWith) return Promise.reject(this.closedWith)
    const id = this.nextId++
    return new Promise<R>((resolve, reject) => {
      this.pending.set(id, { method, resolve: resolve as (v: unknown) => void, reject })
      this.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params })
    })
  }

  notify(method: string, params?: unknown): void {
    if (this.closedWith) return
    this.send(params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params })
  }

  /** Writes every buffered frame now. */
  flush(): void {
    this.scheduled = false
    if (this.out.length === 0) return
    const text = this.out.length === 1 ? this.out[0] : this.out.join('')
    this.out = []
    this.options.write(text)
  }

  private send(message: unknown): void {
    this.out.push(encodeFrame(message))
    if (this.options.coalesce === false) {
      this.flush()
      return
    }
    if (!this.scheduled) {
      this.scheduled = true
      // After the current macrotask: a stream chunk parsed into many events through a chain of
      // microtasks (async generators) still becomes one write.
      setImmediate(() => this.flush())
    }
  }

  private fail(error: ConnectionError): void {
    if (this.closedWith) return
    this.closedWith = error
    const pending = [...this.pending.values()]
    this.pending.clear()
    for (const p of pending) p.reject(error)
  }

  private invalid(id: JsonRpcId | null, code: ErrorCode, message: string): void {
    if (this.options.strict) {
      const error = new ConnectionError('PROTOCOL_ERROR', `protocol error from peer: ${message}`)
      this.fail(error)
      this.options.onFatal?.(error)
      return
    }
    const failure: JsonRpcFailure = { jsonrpc: '2.0', id, error: new RpcError(code, message).toJSON() }
    this.send(failure)
  }

  private onLine(line: string): void {
    if (this.closedWith) return
    if (line.trim() === '') return
    let message: unknown
    try {
      message = JSON.parse(line)
    } catch (error) {
      this.invalid(null, 'PARSE_ERROR', `frame is not JSON: ${(error as Error).message}`)
      return
    }
    if (!isObject(message)) {
      const what = Array.isArray(message) ? 'a batch (batches are not supported)' : `a ${typeof message}`
      this.invalid(null, 'INVALID_REQUEST', `frame is ${what}, not a JSON-RPC object`)
      return
    }
    const id = isId(message.id) ? message.id : null
    if (message.jsonrpc !== '2.0') {
      this.invalid(id, 'INVALID_REQUEST', 'frame lacks "jsonrpc": "2.0"')
      return
    }
    if (typeof message.method === 'string') {
      if ('id' in message && message.id !== null && !isId(message.id)) {
        this.invalid(null, 'INVALID_REQUEST', 'request id must be a string or a number')
        return
      }
      if (message.params !== undefined && typeof message.params !== 'object') {
        this.invalid(id, 'INVALID_REQUEST', 'params must be an object or an array')
        return
      }
      if (id === null) {
        this.options.onNotification?.(message.method, message.params)
        return
      }
      this.dispatch(id, message.method, message.params)
      return
    }
    if (id !== null && ('result' in message || 'error' in message)) {
      const pending = this.pending.get(id)
      if (!pending) {
        this.invalid(null, 'INVALID_REQUEST', `response for unknown request id ${JSON.stringify(id)}`)
        return
      }
      this.pending.delete(id)
      if ('error' in message) {
        const error = message.error
        if (!isObject(error) || typeof error.code !== 'number') {
          pending.reject(
            new ConnectionError('PROTOCOL_ERROR', `malformed error object in the response to ${pending.method}`),
          )
          return
        }
        pending.reject(RpcError.fromWire(error as unknown as JsonRpcErrorObject))
      } else pending.resolve(message.result)
      return
    }
    if (id === null && 'error' in message && isObject(message.error)) {
      // An error the peer could not tie to a request (it could not parse one of our frames).
      this.invalid(null, 'INVALID_REQUEST', `peer reported: ${String(message.error.message)}`)
      return
    }
    this.invalid(id, 'INVALID_REQUEST', 'frame is neither a request, a notification nor a response')
  }

  private dispatch(id: JsonRpcId, method: string, params: unknown): void {
    const reply = (body: { result: unknown } | { error: JsonRpcErrorObject }) => {
      if (!this.closedWith) this.send({ jsonrpc: '2.0', id, ...body })
    }
    const onError = (error: unknown) => {
      const rpc =
        error instanceof RpcError
          ? error
          : new RpcError('INTERNAL', `internal error in ${method}: ${(error as Error)?.message ?? String(error)}`)
      reply({ error: rpc.toJSON() })
    }
    if (!this.options.onRequest) {
      onError(new RpcError('METHOD_NOT_FOUND', `unknown method "${method}"`))
      return
    }
    try {
      const value = this.options.onRequest(method, params)
      if (value instanceof Promise) value.then((result) => reply({ result: result ?? {} }), onError)
      else reply({ result: value ?? {} })
    } catch (error) {
      onError(error)
    }
  }
}
