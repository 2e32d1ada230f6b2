// The small part of `fetch` the adapter needs, over node:http/node:https. Node's global fetch
// loads undici on first use (~10 MB of RSS and ~20 ms on a one-shot run); this keeps the request
// on the core HTTP client and hands the body over as a web ReadableStream, as fetch does.
// `bodyReader(response)` reads such a response's body straight from the node stream instead:
// converting it to a web stream loads Node's web-streams internals (~8-15 ms at the first
// response of a process), which the adapter does not need.
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { Readable } from 'node:stream'

export interface FetchInit {
  method?: string
  headers?: Record<string, string>
  /**
   * A string, bytes, or a list of byte chunks sent one after another (no copy into one buffer;
   * `content-length` is their total unless the headers name one).
   */
  body?: string | Uint8Array | readonly Uint8Array[]
  signal?: AbortSignal
}

function abortError(reason: unknown): Error {
  if (reason instanceof Error) return reason
  const error = new Error(typeof reason === 'string' ? reason : 'the request was aborted')
  error.name = 'AbortError'
  return error
}

/** The part of a web stream reader the adapter uses. */
export interface BodyReader {
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>
  cancel(): Promise<void>
  /**
   * The caller has all it wanted of a body that ended normally (an SSE stream's `[DONE]`): the
   * rest (usually only the chunked terminator) is read and dropped, so the keep-alive connection
   * goes back to the agent for the next request instead of being torn down. A body that has not
   * ended within `graceMs` is destroyed after all.
   */
  release?(graceMs?: number): void
}

/** How long a released body may take to end before its connection is destroyed. */
export const RELEASE_GRACE_MS = 2_000

const nodeBodies = new WeakMap<object, IncomingMessage>()

/**
 * A reader of the body of a response `nodeFetch` made, read from the node stream (its errors,
 * an abort among them, reject `read()`); undefined for any other response (use `body`). Do not
 * mix it with `body` on one response.
 *
 * It reads with `read()` on 'readable' rather than through the stream's async iterator: ending
 * that iterator aborts the request (Node's stream destroyer does so for an IncomingMessage), which
 * closed the keep-alive connection after every response.
 */
export function bodyReader(response: Response): BodyReader | undefined {
  const incoming = nodeBodies.get(response)
  if (!incoming) return undefined
  let ended = false
  let cancelled = false
  let failure: Error | undefined
  let wake: (() => void) | undefined
  const notify = () => {
    const resume = wake
    wake = undefined
    resume?.()
  }
  incoming.on('readable', notify)
  incoming.once('end', () => {
    ended = true
    notify()
  })
  incoming.once('error', (error) => {
    failure ??= error
    notify()
  })
  incoming.once('close', () => {
    if (!ended)
      failure ??= Object.assign(new Error('the connection closed before the response ended'), { code: 'ECONNRESET' })
    notify()
  })
  return {
    async read() {
      for (;;) {
        // As with a web reader: after cancel() a read is done, not an error.
        if (cancelled) return { done: true }
        if (failure) throw failure
        const chunk = incoming.read() as Buffer | null
        if (chunk !== null) return { done: false, value: chunk }
        if (ended) return { done: true }
        await new Promise<void>((resolve) => (wake = resolve))
      }
    },
    async cancel() {
      cancelled = true
      incoming.destroy()
      notify()
    },
    release(graceMs = RELEASE_GRACE_MS) {
      if (ended || failure || incoming.destroyed) return
      // Flowing with no 'data' listener drops the rest; at 'end' the agent takes the socket back.
      const timer = setTimeout(() => incoming.destroy(), graceMs)
      timer.unref()
      incoming.once('close', () => clearTimeout(timer))
      incoming.off('readable', notify)
      incoming.resume()
    },
  }
}

/** A `fetch` for one request: method, headers, body, abort signal. Returns a Response-shaped object. */
export function nodeFetch(input: string | URL, init: FetchInit = {}): Promise<Response> {
  let url: URL
  try {
    url = new URL(String(input))
  } catch (error) {
    return Promise.reject(new TypeError(`invalid URL ${JSON.stringify(String(input))}`, { cause: error }))
  }
  const send = url.protocol === 'https:' ? httpsRequest : url.protocol === 'http:' ? httpRequest : undefined
  if (!send) return Promise.reject(new TypeError(`unsupported protocol ${url.protocol} (http: and https: are)`))
  const { signal } = init
  if (signal?.aborted) return Promise.reject(abortError(signal.reason))
  return new Promise<Response>((resolve, reject) => {
    const { body } = init
    let headers = init.headers
    if (Array.isArray(body) && !Object.keys(headers ?? {}).some((name) => name.toLowerCase() === 'content-length')) {
      let length = 0
      for (const chunk of body as readonly Uint8Array[]) length += chunk.byteLength
      headers = { ...headers, 'content-length': String(length) }
    }
    const req = send(url, { method: init.method ?? 'GET', headers })
    let res: IncomingMessage | undefined
    const onAbort = () => {
      const error = abortError(signal?.reason)
      if (res) res.destroy(error)
      req.destroy(error)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    const release = () => signal?.removeEventListener('abort', onAbort)
    req.on('error', (error) => {
      if (!res) {
        release()
        reject(error)
      }
    })
    req.on('response', (incoming) => {
      res = incoming
      incoming.on('close', release)
      const headers = {
        get(name: string): string | null {
          const value = incoming.headers[name.toLowerCase()]
          return value === undefined ? null : Array.isArray(value) ? value.join(', ') : String(value)
        },
      }
      const status = incoming.statusCode ?? 0
      let body: ReadableStream<Uint8Array> | undefined
      const response = {
        ok: status >= 200 && status < 300,
        status,
        statusText: incoming.statusMessage ?? '',
        headers,
        get body() {
          return (body ??= Readable.toWeb(incoming) as unknown as ReadableStream<Uint8Array>)
        },
        async text() {
          const chunks: Buffer[] = []
          for await (const chunk of incoming) chunks.push(chunk as Buffer)
          return Buffer.concat(chunks).toString('utf8')
        },
      } as unknown as Response
      nodeBodies.set(response, incoming)
      resolve(response)
    })
    if (Array.isArray(body)) {
      // Written before the socket is assigned, the chunks wait in the request and leave in one
      // writev when it is.
      for (const chunk of body as readonly Uint8Array[]) req.write(chunk)
      req.end()
    } else req.end(body as string | Uint8Array | undefined)
  })
}
