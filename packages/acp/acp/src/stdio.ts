// Stdout belongs to the protocol. `claimStdout()` takes the process's real stdout for frames and
// points `process.stdout.write` (and so console.log and any stray print) at stderr, once per process.
import { Readable } from 'node:stream'
import { guardFrames } from './framing.ts'

const KEY = Symbol.for('dsh.acp.stdout')

export type FrameWriter = (chunk: Uint8Array | string) => Promise<void>

export function claimStdout(): FrameWriter {
  const g = globalThis as { [KEY]?: FrameWriter }
  const existing = g[KEY]
  if (existing) return existing
  const stdout = process.stdout
  const original = stdout.write.bind(stdout) as (
    chunk: Uint8Array | string,
    cb: (error?: Error | null) => void,
  ) => boolean
  const stderr = process.stderr
  // A client that closes its end (EPIPE) ends the connection, it does not crash the process: the
  // failed frame write rejects below, and the stream's 'error' event is handled here.
  stdout.on('error', () => {})
  stdout.write = ((chunk: Uint8Array | string, encoding?: unknown, cb?: unknown) =>
    // Redirected writes keep Node's overloads: (chunk, cb) or (chunk, encoding, cb).
    (stderr.write as (...args: unknown[]) => boolean)(chunk, encoding, cb)) as typeof stdout.write
  const write: FrameWriter = (chunk) =>
    new Promise<void>((resolve, reject) => {
      original(chunk, (error) => (error ? reject(error) : resolve()))
    })
  g[KEY] = write
  return write
}

/**
 * The protocol streams over the process's stdin and (claimed) stdout. Input lines pass through
 * `guardFrames` first: an oversized line or a request with the wrong `jsonrpc` version is answered
 * here (whole frames, written like the SDK's own) and the connection keeps serving.
 */
export function stdioStreams(options: { maxMessageBytes?: number } = {}): {
  output: WritableStream<Uint8Array>
  input: ReadableStream<Uint8Array>
} {
  const write = claimStdout()
  const output = new WritableStream<Uint8Array>({ write: (chunk) => write(chunk) })
  const raw = Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>
  const input = guardFrames(raw, {
    maxMessageBytes: options.maxMessageBytes,
    reply: (frame) => write(frame).catch(() => {}),
    warn: (message) => void process.stderr.write(`dsh-acp: ${message}\n`),
  })
  return { output, input }
}
