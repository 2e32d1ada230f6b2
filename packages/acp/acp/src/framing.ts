// A guard in front of the ACP SDK's newline-delimited JSON reader. The SDK (2.4.0) ends the whole
// connection when one line exceeds its size limit, and answers a request whose `jsonrpc` is not
// "2.0" with `id: null`, so the client cannot match the error to its call. The guard splits the
// byte stream into lines itself and handles both cases before the SDK sees them; every other line
// is passed through unchanged.

/** The SDK's own default line limit; lines the guard passes on are never longer. */
export const DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024

const NEWLINE = 0x0a
const VERSION_2 = /"jsonrpc"\s*:\s*"2\.0"/

export interface FrameGuardOptions {
  /** Longest accepted line in bytes (without its line ending). */
  maxMessageBytes?: number
  /** Writes one JSON-RPC frame (a complete line, newline included) to the peer. */
  reply(frame: string): void | Promise<void>
  /** One diagnostic line for the operator (stderr). */
  warn(message: string): void
}

const isId = (value: unknown): value is string | number =>
  typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))

const errorFrame = (id: string | number | null, message: string, data?: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32600, message, ...(data === undefined ? {} : { data }) } }) +
  '\n'

/**
 * A request (it has a `method` and an id) whose `jsonrpc` member is not "2.0": answered here with
 * -32600 and its own id. Anything else (valid frames, unparsable text, notifications) returns
 * undefined and goes to the SDK, which has its own answers for those.
 */
export function wrongVersionReply(line: string): string | undefined {
  if (VERSION_2.test(line)) return undefined
  let message: unknown
  try {
    message = JSON.parse(line)
  } catch {
    return undefined
  }
  if (!message || typeof message !== 'object' || Array.isArray(message)) return undefined
  const m = message as Record<string, unknown>
  if (m.jsonrpc === '2.0' || typeof m.method !== 'string' || !isId(m.id)) return undefined
  return errorFrame(m.id, `Invalid Request: "jsonrpc" must be "2.0", got ${JSON.stringify(m.jsonrpc ?? null)}`)
}

/**
 * Returns the stream the SDK should read instead of `input`. A line longer than `maxMessageBytes`
 * is dropped (its bytes are skipped up to the next newline, never buffered), reported with one
 * `warn` line, and answered with a -32600 error whose id is null (the id is inside the dropped
 * bytes); the connection stays up for the next line.
 */
export function guardFrames(input: ReadableStream<Uint8Array>, options: FrameGuardOptions): ReadableStream<Uint8Array> {
  const max = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
  const decoder = new TextDecoder()
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  let pending: Uint8Array[] = []
  let pendingBytes = 0
  let dropping = false

  const tooLarge = async () => {
    options.warn(`dropped an incoming message longer than ${max} bytes; answered with a JSON-RPC error (id null)`)
    await options.reply(errorFrame(null, `Invalid Request: message longer than ${max} bytes`, { maxMessageBytes: max }))
  }

  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const line = async (bytes: Uint8Array) => {
        const reply = wrongVersionReply(decoder.decode(bytes))
        if (reply) await options.reply(reply)
        else {
          const framed = new Uint8Array(bytes.byteLength + 1)
          framed.set(bytes)
          framed[bytes.byteLength] = NEWLINE
          controller.enqueue(framed)
        }
      }
      const take = (tail: Uint8Array): Uint8Array => {
        if (pending.length === 0) return tail
        const out = new Uint8Array(pendingBytes + tail.byteLength)
        let offset = 0
        for (const part of [...pending, tail]) {
          out.set(part, offset)
          offset += part.byteLength
        }
        pending = []
        pendingBytes = 0
        return out
      }
      reader = input.getReader()
      try {
        for (;;) {
          const { value, done } = await reader.read()
          if (done) break
          if (!value || value.byteLength === 0) continue
          let start = 0
          for (;;) {
            const nl = value.indexOf(NEWLINE, start)
            const end = nl === -1 ? value.byteLength : nl
            const piece = value.subarray(start, end)
            if (!dropping && pendingBytes + piece.byteLength > max) {
              dropping = true
              pending = []
              pendingBytes = 0
              await tooLarge()
            }
            if (nl === -1) {
              if (!dropping && piece.byteLength > 0) {
                // Copied: the source may reuse its buffer for the next chunk.
                pending.push(piece.slice())
                pendingBytes += piece.byteLength
              }
              break
            }
            start = nl + 1
            if (dropping) dropping = false
            else await line(take(piece))
          }
        }
        if (!dropping && pendingBytes > 0) await line(take(new Uint8Array(0)))
        controller.close()
      } catch (error) {
        controller.error(error)
      } finally {
        reader.releaseLock()
      }
    },
    cancel(reason) {
      return reader?.cancel(reason).catch(() => {})
    },
  })
}
